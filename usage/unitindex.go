package usage

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc32"
	"math"
	"os"
	"strings"
)

// UnitsIndexName is the index of the units file's base: every record's header
// (what an idle unit keeps in memory) and the span of its line, so an Open reads
// this file rather than parsing every key line of the base (docs/usage.md,
// "Opening"). It is written whole, atomically, after each rewrite of the units
// file, and names the base it indexes by its size and CRC-32C: an index of
// another base (a crash between the two renames, an older build's rewrite) or
// a damaged one is not used, and the base is read the long way.
const UnitsIndexName = "units.idx"

// unitsIndexVersion is the version of the index's format.
const unitsIndexVersion = 1

// indexHeader is the index's first line.
type indexHeader struct {
	Version   int      `json:"version"`
	Generator string   `json:"generator"`
	Base      [2]int64 `json:"base"` // the units file's base: size, CRC-32C
	Records   int      `json:"records"`
	Strings   int      `json:"strings"`
}

// The index after its header line (integers are varints, unsigned unless said):
//
//	strings: each its length and bytes (sources, types, projects, path roots)
//	records, sorted by key then place (the live record first, then the retired
//	ones in order):
//	  source (a string's number), unit (length, bytes), place (signed: -1 live,
//	  i the i-th retired), session (0: none; 1: a part of the unit: offset,
//	  length; 2: length, bytes), type, project (strings' numbers), path (0: a
//	  root, the string's number, the unit's path being it joined to the unit;
//	  1: length, bytes, the whole path), dev, ino, offset (signed), fingerprint
//	  (0: none; 1: 8 bytes, the 16 hex digits' value, little-endian; 2: length,
//	  bytes), line (offset, length)
//	CRC-32C of every byte before it, 4 bytes little-endian.

// encodeIndex is the index of a base of size base and CRC crc holding recs (in
// key order, each with its span and place set).
func encodeIndex(recs []*unitRec, base int64, crc uint32) []byte {
	strs := map[string]uint64{}
	var table []string
	num := func(s string) uint64 {
		n, ok := strs[s]
		if !ok {
			n = uint64(len(table))
			strs[s] = n
			table = append(table, s)
		}
		return n
	}
	var body []byte
	putStr := func(s string) {
		body = binary.AppendUvarint(body, uint64(len(s)))
		body = append(body, s...)
	}
	for _, r := range recs {
		body = binary.AppendUvarint(body, num(r.source()))
		putStr(r.Unit)
		body = binary.AppendVarint(body, int64(r.idx))
		sess := r.session()
		switch i := strings.Index(r.Unit, sess); {
		case sess == "":
			body = append(body, 0)
		case i >= 0:
			body = append(body, 1)
			body = binary.AppendUvarint(body, uint64(i))
			body = binary.AppendUvarint(body, uint64(len(sess)))
		default:
			body = append(body, 2)
			putStr(sess)
		}
		body = binary.AppendUvarint(body, num(r.typ()))
		body = binary.AppendUvarint(body, num(r.project()))
		if r.pathWhole {
			body = append(body, 1)
			putStr(r.pathDir())
		} else {
			body = append(body, 0)
			body = binary.AppendUvarint(body, num(r.pathDir()))
		}
		body = binary.AppendUvarint(body, r.dev())
		body = binary.AppendUvarint(body, r.Ino)
		body = binary.AppendVarint(body, r.Off)
		switch {
		case r.fpOddOf() != "":
			body = append(body, 2)
			putStr(r.fpOddOf())
		case r.fpHex:
			body = append(body, 1)
			body = binary.LittleEndian.AppendUint64(body, r.fp)
		default:
			body = append(body, 0)
		}
		body = binary.AppendUvarint(body, uint64(r.span().off))
		body = binary.AppendUvarint(body, uint64(r.span().n))
	}
	h, _ := json.Marshal(indexHeader{Version: unitsIndexVersion, Generator: "sessionwatch", Base: [2]int64{base, int64(crc)},
		Records: len(recs), Strings: len(table)})
	out := append(h, '\n')
	for _, s := range table {
		out = binary.AppendUvarint(out, uint64(len(s)))
		out = append(out, s...)
	}
	out = append(out, body...)
	return binary.LittleEndian.AppendUint32(out, crc32.Checksum(out, castagnoli()))
}

