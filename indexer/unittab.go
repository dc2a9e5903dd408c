package indexer

import (
	"hash/maphash"
	"iter"
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
	t := uint8(h >> 56)
	if t < tagMin {
		t += tagMin
	}
	return h, t
}

// len is the number of units.
func (t *unitTab) len() int { return t.n }

// find is the slot of key, or -1.
func (t *unitTab) find(key string) int {
	if t.n == 0 {
		return -1
	}
	h, tag := hashKey(key)
	mask := len(t.slots) - 1
	for i := int(h) & mask; ; i = (i + 1) & mask {
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
	mask := len(t.slots) - 1
	i := int(h) & mask
	for t.tags[i] >= tagMin {
		i = (i + 1) & mask
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
	mask := len(t.slots) - 1
	if t.tags[(i+1)&mask] == tagEmpty {
		// The end of a probe chain: the slot, and deleted ones before it,
		// end it now.
		t.tags[i] = tagEmpty
		t.used--
		for j := (i - 1) & mask; t.tags[j] == tagGone; j = (j - 1) & mask {
			t.tags[j] = tagEmpty
			t.used--
		}
	} else {
		t.tags[i] = tagGone
	}
	t.n--
	return u
}

// rehash remakes the table in the fewest slots, a power of two, of which n
// units fill at most 7/8, deleted slots dropped.
func (t *unitTab) rehash(n int) {
	size := 8
	for size*7 < n*8 {
		size *= 2
	}
	old := t.slots
	oldTags := t.tags
	t.slots, t.tags, t.used = make([]*unit, size), make([]uint8, size), 0
	for i, u := range old {
		if oldTags[i] >= tagMin {
			t.insert(u)
		}
	}
}

// reserve makes room for n units in all, so as many puts do not rehash.
func (t *unitTab) reserve(n int) {
	if n*8 > len(t.slots)*7 {
		t.rehash(n)
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
