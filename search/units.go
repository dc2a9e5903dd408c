package search

import (
	"encoding/hex"
	"fmt"
	"hash/maphash"
	"math"
	"math/bits"
	"slices"
	"strings"
	"unsafe"

	"github.com/sessionwatch/sessionwatch/indexer"
)

// What the writer keeps in memory of its units. Resume, Line and Done need, for
// each live unit, its id, file identity, offset and fingerprint, found by
// (source, unit path): those live in a hotUnit, one 32-byte slot of an array,
// found through an open-addressing table of slot numbers. A unit's path is not
// copied: the slot points at the bytes of the string the indexer named the unit
// with (kept for the unit's life), or, until the indexer has named it, at a
// copy that Load packed with others into shared blocks. What does not fit a
// slot (an offset or inode past 32 bits, a 16th device or source) is kept in a
// map by id. Everything else a record holds (layout, absolute path, removal
// time, the units' projects, a document's session ids) stays in the segments
// and is read back when the record is written again: when the unit changed
// (commit), ended, or its project changed. Units whose id ended (dead or
// removed) are kept as their state only, for merges to decide on their docs.

// hotUnit is what the writer keeps of one live unit.
type hotUnit struct {
	rel   unsafe.Pointer // the first of the rlen bytes of the unit's path relative to its source's root
	fp    uint64         // the fingerprint's 16 hex digits (fpHex); see fpKind
	off   uint32         // the offset, unless flagWide
	ino   uint32         // the inode number, unless flagWide
	id    uint32
	rlen  uint16
	where uint8 // source index << 4 | device index, unless flagWide
	flags uint8
}

const (
	fpEmpty  = 0 // fingerprint ""
	fpHex    = 1 // 16 lowercase hex digits, in fp
	fpOdd    = 2 // anything else, in units.oddFp
	fpMask   = 3
	flagWide = 4 // the unit's path and position are in units.wide, not in the slot
	flagUsed = 8 // the slot holds a unit
	narrow   = 15
)

// unitPos is a live unit's source, path and position, unpacked.
type unitPos struct {
	rel string
	off int64
	ino uint64
	dev uint32 // index in units.devs
	src uint16 // index in units.srcs
}

// ended is the state of an id whose unit ended, and whether a commit has
// written it (merges drop docs only for committed states: after a crash the
// index must be the last manifest's).
type ended struct {
	state     uint8
	committed bool
}

// endedHot is a unit ended since the last commit: its last live fields, for the
// record the commit writes.
type endedHot struct {
	pos       unitPos
	fp        string
	removedAt int64
}

// units is the writer's unit table.
type units struct {
	recs  []hotUnit
	free  []uint32 // unused slots of recs
	table []uint32 // open addressing, linear probing: slot + 1, 0 empty
	n     int      // live units
	seed  maphash.Seed

	srcs  []string
	devs  []uint64
	wide  map[uint32]unitPos // by id: units that do not fit a slot (flagWide)
	oddFp map[uint32]string  // by id: fingerprints not of 16 hex digits
	arena []byte             // the block Load copies paths into (relBlock)

	ended map[uint32]ended
}

// relBlock is the size of the blocks Load copies the units' paths into: a block
// is garbage, whole, once the indexer has named each of its units (Resume
// does, for every unit, on the daemon's first pass).
const relBlock = 16 << 10

func newUnits() *units {
	return &units{seed: maphash.MakeSeed(), wide: map[uint32]unitPos{}, oddFp: map[uint32]string{}, ended: map[uint32]ended{}}
}

func (t *units) hash(src uint16, rel string) uint64 {
	return maphash.String(t.seed, rel) ^ uint64(src)*0x9e3779b97f4a7c15
}

// home is the table position a key's probe run starts at.
func (t *units) home(src uint16, rel string) int {
	hi, _ := bits.Mul64(t.hash(src, rel), uint64(len(t.table)))
	return int(hi)
}

// key is the source index and path of the unit in h.
func (t *units) key(h *hotUnit) (uint16, string) {
	if h.flags&flagWide != 0 {
		p := t.wide[h.id]
		return p.src, p.rel
	}
	return uint16(h.where >> 4), unsafe.String((*byte)(h.rel), h.rlen)
}

// pos is the unit in h unpacked.
func (t *units) pos(h *hotUnit) unitPos {
	if h.flags&flagWide != 0 {
		return t.wide[h.id]
	}
	return unitPos{rel: unsafe.String((*byte)(h.rel), h.rlen), off: int64(h.off), ino: uint64(h.ino), dev: uint32(h.where & narrow), src: uint16(h.where >> 4)}
}

// setPos stores p in h (of id): in the slot if it fits, else in wide.
func (t *units) setPos(h *hotUnit, p unitPos) {
	if p.off >= 0 && p.off <= math.MaxUint32 && p.ino <= math.MaxUint32 && p.dev < narrow && p.src < narrow && len(p.rel) <= math.MaxUint16 {
		if h.flags&flagWide != 0 {
			delete(t.wide, h.id)
			h.flags &^= flagWide
		}
		h.rel, h.rlen = nil, uint16(len(p.rel))
		if len(p.rel) > 0 {
			h.rel = unsafe.Pointer(unsafe.StringData(p.rel))
		}
		h.off, h.ino, h.where = uint32(p.off), uint32(p.ino), uint8(p.src)<<4|uint8(p.dev)
		return
	}
	t.wide[h.id] = p
	h.flags |= flagWide
	h.rel, h.rlen, h.off, h.ino, h.where = nil, 0, 0, 0, 0
}