var errIndex = errors.New("not an index of this version")

// indexReader reads an index's varints and strings, failing once on anything out
// of bounds.
type indexReader struct {
	data []byte
	pos  int
	err  error
}

func (x *indexReader) fail(what string) {
	if x.err == nil {
		x.err = fmt.Errorf("units index at byte %d: %s", x.pos, what)
	}
}

func (x *indexReader) uvarint() uint64 {
	if x.err != nil {
		return 0
	}
	v, n := binary.Uvarint(x.data[x.pos:])
	if n <= 0 {
		x.fail("bad number")
		return 0
	}
	x.pos += n
	return v
}

// varint reads a signed number as binary.PutVarint writes it (zig-zag).
func (x *indexReader) varint() int64 {
	u := x.uvarint()
	return int64(u>>1) ^ -int64(u&1)
}

func (x *indexReader) byte() byte {
	if x.err != nil || x.pos >= len(x.data) {
		x.fail("truncated")
		return 0
	}
	x.pos++
	return x.data[x.pos-1]
}

// bytes is the next length-prefixed run of bytes.
func (x *indexReader) bytes() []byte {
	n := x.uvarint()
	if x.err != nil || n > uint64(len(x.data)-x.pos) {
		x.fail("truncated string")
		return nil
	}
	b := x.data[x.pos : x.pos+int(n)]
	x.pos += int(n)
	return b
}

