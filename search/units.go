package search

import (
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"hash/maphash"
	"slices"
	"strings"
	"unsafe"

	"github.com/sessionwatch/sessionwatch/indexer"
)

// What the writer keeps in memory of its units. Resume, Line and Done need, for
// each live unit, its id, file identity, offset and fingerprint, found by
// (source, unit path): those live in a hotUnit, one fixed-size slot of an array
// (no pointers but the unit path's string, which is the indexer's own once a
// call has named the unit), found through an open-addressing table of slot
// numbers. Everything else a record holds (layout, absolute path, removal time,
// a document's session ids and projects) stays in the segments and is read back
// when the record is written again: when the unit changed (commit), ended, or a
// document's project changed. Units whose id ended (dead or removed) are kept
// as their state only, for merges to decide on their docs.

// hotUnit is what the writer keeps of one live unit.
type hotUnit struct {
	rel    string // the unit's path relative to its source's root
	ino    uint64
	offset int64
	fp     uint64 // the fingerprint's 16 hex digits (fpHex); see fpKind
	id     uint32
	proj   uint32 // project + 1 of a line unit (0: none); see flagColdProjs
	dev    uint32 // index in units.devs
	src    uint16 // index in units.srcs
	flags  uint8
}

const (
	fpEmpty       = 0 // fingerprint ""
	fpHex         = 1 // 16 lowercase hex digits, in fp
	fpOdd         = 2 // anything else, in units.oddFp
	fpMask        = 3
	flagColdProjs = 4 // a document's projects: in its record (pending or on disk), not in proj
	flagUsed      = 8 // the slot holds a unit
)

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
	hot       hotUnit
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

	srcs    []string
	devs    []uint64
	projs   []string
	projIdx map[string]uint32
	oddFp   map[uint32]string // by id: fingerprints not of 16 hex digits

	ended map[uint32]ended
}

func newUnits() *units {
	return &units{seed: maphash.MakeSeed(), projIdx: map[string]uint32{}, oddFp: map[uint32]string{}, ended: map[uint32]ended{}}
}

func (t *units) hash(src uint16, rel string) uint64 {
	return maphash.String(t.seed, rel) ^ uint64(src)*0x9e3779b97f4a7c15
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

// projIndex is project p + 1, interned.
func (t *units) projIndex(p string) uint32 {
	if i, ok := t.projIdx[p]; ok {
		return i + 1
	}
	i := uint32(len(t.projs))
	t.projs = append(t.projs, p)
	t.projIdx[p] = i
	return i + 1
}

// projsOf is a line unit's project list as its record holds it.
func (t *units) projsOf(h *hotUnit) []string {
	if h.proj == 0 {
		return nil
	}
	return t.projs[h.proj-1 : h.proj : h.proj]
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
	mask := uint64(len(t.table) - 1)
	for i := t.hash(src, rel) & mask; ; i = (i + 1) & mask {
		e := t.table[i]
		if e == 0 {
			return 0, false
		}
		h := &t.recs[e-1]
		if h.src == src && h.rel == rel {
			if unsafe.StringData(h.rel) != unsafe.StringData(rel) {
				h.rel = rel
			}
			return int(e - 1), true
		}
	}
}

// findRef is find for a unit as the indexer names it.
func (t *units) findRef(u indexer.UnitRef) (int, bool) { return t.find(u.Source, u.Unit) }

// add puts a live unit in a slot and returns the slot.
func (t *units) add(h hotUnit) int {
	h.flags |= flagUsed
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
	h := &t.recs[at]
	mask := uint64(len(t.table) - 1)
	i := t.hash(h.src, h.rel) & mask
	for t.table[i] != 0 {
		i = (i + 1) & mask
	}
	t.table[i] = uint32(at + 1)
}

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
	mask := uint64(len(t.table) - 1)
	h := &t.recs[at]
	i := t.hash(h.src, h.rel) & mask
	for t.table[i] != uint32(at+1) {
		i = (i + 1) & mask
	}
	// Backward-shift deletion: move later entries of the probe run up into
	// the hole while their home position allows it.
	for j := (i + 1) & mask; t.table[j] != 0; j = (j + 1) & mask {
		o := &t.recs[t.table[j]-1]
		home := t.hash(o.src, o.rel) & mask
		if (j-home)&mask >= (j-i)&mask {
			t.table[i] = t.table[j]
			i = j
		}
	}
	t.table[i] = 0
	delete(t.oddFp, h.id)
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
		for i := 0; i < n; {
			start := s.tabOff(i)
			j := i + 1
			for j < n && s.tabOff(j) >= start && s.tabOff(j)-start < chunk {
				j++
			}
			end := s.ft.unitsLen
			if j < n {
				end = s.tabOff(j)
			}
			if end < start || end > s.ft.unitsLen {
				return nil, fmt.Errorf("%s: %w", s.name, errCorrupt)
			}
			buf = slices.Grow(buf[:0], int(end-start))[:end-start]
			if _, err := s.f.ReadAt(buf, int64(s.ft.unitsOff+start)); err != nil {
				return nil, fmt.Errorf("read %s: %w", s.name, err)
			}
			for k := i; k < j; k++ {
				off, e, err := s.recSpan(k)
				if err != nil || off < start || e > end || k > 0 && s.tabID(k-1) >= s.tabID(k) {
					return nil, fmt.Errorf("%s: %w", s.name, errCorrupt)
				}
				rec := buf[off-start : e-start]
				if v.decode(rec) != len(rec) || v.id != s.tabID(k) || v.id >= nextUnit {
					return nil, fmt.Errorf("%s: unit %d: %w", s.name, s.tabID(k), errCorrupt)
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
	size := 16
	for 3*size < 4*(t.n+1) {
		size *= 2
	}
	t.rehash(size)
	return t, nil
}

// fold adds one record (the newest of its id) to the table.
func (t *units) fold(v *recView) {
	if v.state != unitLive {
		t.ended[v.id] = ended{state: v.state, committed: true}
		return
	}
	h := hotUnit{rel: string(v.rel), ino: v.ino, offset: v.offset, id: v.id, dev: t.devIndex(v.dev), flags: flagUsed}
	h.src = t.srcIndexBytes(v.source)
	t.setFp(&h, unsafe.String(unsafe.SliceData(v.fp), len(v.fp)))
	switch {
	case v.nsids > 0 || v.nprojs > 1:
		h.flags |= flagColdProjs
	case v.nprojs == 1:
		p := decodeRaw(v.projs)
		if i, ok := t.projIdx[string(p)]; ok {
			h.proj = i + 1
		} else {
			h.proj = t.projIndex(string(p))
		}
	}
	t.recs = append(t.recs, h)
	t.n++
}

// decodeRaw is the first string of an encoded list (validated).
func decodeRaw(b []byte) []byte {
	l, k := binary.Uvarint(b)
	return b[k : k+int(l)]
}
