package usage

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"hash/crc32"
	"hash/maphash"
	"io"
	"math"
	"math/bits"
	"os"
	"strings"
)

// An idle unit is not held in memory at all: its record stays in units.idx,
// the index of the units file's base, and is read from there when the unit is
// needed. The ledger keeps two tables of the index's records, 8 bytes a slot:
// the first record of each key by the hash of (source, unit), and every
// record by the hash of the session id it is filed under. A unit is made
// resident (warm) when it is handed lines, reset, refiled or retired: its
// records are read from the index into the ledger's tables, and its key leaves
// the index's table. Resume reads the record without making it resident; the
// S rows of a session add up its resident units and its units still in the
// index. After a compaction of the units file (which writes a new index),
// every record whose read is not in progress goes back to the index
// (docs/usage.md, "What a flush costs").

// coldBlock is the size of a block of the index read at once by a walk of its
// records in order (an open's, a compaction's); coldBlocks are kept while it
// walks, none after (dropBlocks). One record alone (Resume's, a unit made
// resident) is read coldPeek bytes at a time: most are shorter.
const (
	coldBlock  = 64 << 10
	coldBlocks = 4
	coldPeek   = 512
)

// coldSlot is an index record's place in the file (0: an empty slot,
// coldGone: a key made resident) and 32 bits of its key's hash.
type coldSlot struct{ off, h uint32 }

const coldGone = math.MaxUint32

// coldTable is a hash table of index records: open addressing, linear probing,
// several records to a hash. Nothing is added once it is built; a key made
// resident leaves a tombstone (coldGone).
type coldTable struct{ slots []coldSlot }

func (t *coldTable) reserve(n int) { t.slots = make([]coldSlot, max(16, n*4/3+1)) }

func (t *coldTable) home(h uint64) int {
	hi, _ := bits.Mul64(h, uint64(len(t.slots)))
	return int(hi)
}

func (t *coldTable) add(h uint64, off uint32) {
	i := t.home(h)
	for t.slots[i].off != 0 {
		if i++; i == len(t.slots) {
			i = 0
		}
	}
	t.slots[i] = coldSlot{off, uint32(h)}
}

// each calls fn with each slot of hash h until fn returns false.
func (t *coldTable) each(h uint64, fn func(s *coldSlot) bool) {
	if len(t.slots) == 0 {
		return
	}
	for i := t.home(h); t.slots[i].off != 0; {
		if s := &t.slots[i]; s.off != coldGone && s.h == uint32(h) && !fn(s) {
			return
		}
		if i++; i == len(t.slots) {
			i = 0
		}
	}
}

// hashKey is hashPair(src, unit) of a unit's bytes.
func hashKey(src string, unit []byte) uint64 {
	return maphash.Bytes(tableSeed, unit) ^ maphash.String(tableSeed, src)*0x9e3779b97f4a7c15
}

// coldSet is what the ledger holds of the index's records.
type coldSet struct {
	f      *os.File
	end    int64 // where the records end (the checksum's offset)
	start  int64 // where they begin
	base   int64 // the units file's base it indexes
	crc    uint32
	strs   []string
	keys   coldTable // the first record of each key
	sess   coldTable // every record, by its session id
	blocks [coldBlocks]struct {
		at   int64
		data []byte
	}
	next int
	peek []byte // the last record read alone
}

// coldRec is an index record as read: its byte fields point into a block,
// valid until the next read.
type coldRec struct {
	src           string
	unit          []byte
	idx           int64
	sessKind      byte // 0 none, 1 a part of unit, 2 sess
	sessAt, sessN int
	sess          []byte
	typ, proj     string
	root          string // "" when whole
	path          []byte // the whole path, when whole
	whole         bool
	dev, ino      uint64
	off           int64
	fpKind        byte // 0 none, 1 fp, 2 fpb
	fp            uint64
	fpb           []byte
	line          span
}