// decodeIndex reads an index: the base it names (size, CRC) and its records
// (headers only: their bodies are on their lines). The records are cut from
// one slab and their units from arenas of 64 KiB (one allocation for hundreds
// of records, not one each; an arena goes once none of its units is held, as
// Resume takes the indexer's string of each: Ledger.adopt). It checks
// everything a record needs to be one the base could hold; anything else is an
// error.
func decodeIndex(data []byte, intern func(string) string) (base int64, crc uint32, recs []*unitRec, err error) {
	nl := bytes.IndexByte(data, '\n')
	if nl < 0 || len(data) < nl+1+4 {
		return 0, 0, nil, errIndex
	}
	var h indexHeader
	if json.Unmarshal(data[:nl], &h) != nil || h.Version != unitsIndexVersion || h.Base[0] < 0 || h.Base[1] < 0 ||
		h.Base[1] > math.MaxUint32 || h.Records < 0 || h.Strings < 0 {
		return 0, 0, nil, errIndex
	}
	end := len(data) - 4
	if crc32.Checksum(data[:end], castagnoli()) != binary.LittleEndian.Uint32(data[end:]) {
		return 0, 0, nil, fmt.Errorf("units index: checksum")
	}
	base = h.Base[0]
	x := &indexReader{data: data[:end], pos: nl + 1}
	// Every string and record takes at least a byte: a count beyond that is a lie.
	if h.Strings > end-x.pos || h.Records > end-x.pos {
		return 0, 0, nil, fmt.Errorf("units index: counts beyond its size")
	}
	table := make([]string, h.Strings)
	for i := range table {
		table[i] = intern(string(x.bytes()))
	}
	num := func() int {
		n := x.uvarint()
		if n >= uint64(len(table)) {
			x.fail("no such string")
			return 0
		}
		return int(n)
	}
	// The filings met, by their strings' numbers (source, root, type,
	// project) and the high bits of the device: one each, not one a record.
	filings := map[[5]int]*filing{}
	slab := make([]unitRec, h.Records)
	recs = make([]*unitRec, h.Records)
	const arenaSize = 64 << 10
	var arena strings.Builder
	type cut struct {
		r             *unitRec
		at, n         int
		sessAt, sessN int // the session's part of the unit (n 0: none)
	}
	var cuts []cut // the units in arena, cut once it is full
	cutArena := func() {
		s := arena.String()
		for _, c := range cuts {
			c.r.Unit = s[c.at : c.at+c.n]
			switch {
			case c.sessN == 0:
			case c.sessAt <= math.MaxUint8 && c.sessN <= math.MaxUint8:
				c.r.sessAt, c.r.sessLen = uint8(c.sessAt), uint8(c.sessN)
			default:
				// Its own copy: a part of the arena would keep it after
				// the indexer's name replaces the unit's (Ledger.adopt).
				c.r.setSession(strings.Clone(c.r.Unit[c.sessAt : c.sessAt+c.sessN]))
			}
		}
		cuts = cuts[:0]
		arena = strings.Builder{}
	}
	for i := range slab {
		r := &slab[i]
		recs[i] = r
		src := num()
		unit := x.bytes()
		idx := x.varint()
		if idx < -1 || idx > math.MaxInt32 {
			x.fail("bad place")
		}
		r.idx = int32(idx)
		c := cut{r: r, n: len(unit)}
		var ownSess []byte
		switch x.byte() {
		case 0:
		case 1:
			so, sn := x.uvarint(), x.uvarint()
			if sn == 0 || so > uint64(len(unit)) || sn > uint64(len(unit))-so {
				x.fail("session beyond its unit")
			} else {
				c.sessAt, c.sessN = int(so), int(sn)
			}
		case 2:
			if ownSess = x.bytes(); len(ownSess) == 0 && x.err == nil {
				x.fail("empty session")
			}
		default:
			x.fail("bad session")
		}
		typ, proj := num(), num()
		root := -1 // the root's string, -1: a whole path of its own
		switch x.byte() {
		case 0:
			root = num()
		case 1:
			if p := x.bytes(); x.err == nil {
				r.setRoot(string(p), true)
			}
		default:
			x.fail("bad path")
		}
		dev := x.uvarint()
		r.devLo = uint32(dev)
		if x.err == nil {
			k := [5]int{src, root, typ, proj, int(dev >> 32)}
			if f, ok := filings[k]; ok {
				r.filed = f
			} else {
				f := filing{source: table[src], typ: table[typ], project: table[proj], devHi: uint32(dev >> 32)}
				if root >= 0 {
					f.root = table[root]
				}
				r.refile(f)
				filings[k] = r.filed
			}
		}
		r.Ino, r.Off = x.uvarint(), x.varint()
		switch x.byte() {
		case 0:
		case 1:
			if x.err == nil && end-x.pos < 8 {
				x.fail("truncated fingerprint")
			}
			if x.err == nil {
				r.fp, r.fpHex = binary.LittleEndian.Uint64(data[x.pos:]), true
				x.pos += 8
			}
		case 2:
			fp := x.bytes()
			if len(fp) == 0 && x.err == nil {
				x.fail("empty fingerprint")
			}
			o := r.oddOf()
			o.fp = string(fp)
			r.setOdd(o)
		default:
			x.fail("bad fingerprint")
		}
		so, sn := x.uvarint(), x.uvarint()
		if sn == 0 || so > uint64(base) || sn > uint64(base)-so {
			x.fail("line beyond the base")
		}
		r.setSpan(span{int64(so), int64(sn)})
		if x.err != nil {
			return 0, 0, nil, x.err
		}
		if arena.Cap()-arena.Len() < len(unit) {
			cutArena()
			arena.Grow(max(arenaSize, len(unit)))
		}
		c.at = arena.Len()
		arena.Write(unit)
		cuts = append(cuts, c)
		if ownSess != nil {
			// After the unit: setSession finds it there if it is a part of it.
			r.Unit = string(unit)
			r.setSession(string(ownSess))
			if r.sessLen > 0 {
				c := &cuts[len(cuts)-1]
				c.sessAt, c.sessN = int(r.sessAt), int(r.sessLen)
			}
		}
	}
	cutArena()
	if x.pos != end {
		return 0, 0, nil, fmt.Errorf("units index: %d bytes after its records", end-x.pos)
	}
	for i, r := range recs {
		// In order: by key, then place, each place once (the live one first).
		if i > 0 {
			q := recs[i-1]
			switch {
			case q.source() == r.source() && q.Unit == r.Unit:
				if r.idx != q.idx+1 || r.idx < 0 {
					return 0, 0, nil, fmt.Errorf("units index: record %d out of place", i)
				}
			case q.source() > r.source() || (q.source() == r.source() && q.Unit > r.Unit):
				return 0, 0, nil, fmt.Errorf("units index: record %d out of order", i)
			default:
				if r.idx > 0 {
					return 0, 0, nil, fmt.Errorf("units index: record %d out of place", i)
				}
			}
		} else if r.idx > 0 {
			return 0, 0, nil, fmt.Errorf("units index: record 0 out of place")
		}
	}
	return base, uint32(h.Base[1]), recs, nil
}

