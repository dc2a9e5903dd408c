package usage

import (
	"iter"
	"math"
	"math/bits"
)

// rowTable is the summary's B rows as the writer holds them, by rowID: a hash
// table of 24-byte slots (open addressing, linear probing, deletion by
// backward shift), the key and the four counts inline as 32-bit numbers, where
// a Go map of Tokens cost ~64 bytes a row, a fifth of a ledger's memory at 100k
// units (docs/usage.md, "What a flush costs"). A row with a count outside
// [0, 2^32-1) keeps its counts in big, its slot marked.
type rowTable struct {
	slots []rowSlot
	n     int
	big   map[rowID]Tokens
}

type rowSlot struct {
	q  int32
	c1 uint32    // the rowID's c plus one; 0: an empty slot
	t  [4]uint32 // the counts; t[0] = bigRow: in big
}

const bigRow = math.MaxUint32

func (t *rowTable) len() int { return t.n }

func (t *rowTable) home(id rowID) int {
	h := (uint64(uint32(id.q))<<32 | uint64(id.c)) * 0x9e3779b97f4a7c15
	h ^= h >> 29
	hi, _ := bits.Mul64(h, uint64(len(t.slots)))
	return int(hi)
}

func (t *rowTable) after(i int) int {
	if i++; i == len(t.slots) {
		return 0
	}
	return i
}

// find is the slot of id, or of the empty slot where it would go; ok says which.
func (t *rowTable) find(id rowID) (int, bool) {
	for i := t.home(id); ; i = t.after(i) {
		s := &t.slots[i]
		if s.c1 == 0 {
			return i, false
		}
		if s.q == id.q && s.c1 == id.c+1 {
			return i, true
		}
	}
}

func (t *rowTable) tokens(s *rowSlot) Tokens {
	if s.t[0] == bigRow {
		return t.big[rowID{s.q, s.c1 - 1}]
	}
	return Tokens{int64(s.t[0]), int64(s.t[1]), int64(s.t[2]), int64(s.t[3])}
}

// get is row id's counts (zero: no such row).
func (t *rowTable) get(id rowID) Tokens {
	if t.n == 0 {
		return Tokens{}
	}
	if i, ok := t.find(id); ok {
		return t.tokens(&t.slots[i])
	}
	return Tokens{}
}

// set makes v row id's counts; zero counts remove the row.
func (t *rowTable) set(id rowID, v Tokens) {
	if v.IsZero() {
		t.del(id)
		return
	}
	if len(t.slots) == 0 {
		t.reserve(1)
	}
	i, ok := t.find(id)
	if !ok && (t.n+1)*4 > len(t.slots)*3 {
		t.rehash(2 * len(t.slots))
		i, _ = t.find(id)
	}
	if !ok {
		t.n++
	}
	s := &t.slots[i]
	if s.t[0] == bigRow {
		delete(t.big, id)
	}
	s.q, s.c1 = id.q, id.c+1
	fits := func(x int64) bool { return x >= 0 && x < bigRow }
	if fits(v.Input) && fits(v.Output) && fits(v.CacheWrite) && fits(v.CacheRead) {
		s.t = [4]uint32{uint32(v.Input), uint32(v.Output), uint32(v.CacheWrite), uint32(v.CacheRead)}
		return
	}
	if t.big == nil {
		t.big = map[rowID]Tokens{}
	}
	t.big[id] = v
	s.t = [4]uint32{bigRow}
}

// del removes row id, if there is one.
func (t *rowTable) del(id rowID) {
	if t.n == 0 {
		return
	}
	i, ok := t.find(id)
	if !ok {
		return
	}
	if t.slots[i].t[0] == bigRow {
		delete(t.big, id)
	}
	// Backward shift, as recTable.del.
	for j := t.after(i); t.slots[j].c1 != 0; j = t.after(j) {
		s := &t.slots[j]
		h := t.home(rowID{s.q, s.c1 - 1})
		if (j > i && (h <= i || h > j)) || (j < i && h <= i && h > j) {
			t.slots[i] = *s
			i = j
		}
	}
	t.slots[i] = rowSlot{}
	t.n--
}

// reserve makes room for n rows without growing again.
func (t *rowTable) reserve(n int) {
	if size := max(16, n*4/3+1); size > len(t.slots) {
		t.rehash(size)
	}
}

func (t *rowTable) rehash(size int) {
	old := t.slots
	t.slots = make([]rowSlot, size)
	for _, s := range old {
		if s.c1 != 0 {
			i, _ := t.find(rowID{s.q, s.c1 - 1})
			t.slots[i] = s
		}
	}
}

// all yields every row (in no order). The table must not change meanwhile.
func (t *rowTable) all() iter.Seq2[rowID, Tokens] {
	return func(yield func(rowID, Tokens) bool) {
		for i := range t.slots {
			s := &t.slots[i]
			if s.c1 != 0 && !yield(rowID{s.q, s.c1 - 1}, t.tokens(s)) {
				return
			}
		}
	}
}

// ids is every row's id (in no order).
func (t *rowTable) ids() []rowID {
	ids := make([]rowID, 0, t.n)
	for id := range t.all() {
		ids = append(ids, id)
	}
	return ids
}
