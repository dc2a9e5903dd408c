package search

import (
	"encoding/binary"
	"fmt"
	"slices"
	"sort"
)

// Unit states in a unit record.
const (
	unitLive    = 0
	unitRemoved = 1 // the file left the store; its docs count only for --archived
	unitDead    = 2 // replaced (reset or rewritten): its docs are garbage
)

// unitRec is what the index knows of one unit under one id, as a segment
// records it. A unit that is reset gets a new id; its old id turns dead, which
// tombstones all its docs at once. Readers decode the records of the units a
// query touches; the writer keeps only a few fields of each live unit in memory
// (units.go) and reads the rest back when it needs them.
type unitRec struct {
	ID        uint32
	State     byte
	RemovedAt int64 // Unix seconds
	Dev, Ino  uint64
	Offset    int64
	Fp        string
	Source    string
	Layout    string
	Rel       string
	Path      string
	Sids      []string // document units: session ids, indexed by a doc's sess
	// Projs are the projects the catalogs file the unit's sessions under: one for a
	// line unit, one per Sids entry for a document ("" unknown). A search is scoped
	// by them without reading the catalogs.
	Projs []string
}

// project is the project of the unit's session sess.
func (u *unitRec) project(sess uint16) string {
	if int(sess) < len(u.Projs) {
		return u.Projs[sess]
	}
	if len(u.Projs) == 1 {
		return u.Projs[0]
	}
	return ""
}

func appendStr(b []byte, s string) []byte {
	b = binary.AppendUvarint(b, uint64(len(s)))
	return append(b, s...)
}

// appendUnit encodes one unit record: `id, state, removedAt (signed), dev, ino,
// offset, fp, source, layout, unit, path, n, n× session id, m, m× project`.
func appendUnit(b []byte, u *unitRec) []byte {
	b = binary.AppendUvarint(b, uint64(u.ID))
	b = append(b, u.State)
	b = binary.AppendVarint(b, u.RemovedAt)
	b = binary.AppendUvarint(b, u.Dev)
	b = binary.AppendUvarint(b, u.Ino)
	b = binary.AppendUvarint(b, uint64(u.Offset))
	for _, str := range []string{u.Fp, u.Source, u.Layout, u.Rel, u.Path} {
		b = appendStr(b, str)
	}
	b = binary.AppendUvarint(b, uint64(len(u.Sids)))
	for _, id := range u.Sids {
		b = appendStr(b, id)
	}
	b = binary.AppendUvarint(b, uint64(len(u.Projs)))
	for _, p := range u.Projs {
		b = appendStr(b, p)
	}
	return b
}

// recView is a unit record decoded in place: its strings and lists are slices
// of the record's bytes, so that a pass over many records (the writer's open)
// allocates only what it keeps.
type recView struct {
	id            uint32
	state         byte
	removedAt     int64
	dev, ino      uint64
	offset        int64
	fp, source    []byte
	layout        []byte
	rel, path     []byte
	nsids, nprojs int
	sids, projs   []byte // nsids and nprojs encoded strings
}

// decode reads the record at the start of b and returns its length (<= 0 if
// it is damaged).
func (v *recView) decode(b []byte) int {
	total := len(b)
	bad := false
	uv := func() uint64 {
		x, n := binary.Uvarint(b)
		if n <= 0 {
			bad = true
			return 0
		}
		b = b[n:]
		return x
	}
	raw := func() []byte {
		l, n := binary.Uvarint(b)
		if n <= 0 || uint64(len(b)-n) < l {
			bad = true
			return nil
		}
		s := b[n : n+int(l)]
		b = b[n+int(l):]
		return s
	}
	list := func() (int, []byte) {
		cnt := uv()
		if bad || cnt > uint64(len(b)) {
			bad = true
			return 0, nil
		}
		start := b
		for j := uint64(0); j < cnt && !bad; j++ {
			raw()
		}
		return int(cnt), start[:len(start)-len(b)]
	}
	id := uv()
	if bad || id > 1<<32-1 || len(b) == 0 {
		return -1
	}
	v.id, v.state = uint32(id), b[0]
	b = b[1:]
	ra, n := binary.Varint(b)
	if n <= 0 {
		return -1
	}
	b = b[n:]
	v.removedAt = ra
	v.dev, v.ino, v.offset = uv(), uv(), int64(uv())
	v.fp, v.source, v.layout, v.rel, v.path = raw(), raw(), raw(), raw(), raw()
	v.nsids, v.sids = list()
	v.nprojs, v.projs = list()
	if bad {
		return -1
	}
	return total - len(b)
}

// strings decodes a list of n encoded strings (validated by decode).
func decodeStrings(n int, b []byte) []string {
	if n == 0 {
		return nil
	}
	out := make([]string, 0, n)
	for range n {
		l, k := binary.Uvarint(b)
		out = append(out, string(b[k:k+int(l)]))
		b = b[k+int(l):]
	}
	return out
}

// rec is the record as a unitRec (its strings copied).
func (v *recView) rec() *unitRec {
	return &unitRec{ID: v.id, State: v.state, RemovedAt: v.removedAt, Dev: v.dev, Ino: v.ino, Offset: v.offset,
		Fp: string(v.fp), Source: string(v.source), Layout: string(v.layout), Rel: string(v.rel), Path: string(v.path),
		Sids: decodeStrings(v.nsids, v.sids), Projs: decodeStrings(v.nprojs, v.projs)}
}