// writeIndex writes the index of the units file's base, just rewritten: recs are
// its records in the order written, their spans set. A failure is not the
// ledger's (the next Open reads the base the long way, and rewrites it).
func (l *Ledger) writeIndex(recs []*unitRec) {
	f := logFile{path: l.indexPath()}
	data := encodeIndex(recs, l.unitsFile.base, l.unitsFile.crc)
	f.rewriteWith(func(w *bufio.Writer) error {
		_, err := w.Write(data)
		return err
	})
}

// loadIndex reads the index of the units file fh (size bytes) into the ledger's
// records, if it is the index of the file's base: it returns the base's size
// (0: no index of this base; nothing was read into the ledger).
func (l *Ledger) loadIndex(fh *os.File, size int64) int64 {
	if l.coldOK {
		// Its records stay there (cold.go).
		c, err := openCold(l.indexPath(), -1, 0, l.intern, nil)
		if err != nil {
			return 0
		}
		if c.base <= 0 || c.base > size || !baseIs(fh, c.base, c.crc) {
			c.close()
			return 0
		}
		l.cold = c
		return c.base
	}
	data, err := os.ReadFile(l.indexPath())
	if err != nil {
		return 0
	}
	base, crc, recs, err := decodeIndex(data, l.intern)
	if err != nil || base <= 0 || base > size || !baseIs(fh, base, crc) {
		return 0
	}
	l.units.reserve(len(recs))
	l.loaded = recs
	canon := map[*filing]*filing{} // the index's filings, the ledger's
	for _, r := range recs {
		if f, ok := canon[r.filed]; ok {
			r.filed = f
		} else if r.filed != nil {
			f := r.filed
			l.canonFiling(r)
			canon[f] = r.filed
		}
		if r.idx >= 0 {
			// Its own copy: no Resume takes a retired unit's name, and its
			// arena is freed once the live units cut from it are adopted.
			r.Unit = strings.Clone(r.Unit)
		}
		k := ukey{r.source(), r.Unit}
		if r.idx < 0 {
			l.units.put(r)
		} else {
			l.retired[k] = append(l.retired[k], r)
		}
	}
	return base
}

// indexOf reports whether the index names the units file's base of size base
// and CRC crc (without reading its records).
func (l *Ledger) indexOf(base int64, crc uint32) bool {
	data, err := os.ReadFile(l.indexPath())
	if err != nil {
		return false
	}
	nl := bytes.IndexByte(data, '\n')
	var h indexHeader
	return nl >= 0 && len(data) >= nl+1+4 && json.Unmarshal(data[:nl], &h) == nil && h.Version == unitsIndexVersion &&
		h.Base == [2]int64{base, int64(crc)} &&
		crc32.Checksum(data[:len(data)-4], castagnoli()) == binary.LittleEndian.Uint32(data[len(data)-4:])
}

// baseIs reports whether the first size bytes of fh have CRC-32C crc.
func baseIs(fh *os.File, size int64, crc uint32) bool {
	buf := make([]byte, 256<<10)
	var c uint32
	for at := int64(0); at < size; {
		n := int(min(int64(len(buf)), size-at))
		if _, err := fh.ReadAt(buf[:n], at); err != nil {
			return false
		}
		c = crc32.Update(c, castagnoli(), buf[:n])
		at += int64(n)
	}
	return c == crc
}

func (l *Ledger) indexPath() string {
	return l.unitsFile.path[:len(l.unitsFile.path)-len(UnitsName)] + UnitsIndexName
}
