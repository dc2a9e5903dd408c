package usage

import (
	"hash/maphash"
	"math/bits"
	"strings"
)

// The ledger's shared strings and filings are kept in sets of open addressing
// (linear probing, no deletion), 16 and 8 bytes a slot, where Go maps of the
// same cost ~100 and ~150 bytes an entry: a large store has thousands of
// projects, each a string and a filing or two (docs/usage.md, "What a flush
// costs").

// strSet is a set of strings: the ledger's interned sources, types, projects,
// path roots, models and layouts.
type strSet struct {
	slots []string
	n     int
}

// intern is the set's string equal to s (a copy of s, once added).
func (t *strSet) intern(s string) string {
	if s == "" {
		return s
	}
	if (t.n+1)*4 > len(t.slots)*3 {
		old := t.slots
		t.slots = make([]string, max(16, 2*len(old)))
		for _, x := range old {
			if x != "" {
				t.slots[t.find(x)] = x
			}
		}
	}
	i := t.find(s)
	if t.slots[i] == "" {
		// Its own copy: s may be a part of a longer string (a path's root).
		t.slots[i] = strings.Clone(s)
		t.n++
	}
	return t.slots[i]
}

// find is the slot of s, or the empty one where it would go.
func (t *strSet) find(s string) int {
	hi, _ := bits.Mul64(maphash.String(tableSeed, s), uint64(len(t.slots)))
	for i := int(hi); ; {
		if x := t.slots[i]; x == "" || x == s {
			return i
		}
		if i++; i == len(t.slots) {
			i = 0
		}
	}
}

// filingSet is a set of filings, found by value.
type filingSet struct {
	slots []*filing
	n     int
}

// canon is the set's filing equal to *f, f itself once added (new reports which).
func (t *filingSet) canon(f *filing) (_ *filing, new bool) {
	if (t.n+1)*4 > len(t.slots)*3 {
		old := t.slots
		t.slots = make([]*filing, max(16, 2*len(old)))
		for _, x := range old {
			if x != nil {
				t.slots[t.find(*x)] = x
			}
		}
	}
	i := t.find(*f)
	if t.slots[i] == nil {
		t.slots[i] = f
		t.n++
		return f, true
	}
	return t.slots[i], false
}

// get is the set's filing equal to f, or nil.
func (t *filingSet) get(f filing) *filing {
	if t.n == 0 {
		return nil
	}
	return t.slots[t.find(f)]
}

func (t *filingSet) find(f filing) int {
	hi, _ := bits.Mul64(maphash.Comparable(tableSeed, f), uint64(len(t.slots)))
	for i := int(hi); ; {
		if x := t.slots[i]; x == nil || *x == f {
			return i
		}
		if i++; i == len(t.slots) {
			i = 0
		}
	}
}

// colSet numbers the columns of the B rows (Ledger.cols): a set of their
// numbers plus one (0: an empty slot), 4 bytes a slot.
type colSet struct {
	slots []uint32
	n     int
}

// find is the slot of c (in cols), or the empty one where it would go.
func (t *colSet) find(cols []rowCols, c rowCols) int {
	hi, _ := bits.Mul64(maphash.Comparable(tableSeed, c), uint64(len(t.slots)))
	for i := int(hi); ; {
		if x := t.slots[i]; x == 0 || cols[x-1] == c {
			return i
		}
		if i++; i == len(t.slots) {
			i = 0
		}
	}
}

// get is c's number in cols, if it has one.
func (t *colSet) get(cols []rowCols, c rowCols) (uint32, bool) {
	if t.n == 0 {
		return 0, false
	}
	x := t.slots[t.find(cols, c)]
	return x - 1, x != 0
}

// add numbers cols' last entry, not in the set.
func (t *colSet) add(cols []rowCols) {
	if (t.n+1)*4 > len(t.slots)*3 {
		t.slots = make([]uint32, max(16, 2*len(t.slots)))
		for i, c := range cols[:len(cols)-1] {
			t.slots[t.find(cols, c)] = uint32(i + 1)
		}
	}
	t.slots[t.find(cols, cols[len(cols)-1])] = uint32(len(cols))
	t.n++
}