// setPlace changes the file identity and offset of the unit in h.
func (t *units) setPlace(h *hotUnit, off int64, dev uint32, ino uint64) {
	p := t.pos(h)
	p.off, p.dev, p.ino = off, dev, ino
	t.setPos(h, p)
}

// srcIndex is the index of source name s, added if new.
func (t *units) srcIndex(s string) uint16 {
	if i, ok := t.srcLookup(s); ok {
		return i
	}
	t.srcs = append(t.srcs, s)
	return uint16(len(t.srcs) - 1)
}

func (t *units) srcIndexBytes(b []byte) uint16 {
	for i, x := range t.srcs {
		if x == string(b) {
			return uint16(i)
		}
	}
	return t.srcIndex(string(b))
}

// srcLookup is the index of source name s, if known.
func (t *units) srcLookup(s string) (uint16, bool) {
	for i, x := range t.srcs {
		if x == s {
			return uint16(i), true
		}
	}
	return 0, false
}

func (t *units) devIndex(d uint64) uint32 {
	for i, x := range t.devs {
		if x == d {
			return uint32(i)
		}
	}
	t.devs = append(t.devs, d)
	return uint32(len(t.devs) - 1)
}

// clonePath is a copy of a path Load read, packed into the current block.
func (t *units) clonePath(b []byte) string {
	if len(b) == 0 || len(b) > relBlock/16 {
		return string(b)
	}
	if cap(t.arena)-len(t.arena) < len(b) {
		t.arena = make([]byte, 0, relBlock)
	}
	n := len(t.arena)
	t.arena = append(t.arena, b...)
	return unsafe.String(&t.arena[n], len(b))
}

// setFp stores fingerprint fp in h (of id).
func (t *units) setFp(h *hotUnit, fp string) {
	delete(t.oddFp, h.id)
	h.flags &^= fpMask
	h.fp = 0
	switch {
	case fp == "":
	case isHex16(fp):
		var b [8]byte
		hex.Decode(b[:], unsafe.Slice(unsafe.StringData(fp), 16))
		for _, c := range b {
			h.fp = h.fp<<8 | uint64(c)
		}
		h.flags |= fpHex
	default:
		t.oddFp[h.id] = strings.Clone(fp)
		h.flags |= fpOdd
	}
}

// fpOf is h's fingerprint.
func (t *units) fpOf(h *hotUnit) string {
	switch h.flags & fpMask {
	case fpHex:
		var b [8]byte
		for i := range b {
			b[i] = byte(h.fp >> (56 - 8*i))
		}
		return hex.EncodeToString(b[:])
	case fpOdd:
		return t.oddFp[h.id]
	}
	return ""
}

// sameFp reports whether h's fingerprint is fp, without making a string.
func (t *units) sameFp(h *hotUnit, fp string) bool {
	switch h.flags & fpMask {
	case fpEmpty:
		return fp == ""
	case fpHex:
		if !isHex16(fp) {
			return false
		}
		var b [8]byte
		hex.Decode(b[:], unsafe.Slice(unsafe.StringData(fp), 16))
		var v uint64
		for _, c := range b {
			v = v<<8 | uint64(c)
		}
		return v == h.fp
	}
	return t.oddFp[h.id] == fp
}

