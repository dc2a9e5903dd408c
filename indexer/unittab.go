package indexer

import (
	"hash/maphash"
	"iter"
	"math/bits"
	"unsafe"
)

// unitTab is the indexer's units by key (unitkey.go): an open-addressing table
// of unit pointers, probed linearly, each slot with a byte of its key's hash
// so a probe compares keys only when that byte matches. A map[string]*unit
// costs a daemon ~44 bytes per unit (the key's string header, the pointer and
// the map's spare slots); this ~10, the key being the unit's own.
type unitTab struct {
	slots []*unit
	tags  []uint8 // by slot: tagEmpty, tagGone (deleted), or a hash byte >= tagMin
	n     int     // units in the table
	used  int     // slots not empty: units and deleted ones
}

const (
	tagEmpty = 0
	tagGone  = 1
	tagMin   = 2
)

var unitSeed = maphash.MakeSeed()

// hashKey is key's hash, and its tag.
func hashKey(key string) (uint64, uint8) {
	h := maphash.String(unitSeed, key)
	t := uint8(h) // the low bits: home takes the high ones
	if t < tagMin {
		t += tagMin
	}
	return h, t
}

// home is the slot hash h probes first: h scaled to the table's size.
func (t *unitTab) home(h uint64) int {
	hi, _ := bits.Mul64(h, uint64(len(t.slots)))
	return int(hi)
}

// next is the slot after i, the first after the last.
func (t *unitTab) next(i int) int {
	if i++; i == len(t.slots) {
		return 0
	}
	return i
}

// prev is the slot before i, the last before the first.
func (t *unitTab) prev(i int) int {
	if i == 0 {
		return len(t.slots) - 1
	}
	return i - 1
}

// len is the number of units.
func (t *unitTab) len() int { return t.n }

// find is the slot of key, or -1.
func (t *unitTab) find(key string) int {
	if t.n == 0 {
		return -1
	}
	h, tag := hashKey(key)
	for i := t.home(h); ; i = t.next(i) {
		switch g := t.tags[i]; {
		case g == tagEmpty:
			return -1
		case g == tag && t.slots[i].rel == key:
			return i
		}
	}
}

// get is the unit of key, nil if none.
func (t *unitTab) get(key string) *unit {
	if i := t.find(key); i >= 0 {
		return t.slots[i]
	}
	return nil
}

// put adds u under its key, in place of the unit of that key if any.
func (t *unitTab) put(u *unit) {
	if i := t.find(u.rel); i >= 0 {
		t.slots[i] = u
		return
	}
	if (t.used+1)*8 > len(t.slots)*7 {
		// Full, of units or of deleted slots: twice the room the units
		// need (a table of deleted slots mostly keeps its size).
		t.rehash(2 * (t.n + 1))
	}
	t.insert(u)
	t.n++
}

// insert puts u, not in the table, in its first free slot.
func (t *unitTab) insert(u *unit) {
	h, tag := hashKey(u.rel)
	i := t.home(h)
	for t.tags[i] >= tagMin {
		i = t.next(i)
	}
	if t.tags[i] == tagEmpty {
		t.used++
	}
	t.tags[i], t.slots[i] = tag, u
}

// del removes the unit of key; it returns it, nil if there was none.
func (t *unitTab) del(key string) *unit {
	i := t.find(key)
	if i < 0 {
		return nil
	}
	u := t.slots[i]
	t.slots[i] = nil
	if t.tags[t.next(i)] == tagEmpty {
		// The end of a probe chain: the slot, and deleted ones before it,
		// end it now.
		t.tags[i] = tagEmpty
		t.used--
		for j := t.prev(i); t.tags[j] == tagGone; j = t.prev(j) {
			t.tags[j] = tagEmpty
			t.used--
		}
	} else {
		t.tags[i] = tagGone
	}
	t.n--
	return u
}

// rehash remakes the table in the fewest slots of which n units fill at most
// 7/8 (any number of slots: a power of two would leave 20k units in 32k
// slots), deleted slots dropped.
func (t *unitTab) rehash(n int) {
	size := max(8, (n*8+6)/7)
	old := t.slots
	oldTags := t.tags
	t.slots, t.tags, t.used = make([]*unit, size), make([]uint8, size), 0
	for i, u := range old {
		if oldTags[i] >= tagMin {
			t.insert(u)
		}
	}
}

// reserve makes room for n units in all, so as many puts do not rehash, and
// a few more (1/16): a daemon's first new files after Load.
func (t *unitTab) reserve(n int) {
	if n*8 > len(t.slots)*7 {
		t.rehash(n + n/16)
	}
}

// clear removes every unit.
func (t *unitTab) clear() { *t = unitTab{} }

// all yields every unit. A unit deleted meanwhile is not yielded after its
// deletion; one added may or may not be.
func (t *unitTab) all() iter.Seq[*unit] {
	return func(yield func(*unit) bool) {
		slots, tags := t.slots, t.tags
		for i := range slots {
			if tags[i] >= tagMin && t.live(slots, i) && !yield(slots[i]) {
				return
			}
		}
	}
}

// live reports whether slot i of slots (the table's, or the one it had before
// a rehash) still holds a unit of the table.
func (t *unitTab) live(slots []*unit, i int) bool {
	u := slots[i]
	if u == nil {
		return false
	}
	if len(t.slots) > 0 && &t.slots[0] == &slots[0] {
		return t.tags[i] >= tagMin
	}
	return t.get(u.rel) == u
}

// getBytes is get of a key in bytes.
func (t *unitTab) getBytes(key []byte) *unit {
	return t.get(unsafe.String(unsafe.SliceData(key), len(key)))
}
