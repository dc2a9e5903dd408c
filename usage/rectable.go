package usage

import (
	"hash/maphash"
	"iter"
	"math/bits"
)

// recTable is a hash table of records keyed by strings the records hold
// themselves: open addressing, linear probing, deletion by backward shift. It
// costs 8 bytes a slot (10–14 bytes a record: its size is any number of slots,
// not a power of two, so a table reserved for n records holds 4n/3 slots, not
// up to 8n/3), where a Go map keyed by the
// strings cost ~80 bytes an entry, most of a ledger's memory per unit after the
// records themselves at 100k units (docs/usage.md, "What the writer holds").
//
// A record's key must not change while it is in a table: the ledger takes a
// record out of its session's table before it refiles it (Ledger.file).
type recTable struct {
	slots []*unitRec
	n     int
	key   func(r *unitRec) (string, string)
}

var tableSeed = maphash.MakeSeed()

func hashPair(a, b string) uint64 {
	return maphash.String(tableSeed, b) ^ maphash.String(tableSeed, a)*0x9e3779b97f4a7c15
}

// unitKey is a record's key in the ledger's units: (source, unit).
func unitKey(r *unitRec) (string, string) { return r.source(), r.Unit }

// sessionKey is a record's key in the ledger's sessions: the session id it is
// filed under (groupKey.sid).
func sessionKey(r *unitRec) (string, string) { return "", r.sid() }

func newUnitTable() recTable    { return recTable{key: unitKey} }
func newSessionTable() recTable { return recTable{key: sessionKey} }

func (t *recTable) len() int { return t.n }

// home is the slot a key's probe starts at: its hash scaled to the table's size
// (the high half of hash × size), so the size need not be a power of two.
func (t *recTable) home(a, b string) int {
	hi, _ := bits.Mul64(hashPair(a, b), uint64(len(t.slots)))
	return int(hi)
}

// after is the slot after i (the probe wraps around the end).
func (t *recTable) after(i int) int {
	if i++; i == len(t.slots) {
		return 0
	}
	return i
}

// find is the slot of the record keyed (a, b), or of the empty slot where it
// would go; ok says which.
func (t *recTable) find(a, b string) (int, bool) {
	for i := t.home(a, b); ; i = t.after(i) {
		r := t.slots[i]
		if r == nil {
			return i, false
		}
		if x, y := t.key(r); x == a && y == b {
			return i, true
		}
	}
}

// get is the record keyed (a, b), or nil.
func (t *recTable) get(a, b string) *unitRec {
	if t.n == 0 {
		return nil
	}
	i, ok := t.find(a, b)
	if !ok {
		return nil
	}
	return t.slots[i]
}

// put adds r, replacing the record of the same key if there is one.
func (t *recTable) put(r *unitRec) {
	a, b := t.key(r)
	if t.n == 0 {
		t.reserve(1)
	}
	i, ok := t.find(a, b)
	if !ok && (t.n+1)*4 > len(t.slots)*3 {
		// Grown only for a new record: a table reserved for n records holds
		// n however often they are replaced.
		t.grow()
		i, _ = t.find(a, b)
	}
	if !ok {
		t.n++
	}
	t.slots[i] = r
}

// push puts r in place of the record of the same key, returning that record
// (nil: there was none): one probe where get and put were two.
func (t *recTable) push(r *unitRec) *unitRec {
	a, b := t.key(r)
	if t.n == 0 {
		t.reserve(1)
	}
	i, ok := t.find(a, b)
	if ok {
		prev := t.slots[i]
		t.slots[i] = r
		return prev
	}
	if (t.n+1)*4 > len(t.slots)*3 {
		t.grow()
		i, _ = t.find(a, b)
	}
	t.n++
	t.slots[i] = r
	return nil
}

// del removes the record keyed (a, b), if there is one.
func (t *recTable) del(a, b string) {
	if t.n == 0 {
		return
	}
	i, ok := t.find(a, b)
	if !ok {
		return
	}
	// Backward shift: move up each following record of the run whose home is
	// not between the hole and it, so no probe meets an empty slot before its
	// record.
	for j := t.after(i); t.slots[j] != nil; j = t.after(j) {
		x, y := t.key(t.slots[j])
		h := t.home(x, y)
		if (j > i && (h <= i || h > j)) || (j < i && h <= i && h > j) {
			t.slots[i] = t.slots[j]
			i = j
		}
	}
	t.slots[i] = nil
	t.n--
}

func (t *recTable) grow() { t.rehash(max(16, 2*len(t.slots))) }

// reserve makes room for n records without growing again: n*4/3 slots (a
// table at most three quarters full), not the next power of two.
func (t *recTable) reserve(n int) {
	if size := max(16, n*4/3+1); size > len(t.slots) {
		t.rehash(size)
	}
}

func (t *recTable) rehash(size int) {
	old := t.slots
	t.slots = make([]*unitRec, size)
	t.n = 0
	for _, r := range old {
		if r != nil {
			a, b := t.key(r)
			i, _ := t.find(a, b)
			t.slots[i] = r
			t.n++
		}
	}
}

// all yields every record (in no order). The table must not change meanwhile.
func (t *recTable) all() iter.Seq[*unitRec] {
	return func(yield func(*unitRec) bool) {
		for _, r := range t.slots {
			if r != nil && !yield(r) {
				return
			}
		}
	}
}