// readColdRec reads one record (the format in unitindex.go), checking what
// decodeIndex checks of it.
func readColdRec(x *indexReader, strs []string, base int64) (c coldRec) {
	str := func() string {
		n := x.uvarint()
		if n >= uint64(len(strs)) {
			x.fail("no such string")
			return ""
		}
		return strs[n]
	}
	c.src = str()
	c.unit = x.bytes()
	if c.idx = x.varint(); c.idx < -1 || c.idx > math.MaxInt32 {
		x.fail("bad place")
	}
	switch c.sessKind = x.byte(); c.sessKind {
	case 0:
	case 1:
		so, sn := x.uvarint(), x.uvarint()
		if sn == 0 || so > uint64(len(c.unit)) || sn > uint64(len(c.unit))-so {
			x.fail("session beyond its unit")
		} else {
			c.sessAt, c.sessN = int(so), int(sn)
		}
	case 2:
		if c.sess = x.bytes(); len(c.sess) == 0 && x.err == nil {
			x.fail("empty session")
		}
	default:
		x.fail("bad session")
	}
	c.typ, c.proj = str(), str()
	switch x.byte() {
	case 0:
		c.root = str()
	case 1:
		c.path, c.whole = x.bytes(), true
	default:
		x.fail("bad path")
	}
	c.dev, c.ino, c.off = x.uvarint(), x.uvarint(), x.varint()
	switch c.fpKind = x.byte(); c.fpKind {
	case 0:
	case 1:
		if x.err == nil && len(x.data)-x.pos < 8 {
			x.fail("truncated fingerprint")
		}
		if x.err == nil {
			c.fp = binary.LittleEndian.Uint64(x.data[x.pos:])
			x.pos += 8
		}
	case 2:
		if c.fpb = x.bytes(); len(c.fpb) == 0 && x.err == nil {
			x.fail("empty fingerprint")
		}
	default:
		x.fail("bad fingerprint")
	}
	so, sn := x.uvarint(), x.uvarint()
	if sn == 0 || so > uint64(base) || sn > uint64(base)-so {
		x.fail("line beyond the base")
	}
	c.line = span{int64(so), int64(sn)}
	return c
}

// sid is the session id the record is filed under (groupKey.sid).
func (c *coldRec) sid() []byte {
	switch c.sessKind {
	case 1:
		return c.unit[c.sessAt : c.sessAt+c.sessN]
	case 2:
		return c.sess
	}
	return c.unit
}

// fpString is the record's fingerprint as Done was given it.
func (c *coldRec) fpString() string {
	var r unitRec
	switch c.fpKind {
	case 1:
		r.fp, r.fpHex = c.fp, true
	case 2:
		return string(c.fpb)
	}
	return r.Fp()
}

// rec is the record as the ledger holds it, its unit's name unit.
func (c *coldRec) rec(unit string) *unitRec {
	r := &unitRec{Unit: unit, Ino: c.ino, Off: c.off, idx: int32(c.idx), devLo: uint32(c.dev)}
	r.filed = &filing{source: c.src, root: c.root, typ: c.typ, project: c.proj, devHi: uint32(c.dev >> 32)}
	if c.whole {
		r.setRoot(string(c.path), true)
	}
	switch c.sessKind {
	case 1:
		sid := unit[c.sessAt : c.sessAt+c.sessN]
		if i := strings.Index(unit, sid); i > math.MaxUint8 || len(sid) > math.MaxUint8 {
			// Its own copy: held apart (setSession), it must not keep a
			// name the indexer's replaces (Ledger.adopt).
			sid = strings.Clone(sid)
		}
		r.setSession(sid)
	case 2:
		r.setSession(string(c.sess))
	}
	switch c.fpKind {
	case 1:
		r.fp, r.fpHex = c.fp, true
	case 2:
		r.setFp(string(c.fpb))
	}
	r.setSpan(c.line)
	return r
}