// decodeUnit decodes one unit record at the start of b and returns its length
// (<= 0 if damaged).
func decodeUnit(b []byte) (*unitRec, int) {
	var v recView
	n := v.decode(b)
	if n <= 0 {
		return nil, n
	}
	return v.rec(), n
}

// readUnits decodes the segment's unit records.
func (s *segment) readUnits() ([]*unitRec, error) {
	b, err := s.read(s.ft.unitsOff, s.ft.unitsLen)
	if err != nil {
		return nil, err
	}
	out := make([]*unitRec, 0, s.ft.nunits)
	for i := uint64(0); i < s.ft.nunits; i++ {
		u, n := decodeUnit(b)
		if n <= 0 {
			return nil, errCorrupt
		}
		b = b[n:]
		out = append(out, u)
	}
	return out, nil
}

// The unit table of a segment maps each id it holds a record of, in order, to
// where the record lies. A reader has it mapped; the writer, which keeps its
// segments open for good, keeps a small table (a commit's) in memory, and of a
// large one (a merge's) only every tabStride-th id (tabKeys), reading the
// entries it needs: a lookup reads one stride, a pass in order a window at a
// time (tabCursor).

const (
	tabWhole  = 16 << 10 // bytes of the largest unit table the writer keeps in memory
	tabStride = 64       // entries per key of tabKeys
	tabWindow = 4096     // entries a cursor reads at a time
)

// tabCursor reads a segment's unit table, a window of entries at a time. A
// read error is kept in err (the entries read as zero meanwhile).
type tabCursor struct {
	s   *segment
	lo  int    // the first entry in b
	b   []byte // entries lo..
	buf []byte
	err error
}

func (s *segment) cursor() *tabCursor {
	if s.tab != nil {
		return &tabCursor{s: s, b: s.tab}
	}
	return &tabCursor{s: s}
}

// entry is the bytes of entry i (nil after a read error).
func (c *tabCursor) entry(i int) []byte {
	if i >= c.lo && (i-c.lo+1)*unitTabRec <= len(c.b) {
		return c.b[(i-c.lo)*unitTabRec:]
	}
	if c.err != nil || c.s.tab != nil || i < 0 || i >= int(c.s.ft.nunits) {
		return nil
	}
	c.load(max(i-1, 0), tabWindow)
	return c.entry(i)
}

// load reads up to n entries from entry i.
func (c *tabCursor) load(i, n int) {
	n = min(n, int(c.s.ft.nunits)-i)
	c.buf = slices.Grow(c.buf[:0], n*unitTabRec)[:n*unitTabRec]
	if _, err := c.s.f.ReadAt(c.buf, int64(c.s.ft.unitTabOff)+int64(i)*unitTabRec); err != nil {
		c.err = fmt.Errorf("read %s: %w", c.s.name, err)
		c.lo, c.b = 0, nil
		return
	}
	c.lo, c.b = i, c.buf
}

// id and off are the id and record offset of entry i of the unit table.
func (c *tabCursor) id(i int) uint32 {
	if e := c.entry(i); e != nil {
		return binary.LittleEndian.Uint32(e)
	}
	return 0
}

func (c *tabCursor) off(i int) uint64 {
	if e := c.entry(i); e != nil {
		return uint64(binary.LittleEndian.Uint32(e[4:]))
	}
	return 0
}

// span is where record i of the unit table lies in the units section.
func (c *tabCursor) span(i int) (off, end uint64, err error) {
	off, end = c.off(i), c.s.ft.unitsLen
	if i+1 < int(c.s.ft.nunits) {
		end = c.off(i + 1)
	}
	if c.err != nil {
		return 0, 0, c.err
	}
	if off >= end || end > c.s.ft.unitsLen {
		return 0, 0, errCorrupt
	}
	return off, end, nil
}

// find is the index of id in the unit table, if the segment has its record.
func (c *tabCursor) find(id uint32) (int, bool, error) {
	n := int(c.s.ft.nunits)
	lo, hi := 0, n
	if c.s.tab == nil {
		keys := c.s.tabKeys
		k := sort.Search(len(keys), func(k int) bool { return keys[k] > id }) - 1
		if k < 0 {
			return 0, false, nil
		}
		lo, hi = k*tabStride, min((k+1)*tabStride, n)
		c.load(lo, hi-lo+1) // and the next entry, where the last record ends
		if c.err != nil {
			return 0, false, c.err
		}
	}
	i := lo + sort.Search(hi-lo, func(j int) bool { return c.id(lo+j) >= id })
	return i, i < hi && c.id(i) == id, c.err
}

// unit finds the record of id in the segment through the unit table (nil if the
// segment has none).
func (s *segment) unit(id uint32) (*unitRec, error) {
	c := s.cursor()
	i, ok, err := c.find(id)
	if err != nil || !ok {
		return nil, err
	}
	off, end, err := c.span(i)
	if err != nil {
		return nil, err
	}
	b, err := s.read(s.ft.unitsOff+off, end-off)
	if err != nil {
		return nil, err
	}
	u, m := decodeUnit(b)
	if m <= 0 || u.ID != id {
		return nil, errCorrupt
	}
	return u, nil
}