func isHex16(s string) bool {
	if len(s) != 16 {
		return false
	}
	for i := range len(s) {
		if c := s[i]; (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}

// find returns the slot of the live unit (source, rel), if any. A found unit
// takes the caller's string for its path (the indexer's, kept for the unit's
// life), so that the bytes are not held twice.
func (t *units) find(source, rel string) (int, bool) {
	src, ok := t.srcLookup(source)
	if !ok || len(t.table) == 0 {
		return 0, false
	}
	for i := t.home(src, rel); ; {
		e := t.table[i]
		if e == 0 {
			return 0, false
		}
		h := &t.recs[e-1]
		if hs, hr := t.key(h); hs == src && hr == rel {
			if h.flags&flagWide == 0 && len(rel) > 0 && h.rel != unsafe.Pointer(unsafe.StringData(rel)) {
				h.rel = unsafe.Pointer(unsafe.StringData(rel))
			}
			return int(e - 1), true
		}
		if i++; i == len(t.table) {
			i = 0
		}
	}
}

// findRef is find for a unit as the indexer names it.
func (t *units) findRef(u indexer.UnitRef) (int, bool) { return t.find(u.Source, u.Unit) }

// add puts a live unit (id, at p) in a slot and returns the slot.
func (t *units) add(id uint32, p unitPos) int {
	h := hotUnit{id: id, flags: flagUsed}
	t.setPos(&h, p)
	var at int
	if n := len(t.free); n > 0 {
		at = int(t.free[n-1])
		t.free = t.free[:n-1]
		t.recs[at] = h
	} else {
		at = len(t.recs)
		t.recs = append(t.recs, h)
	}
	t.n++
	if 4*(t.n+1) > 3*len(t.table) {
		t.rehash(max(16, 2*len(t.table)))
	} else {
		t.place(at)
	}
	return at
}

// place enters slot at into the table.
func (t *units) place(at int) {
	i := t.home(t.key(&t.recs[at]))
	for t.table[i] != 0 {
		if i++; i == len(t.table) {
			i = 0
		}
	}
	t.table[i] = uint32(at + 1)
}

// rehash rebuilds the table with size positions.
func (t *units) rehash(size int) {
	t.table = make([]uint32, size)
	for at := range t.recs {
		if t.recs[at].flags&flagUsed != 0 {
			t.place(at)
		}
	}
}

// remove takes the unit in slot at out of the table and frees the slot.
func (t *units) remove(at int) {
	size := len(t.table)
	next := func(i int) int {
		if i++; i == size {
			return 0
		}
		return i
	}
	dist := func(from, to int) int { return (to - from + size) % size }
	h := &t.recs[at]
	i := t.home(t.key(h))
	for t.table[i] != uint32(at+1) {
		i = next(i)
	}
	// Backward-shift deletion: move later entries of the probe run up into
	// the hole while their home position allows it.
	for j := next(i); t.table[j] != 0; j = next(j) {
		home := t.home(t.key(&t.recs[t.table[j]-1]))
		if dist(home, j) >= dist(i, j) {
			t.table[i] = t.table[j]
			i = j
		}
	}
	t.table[i] = 0
	delete(t.oddFp, h.id)
	delete(t.wide, h.id)
	*h = hotUnit{}
	t.free = append(t.free, uint32(at))
	t.n--
}

// loadUnits folds the unit records of the segments (a later segment's record of
// an id wins) into a unit table, reading each segment's records in chunks.
func loadUnits(nextUnit uint32, segs []*segment) (*units, error) {
	t := newUnits()
	total := 0
	for _, s := range segs {
		total += int(s.ft.nunits)
	}
	t.recs = make([]hotUnit, 0, min(total, int(nextUnit)))
	seen := make([]uint64, (uint64(nextUnit)+63)/64)
	const chunk = 1 << 20
	var buf []byte
	var v recView
	for si := len(segs) - 1; si >= 0; si-- {
		s := segs[si]
		n := int(s.ft.nunits)
		c := s.cursor()
		for i := 0; i < n; {
			start := c.off(i)
			j := i + 1
			for j < n && c.off(j) >= start && c.off(j)-start < chunk {
				j++
			}
			end := s.ft.unitsLen
			if j < n {
				end = c.off(j)
			}
			if c.err != nil {
				return nil, c.err
			}
			if end < start || end > s.ft.unitsLen {
				return nil, fmt.Errorf("%s: %w", s.name, errCorrupt)
			}
			buf = slices.Grow(buf[:0], int(end-start))[:end-start]
			if _, err := s.f.ReadAt(buf, int64(s.ft.unitsOff+start)); err != nil {
				return nil, fmt.Errorf("read %s: %w", s.name, err)
			}
			for k := i; k < j; k++ {
				off, e, err := c.span(k)
				if err == nil && (off < start || e > end || k > 0 && c.id(k-1) >= c.id(k)) {
					err = fmt.Errorf("%s: %w", s.name, errCorrupt)
				}
				if err == nil {
					err = c.err
				}
				if err != nil {
					return nil, err
				}
				rec := buf[off-start : e-start]
				if id := c.id(k); v.decode(rec) != len(rec) || v.id != id || v.id >= nextUnit {
					return nil, fmt.Errorf("%s: unit %d: %w", s.name, id, errCorrupt)
				}
				if seen[v.id/64]&(1<<(v.id%64)) != 0 {
					continue // a newer segment's record holds
				}
				seen[v.id/64] |= 1 << (v.id % 64)
				t.fold(&v)
			}
			i = j
		}
	}
	if cap(t.recs) > len(t.recs)+len(t.recs)/8+64 {
		t.recs = append([]hotUnit(nil), t.recs...)
	}
	// Room for a tenth more units before the table grows.
	t.rehash(max(16, (t.n+1)*3/2))
	t.arena = nil // its last block stays with the paths cut from it
	return t, nil
}

// fold adds one record (the newest of its id) to the table.
func (t *units) fold(v *recView) {
	if v.state != unitLive {
		t.ended[v.id] = ended{state: v.state, committed: true}
		return
	}
	h := hotUnit{id: v.id, flags: flagUsed}
	t.setPos(&h, unitPos{rel: t.clonePath(v.rel), off: v.offset, ino: v.ino, dev: t.devIndex(v.dev), src: t.srcIndexBytes(v.source)})
	t.setFp(&h, unsafe.String(unsafe.SliceData(v.fp), len(v.fp)))
	t.recs = append(t.recs, h)
	t.n++
}