// decode runs fn on the bytes at off (seq: of a walk in order, through the
// blocks), reading more if fn runs out; it returns how many fn read.
func (c *coldSet) decode(off int64, seq bool, fn func(x *indexReader)) (int, error) {
	for i := range c.blocks {
		b := &c.blocks[i]
		if b.data == nil || off < b.at || off >= b.at+int64(len(b.data)) {
			continue
		}
		x := indexReader{data: b.data[off-b.at:]}
		if fn(&x); x.err == nil {
			return x.pos, nil
		}
		if b.at+int64(len(b.data)) >= c.end {
			return 0, fmt.Errorf("units index %s at byte %d: %v", c.f.Name(), off, x.err)
		}
		break
	}
	n := int64(coldPeek)
	if seq {
		n = coldBlock
	}
	for ; ; n *= 4 {
		m := min(n, c.end-off)
		if m <= 0 {
			return 0, fmt.Errorf("units index %s: no record at byte %d", c.f.Name(), off)
		}
		var buf []byte
		switch {
		case n == coldBlock && seq:
			b := &c.blocks[c.next]
			c.next = (c.next + 1) % coldBlocks
			if b.data == nil {
				b.data = make([]byte, coldBlock)
			}
			buf = b.data[:cap(b.data)][:m]
			b.at, b.data = off, buf
		case !seq:
			if int64(cap(c.peek)) < m {
				c.peek = make([]byte, m)
			}
			buf = c.peek[:m]
		default:
			buf = make([]byte, m)
		}
		if _, err := c.f.ReadAt(buf, off); err != nil {
			c.dropBlocks()
			return 0, fmt.Errorf("read units index %s: %w", c.f.Name(), err)
		}
		x := indexReader{data: buf}
		if fn(&x); x.err == nil {
			return x.pos, nil
		}
		if off+m >= c.end {
			return 0, fmt.Errorf("units index %s at byte %d: %v", c.f.Name(), off, x.err)
		}
	}
}

// dropBlocks lets the blocks of a walk go.
func (c *coldSet) dropBlocks() {
	for i := range c.blocks {
		c.blocks[i].data = nil
	}
}

// read reads the record at off and its length (seq: in a walk in order).
func (c *coldSet) read(off int64, seq bool) (coldRec, int, error) {
	var r coldRec
	n, err := c.decode(off, seq, func(x *indexReader) { r = readColdRec(x, c.strs, c.base) })
	return r, n, err
}

// find is the first record of (src, unit) in the index, its offset (0: the
// key is not there) and its slot.
func (c *coldSet) find(src, unit string) (coldRec, int64, *coldSlot, error) {
	if c.none() {
		return coldRec{}, 0, nil, nil // not even the key hashed
	}
	var at int64
	var slot *coldSlot
	var err error
	var r coldRec
	c.keys.each(hashPair(src, unit), func(s *coldSlot) bool {
		if r, _, err = c.read(int64(s.off), false); err != nil {
			return false
		}
		if r.src == src && string(r.unit) == unit {
			at, slot = int64(s.off), s
			return false
		}
		return true
	})
	return r, at, slot, err
}

// none reports whether the index holds no record (a new ledger's, through
// a cold build: every unit is looked for in it).
func (c *coldSet) none() bool { return c.start >= c.end }

// holdsKeyAt reports whether the key whose first record is at off is still in
// the index (not made resident).
func (c *coldSet) holdsKeyAt(src string, unit []byte, off int64) bool {
	found := false
	c.keys.each(hashKey(src, unit), func(s *coldSlot) bool {
		found = int64(s.off) == off
		return !found
	})
	return found
}

// openCold reads the index at path for a units file whose base has size base
// and CRC crc (base -1: whatever base it names), into tables of its records (their keys that hot reports
// resident are left out). The index's checksum and every record are checked,
// streamed through the blocks (the file is not held whole).
func openCold(path string, base int64, crc uint32, intern func(string) string, hot func(src string, unit []byte) bool) (*coldSet, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	c, err := readCold(f, base, crc, intern, hot)
	if err != nil {
		f.Close()
		return nil, err
	}
	return c, nil
}

