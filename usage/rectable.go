package usage

import (
	"hash/maphash"
	"iter"
	"math/bits"
)

// recTable is a hash table of records keyed by strings the records hold
// themselves: open addressing, linear probing, deletion by backward shift. It
// costs 9 bytes a slot (12–17 bytes a record: its size is any number of slots,
// not a power of two, so a table reserved for n records holds 4n/3 slots, not
// up to 8n/3), where a Go map keyed by the
// strings cost ~80 bytes an entry, most of a ledger's memory per unit after the
// records themselves at 100k units (docs/usage.md, "What the writer holds").
//
// Beside each slot's record, a byte of its key's hash (tags; 0: an empty
// slot): a probe compares it before it reads the record, so a key the table
// does not hold is found missing without reading a record (a cold build's
// every new unit and session), and one it holds reads about one. The record
// last put or found (last) is found again without hashing its key: the
// ledger asks for the same unit several times in a row (Reset, its lines,
// Done; a write's three looks at each key). get writes last, so two
// goroutines may get from two tables at once, never from the same one (a
// Sync's two sides, sidebyside.go: the units' side reads units, the summary's
// side members).
//
// A record's key must not change while it is in a table: the ledger takes a
// record out of its session's table before it refiles it (Ledger.file).
type recTable struct {
	slots []*unitRec
	tags  []uint8
	n     int
	key   func(r *unitRec) (string, string)
	last  *unitRec // in the table, or nil
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

// home is the slot a hash's probe starts at: the high half of hash × size
// (so the size need not be a power of two).
func (t *recTable) home(h uint64) int {
	hi, _ := bits.Mul64(h, uint64(len(t.slots)))
	return int(hi)
}

// tagOf is the tag of a hash: its low 7 bits and the high one (not empty).
func tagOf(h uint64) uint8 { return uint8(h) | 0x80 }

// after is the slot after i (the probe wraps around the end).
func (t *recTable) after(i int) int {
	if i++; i == len(t.slots) {
		return 0
	}
	return i
}

// find is the slot of the record keyed (a, b) of hash h, or of the empty slot
// where it would go; ok says which.
func (t *recTable) find(a, b string, h uint64) (int, bool) {
	tag := tagOf(h)
	for i := t.home(h); ; i = t.after(i) {
		switch t.tags[i] {
		case 0:
			return i, false
		case tag:
			if x, y := t.key(t.slots[i]); x == a && y == b {
				return i, true
			}
		}
	}
}

// isLast reports whether (a, b) is the key of the record last put or found.
func (t *recTable) isLast(a, b string) bool {
	if t.last == nil {
		return false
	}
	x, y := t.key(t.last)
	return x == a && y == b
}

// get is the record keyed (a, b), or nil.
func (t *recTable) get(a, b string) *unitRec {
	if t.n == 0 {
		return nil
	}
	if t.isLast(a, b) {
		return t.last
	}
	i, ok := t.find(a, b, hashPair(a, b))
	if !ok {
		return nil
	}
	t.last = t.slots[i]
	return t.last
}

// set puts r in slot i, of tag tag.
func (t *recTable) set(i int, r *unitRec, tag uint8) {
	t.slots[i], t.tags[i], t.last = r, tag, r
}

// put adds r, replacing the record of the same key if there is one.
func (t *recTable) put(r *unitRec) {
	t.push(r)
}

// push puts r in place of the record of the same key, returning that record
// (nil: there was none): one probe where get and put were two.
func (t *recTable) push(r *unitRec) *unitRec {
	a, b := t.key(r)
	if t.n == 0 {
		t.reserve(1)
	}
	h := hashPair(a, b)
	i, ok := t.find(a, b, h)
	if ok {
		prev := t.slots[i]
		t.set(i, r, tagOf(h))
		return prev
	}
	if (t.n+1)*4 > len(t.slots)*3 {
		// Grown only for a new record: a table reserved for n records holds
		// n however often they are replaced.
		t.grow()
		i, _ = t.find(a, b, h)
	}
	t.n++
	t.set(i, r, tagOf(h))
	return nil
}

// del removes the record keyed (a, b), if there is one.
func (t *recTable) del(a, b string) {
	if t.n == 0 {
		return
	}
	i, ok := t.find(a, b, hashPair(a, b))
	if !ok {
		return
	}
	if t.slots[i] == t.last {
		t.last = nil
	}
	// Backward shift: move up each following record of the run whose home is
	// not between the hole and it, so no probe meets an empty slot before its
	// record.
	for j := t.after(i); t.tags[j] != 0; j = t.after(j) {
		x, y := t.key(t.slots[j])
		h := t.home(hashPair(x, y))
		if (j > i && (h <= i || h > j)) || (j < i && h <= i && h > j) {
			t.slots[i], t.tags[i] = t.slots[j], t.tags[j]
			i = j
		}
	}
	t.slots[i], t.tags[i] = nil, 0
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
	t.slots, t.tags = make([]*unitRec, size), make([]uint8, size)
	t.n = 0
	for _, r := range old {
		if r != nil {
			a, b := t.key(r)
			h := hashPair(a, b)
			i, _ := t.find(a, b, h)
			t.slots[i], t.tags[i] = r, tagOf(h)
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