func readCold(f *os.File, base int64, crc uint32, intern func(string) string, hot func(src string, unit []byte) bool) (*coldSet, error) {
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	size := fi.Size()
	if size < 5 || size > math.MaxUint32-1 {
		return nil, errIndex
	}
	head := make([]byte, min(size, 4<<10))
	if _, err := f.ReadAt(head, 0); err != nil {
		return nil, err
	}
	nl := bytes.IndexByte(head, '\n')
	var h indexHeader
	if nl < 0 || size < int64(nl)+1+4 || json.Unmarshal(head[:nl], &h) != nil || h.Version != unitsIndexVersion ||
		(base >= 0 && h.Base != [2]int64{base, int64(crc)}) || h.Base[0] < 0 || h.Base[1] < 0 || h.Base[1] > math.MaxUint32 ||
		h.Records < 0 || h.Strings < 0 {
		return nil, errIndex
	}
	end := size - 4
	var sum [4]byte
	if _, err := f.ReadAt(sum[:], end); err != nil {
		return nil, err
	}
	if c, ok := crcOf(f, end); !ok || c != binary.LittleEndian.Uint32(sum[:]) {
		return nil, fmt.Errorf("units index: checksum")
	}
	pos := int64(nl) + 1
	if int64(h.Strings) > end-pos || int64(h.Records) > end-pos {
		return nil, fmt.Errorf("units index: counts beyond its size")
	}
	c := &coldSet{f: f, end: end, base: h.Base[0], crc: uint32(h.Base[1]), strs: make([]string, h.Strings)}
	for i := range c.strs {
		var s []byte
		n, err := c.decode(pos, true, func(x *indexReader) { s = x.bytes() })
		if err != nil {
			return nil, err
		}
		c.strs[i] = intern(string(s))
		pos += int64(n)
	}
	c.start = pos
	c.keys.reserve(h.Records)
	c.sess.reserve(h.Records)
	var prevSrc string
	var prevUnit []byte
	prevIdx := int64(-1)
	for i := 0; i < h.Records; i++ {
		r, n, err := c.read(pos, true)
		if err != nil {
			return nil, err
		}
		// In order: by key, then place, each place once (the live one first).
		same := i > 0 && r.src == prevSrc && bytes.Equal(r.unit, prevUnit)
		switch {
		case same && (r.idx != prevIdx+1 || r.idx < 0):
			return nil, fmt.Errorf("units index: record %d out of place", i)
		case same:
		case i > 0 && (prevSrc > r.src || (prevSrc == r.src && bytes.Compare(prevUnit, r.unit) > 0)):
			return nil, fmt.Errorf("units index: record %d out of order", i)
		case r.idx > 0:
			return nil, fmt.Errorf("units index: record %d out of place", i)
		}
		if hot == nil || !hot(r.src, r.unit) {
			if !same {
				c.keys.add(hashKey(r.src, r.unit), uint32(pos))
			}
			c.sess.add(hashKey("", r.sid()), uint32(pos))
		}
		prevSrc, prevUnit, prevIdx = r.src, append(prevUnit[:0], r.unit...), r.idx
		pos += int64(n)
	}
	if pos != end {
		return nil, fmt.Errorf("units index: %d bytes after its records", end-pos)
	}
	c.dropBlocks()
	return c, nil
}

// crcOf is the CRC-32C of the first n bytes of f.
func crcOf(f io.ReaderAt, n int64) (uint32, bool) {
	buf := make([]byte, 256<<10)
	var c uint32
	for at := int64(0); at < n; {
		m := int(min(int64(len(buf)), n-at))
		if _, err := f.ReadAt(buf[:m], at); err != nil {
			return 0, false
		}
		c = crc32.Update(c, castagnoli(), buf[:m])
		at += int64(m)
	}
	return c, true
}

func (c *coldSet) close() {
	if c != nil {
		c.f.Close()
	}
}
