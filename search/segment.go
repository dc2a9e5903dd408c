package search

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"os"
	"slices"
	"sort"
	"strings"
	"sync"
)

// Segment files are immutable; docs/search.md describes their layout.
const (
	segMagic   = "SWSEG3\n\x00" // SWSEG2: no session table, no summaries
	nFooter    = 16
	footerSize = 8*nFooter + 8 // sixteen uint64 fields, crc32 + magic tail
	docSize    = 20            // bytes of one doc record
	blockTerms = 32            // dictionary terms per block (prefix sharing restarts)
	unitTabRec = 8             // bytes of one unit table record: id u32, offset u32
)

var errCorrupt = errors.New("corrupt search segment")

// docRec is one indexed message.
type docRec struct {
	Unit   uint32
	Sess   uint16
	Part   uint8
	Role   uint8
	Offset int64 // 48 bits
	Time   uint32
	Len    uint16 // terms, capped
}

func (d *docRec) put(b []byte) {
	binary.LittleEndian.PutUint32(b[0:], d.Unit)
	binary.LittleEndian.PutUint16(b[4:], d.Sess)
	b[6], b[7] = d.Part, d.Role
	var o [8]byte
	binary.LittleEndian.PutUint64(o[:], uint64(d.Offset))
	copy(b[8:14], o[:6])
	binary.LittleEndian.PutUint32(b[14:], d.Time)
	binary.LittleEndian.PutUint16(b[18:], d.Len)
}

func getDoc(b []byte) docRec {
	var o [8]byte
	copy(o[:6], b[8:14])
	return docRec{Unit: binary.LittleEndian.Uint32(b[0:]), Sess: binary.LittleEndian.Uint16(b[4:]), Part: b[6], Role: b[7],
		Offset: int64(binary.LittleEndian.Uint64(o[:])), Time: binary.LittleEndian.Uint32(b[14:]), Len: binary.LittleEndian.Uint16(b[18:])}
}

var roleCodes = []string{RoleUser, RoleAssistant, RoleTool}

func roleCode(r string) uint8 {
	for i, s := range roleCodes {
		if s == r {
			return uint8(i)
		}
	}
	return 0
}

// footer locates the sections of a segment.
type footer struct {
	unitsOff, unitsLen uint64
	unitTabOff, nunits uint64
	docsOff, ndocs     uint64
	postOff, postLen   uint64
	dictOff, dictLen   uint64
	blocksOff, nblocks uint64
	nterms, tokens     uint64
	sessOff, nsess     uint64 // the session table (sessRec bytes each)
}

func (f *footer) fields() []*uint64 {
	return []*uint64{&f.unitsOff, &f.unitsLen, &f.unitTabOff, &f.nunits, &f.docsOff, &f.ndocs, &f.postOff, &f.postLen,
		&f.dictOff, &f.dictLen, &f.blocksOff, &f.nblocks, &f.nterms, &f.tokens, &f.sessOff, &f.nsess}
}

// segWriter streams a segment to a file: units, then docs, then terms in sorted
// order (each with its encoded postings), then the dictionary and its sparse index.
type segWriter struct {
	f      *os.File
	w      *bufio.Writer
	off    uint64
	ft     footer
	dict   bytes.Buffer
	blocks []byte // u64 dictionary offset of each block
	prev   string
	tab    []byte // the unit table, while the records are written
	sum    sumWriter
	noSum  bool // write no session summaries (a cold build's segments, merged later)
	err    error
}

func newSegWriter(path string) (*segWriter, error) {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return nil, fmt.Errorf("create segment: %w", err)
	}
	segBuf.mu.Lock()
	w := segBuf.w
	segBuf.w = nil
	segBuf.mu.Unlock()
	if w == nil {
		w = bufio.NewWriterSize(f, segBufSize)
	} else {
		w.Reset(f)
	}
	s := &segWriter{f: f, w: w}
	s.write([]byte(segMagic))
	return s, nil
}

// segBufSize is a segment writer's write buffer. The daemon writes a small
// segment at every commit and merges them now and then: one buffer is kept in
// segBuf rather than allocated for each (at 100 appends/s they were a sixth of
// what the daemon allocated). Not a sync.Pool: a collection empties it, and
// the daemon collects several times a second under load.
const segBufSize = 256 << 10

var segBuf struct {
	mu sync.Mutex
	w  *bufio.Writer
}

// release hands the write buffer back once the segment is finished or aborted.
func (s *segWriter) release() {
	if s.w != nil {
		s.w.Reset(nil)
		segBuf.mu.Lock()
		segBuf.w = s.w
		segBuf.mu.Unlock()
		s.w = nil
	}
}

func (s *segWriter) write(b []byte) {
	if s.err != nil {
		return
	}
	_, s.err = s.w.Write(b)
	s.off += uint64(len(b))
}

// copyFrom writes the next n bytes of r.
func (s *segWriter) copyFrom(r io.Reader, n int64) {
	if s.err != nil {
		return
	}
	var k int64
	k, s.err = io.CopyN(s.w, r, n)
	s.off += uint64(k)
}

// units writes the unit records (ascending ids) and their offset table.
func (s *segWriter) units(us []*unitRec) {
	s.beginUnits()
	var b []byte
	for _, u := range us {
		b = appendUnit(b[:0], u)
		s.unit(u.ID, b)
	}
	s.endUnits()
}

func (s *segWriter) beginUnits() { s.ft.unitsOff = s.off }

// unit appends one encoded record (ids ascending): a merge copies records as
// they are, one at a time.
func (s *segWriter) unit(id uint32, rec []byte) {
	s.tab = binary.LittleEndian.AppendUint32(s.tab, id)
	s.tab = binary.LittleEndian.AppendUint32(s.tab, uint32(s.off-s.ft.unitsOff))
	s.write(rec)
	if s.off-s.ft.unitsOff > 1<<32-1 && s.err == nil {
		s.err = fmt.Errorf("unit records over 4 GiB")
	}
}

// endUnits ends the records and writes their table.
func (s *segWriter) endUnits() {
	s.ft.unitsLen = s.off - s.ft.unitsOff
	s.ft.unitTabOff, s.ft.nunits = s.off, uint64(len(s.tab)/unitTabRec)
	s.write(s.tab)
	s.tab = nil
}

// docs writes the doc table; call once, after units.
func (s *segWriter) docs(ds []docRec, tokens uint64) {
	s.beginDocs()
	for i := range ds {
		s.addDoc(&ds[i])
	}
	s.endDocs(tokens)
}

func (s *segWriter) beginDocs() { s.ft.docsOff = s.off }

func (s *segWriter) addDoc(d *docRec) {
	var rec [docSize]byte
	d.put(rec[:])
	s.write(rec[:])
	s.ft.ndocs++
	s.sum.doc(d)
}

// endDocs ends the doc table and writes the session table after it.
func (s *segWriter) endDocs(tokens uint64) {
	s.ft.tokens = tokens
	s.ft.sessOff, s.ft.nsess = s.off, uint64(len(s.sum.sessions))
	s.write(s.sum.table())
	s.ft.postOff = s.off
}

// term appends one term (terms come in ascending order) with its postings, and
// the per-session summary of a common term's postings after them.
func (s *segWriter) term(term string, df uint32, post []byte) {
	s.termSum(term, df, post, nil, false)
}

// termSum is term with the summary given if summed (a merge summarizes a
// term's postings as it splices them: s.sum's, nil if not worth it).
func (s *segWriter) termSum(term string, df uint32, post, sum []byte, summed bool) {
	if !summed && df >= sumMinDF && !s.noSum && s.err == nil {
		if sum, s.err = s.sum.summarize(post, df); s.err != nil {
			s.err = fmt.Errorf("term %q: %w", term, s.err)
		}
	}
	s.entry(term, df, uint64(len(post)), uint64(len(sum)))
	s.write(post)
	s.write(sum)
}

// entry adds term's dictionary entry, its postings (plen bytes, then a summary
// of slen) to be written next.
func (s *segWriter) entry(term string, df uint32, plen, slen uint64) {
	if s.ft.nterms%blockTerms == 0 {
		s.blocks = binary.LittleEndian.AppendUint64(s.blocks, uint64(s.dict.Len()))
		s.prev = ""
	}
	shared := 0
	for shared < len(term) && shared < len(s.prev) && term[shared] == s.prev[shared] {
		shared++
	}
	var b [48]byte
	e := binary.AppendUvarint(b[:0], uint64(shared))
	e = appendStr(e, term[shared:])
	e = binary.AppendUvarint(e, uint64(df))
	e = binary.AppendUvarint(e, s.off-s.ft.postOff)
	e = binary.AppendUvarint(e, plen)
	e = binary.AppendUvarint(e, slen)
	s.dict.Write(e)
	s.prev = term
	s.ft.nterms++
}

// finish writes the dictionary, its block table and the footer, and makes the
// file durable.
func (s *segWriter) finish() error {
	s.ft.postLen = s.off - s.ft.postOff
	s.ft.dictOff = s.off
	s.write(s.dict.Bytes())
	s.ft.dictLen = uint64(s.dict.Len())
	s.ft.blocksOff, s.ft.nblocks = s.off, uint64(len(s.blocks)/8)
	s.write(s.blocks)
	var tail []byte
	for _, p := range s.ft.fields() {
		tail = binary.LittleEndian.AppendUint64(tail, *p)
	}
	tail = binary.LittleEndian.AppendUint32(tail, crc32.ChecksumIEEE(tail))
	tail = append(tail, segMagic[:4]...)
	s.write(tail)
	if s.err == nil {
		s.err = s.w.Flush()
	}
	if s.err == nil {
		s.err = s.f.Sync()
	}
	s.release()
	if err := s.f.Close(); s.err == nil {
		s.err = err
	}
	if s.err != nil {
		os.Remove(s.f.Name())
		return fmt.Errorf("write segment: %w", s.err)
	}
	return nil
}

func (s *segWriter) abort() {
	s.release()
	s.f.Close()
	os.Remove(s.f.Name())
}

// segment is an open segment file. A reader maps it into memory (data), so that a
// query touches only the pages of the doc records, dictionary blocks and postings
// it needs; the writer reads it with ReadAt (its merges stream it once).
type segment struct {
	name  string
	size  int64
	f     *os.File
	ft    footer
	data  []byte // the mapped file, or nil
	unmap func()
	tab   []byte // the unit table: mapped (a reader's), or a small one read whole
	// tabKeys is the id of every tabStride-th entry of a large unit table that
	// the writer leaves on disk.
	tabKeys []uint32
}

// dictEntry is one term of a segment's dictionary.
type dictEntry struct {
	term     string
	df       uint32
	off, len uint64 // of its postings, relative to the postings section
	slen     uint64 // of its session summary, right after the postings (0: none)
}

func openSegment(path string, mapped bool) (*segment, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	s := &segment{name: path, f: f}
	if err := s.load(mapped); err != nil {
		s.close()
		return nil, fmt.Errorf("open %s: %w", path, err)
	}
	return s, nil
}

func (s *segment) load(mapped bool) error {
	fi, err := s.f.Stat()
	if err != nil {
		return err
	}
	s.size = fi.Size()
	if s.size < int64(len(segMagic)+footerSize) {
		return errCorrupt
	}
	if mapped {
		if s.data, s.unmap, err = mapFile(s.f, s.size); err != nil {
			return err
		}
	}
	tail, err := s.read(uint64(s.size-footerSize), footerSize)
	if err != nil {
		return err
	}
	body := tail[:8*nFooter]
	if string(tail[footerSize-4:]) != segMagic[:4] || binary.LittleEndian.Uint32(tail[8*nFooter:]) != crc32.ChecksumIEEE(body) {
		return errCorrupt
	}
	for i, p := range s.ft.fields() {
		*p = binary.LittleEndian.Uint64(body[8*i:])
	}
	head, err := s.read(0, uint64(len(segMagic)))
	if err != nil || string(head) != segMagic {
		return errCorrupt
	}
	end := uint64(s.size - footerSize)
	for _, sec := range [][2]uint64{{s.ft.unitsOff, s.ft.unitsLen}, {s.ft.unitTabOff, s.ft.nunits * unitTabRec},
		{s.ft.docsOff, s.ft.ndocs * docSize}, {s.ft.sessOff, s.ft.nsess * sessRec}, {s.ft.postOff, s.ft.postLen}, {s.ft.dictOff, s.ft.dictLen}, {s.ft.blocksOff, s.ft.nblocks * 8}} {
		if sec[0] > end || sec[1] > end-sec[0] {
			return errCorrupt
		}
	}
	if s.ft.nunits > 1<<32-1 || s.ft.unitsLen > 1<<32-1 {
		return errCorrupt
	}
	tab, err := s.read(s.ft.unitTabOff, s.ft.nunits*unitTabRec)
	if err != nil || mapped || len(tab) <= tabWhole {
		s.tab = tab
		return err
	}
	s.tabKeys = make([]uint32, 0, (len(tab)/unitTabRec+tabStride-1)/tabStride)
	for i := 0; i < len(tab); i += tabStride * unitTabRec {
		s.tabKeys = append(s.tabKeys, binary.LittleEndian.Uint32(tab[i:]))
	}
	return nil
}

func (s *segment) close() {
	if s.unmap != nil {
		s.unmap()
		s.unmap, s.data = nil, nil
	}
	s.f.Close()
}

// read returns n bytes at off: a slice of the mapping, or a fresh buffer.
func (s *segment) read(off, n uint64) ([]byte, error) {
	if off > uint64(s.size) || n > uint64(s.size)-off {
		return nil, errCorrupt
	}
	if s.data != nil {
		return s.data[off : off+n : off+n], nil
	}
	b := make([]byte, n)
	if _, err := s.f.ReadAt(b, int64(off)); err != nil {
		return nil, err
	}
	return b, nil
}

func readStr(b []byte) (string, int) {
	l, n := binary.Uvarint(b)
	if n <= 0 || uint64(len(b)-n) < l {
		return "", -1
	}
	return string(b[n : n+int(l)]), n + int(l)
}

// doc reads one doc record.
func (s *segment) doc(i uint32) (docRec, error) {
	if uint64(i) >= s.ft.ndocs {
		return docRec{}, errCorrupt
	}
	b, err := s.read(s.ft.docsOff+uint64(i)*docSize, docSize)
	if err != nil {
		return docRec{}, err
	}
	return getDoc(b), nil
}

// allDocs reads the whole doc table.
func (s *segment) allDocs() ([]docRec, error) {
	b, err := s.read(s.ft.docsOff, s.ft.ndocs*docSize)
	if err != nil {
		return nil, err
	}
	out := make([]docRec, s.ft.ndocs)
	for i := range out {
		out[i] = getDoc(b[i*docSize:])
	}
	return out, nil
}

// blockTerm is the first term of dictionary block i (stored whole).
func (s *segment) blockTerm(i uint64) (string, error) {
	b, err := s.read(s.ft.blocksOff+8*i, 8)
	if err != nil {
		return "", err
	}
	off := binary.LittleEndian.Uint64(b)
	if off >= s.ft.dictLen {
		return "", errCorrupt
	}
	head, err := s.read(s.ft.dictOff+off, min(s.ft.dictLen-off, 2*binary.MaxVarintLen64+MaxTermBytes*4))
	if err != nil {
		return "", err
	}
	if len(head) == 0 || head[0] != 0 {
		return "", errCorrupt // a block starts with a whole term
	}
	t, n := readStr(head[1:])
	if n <= 0 {
		return "", errCorrupt
	}
	return t, nil
}

// dictStart is the dictionary offset of the block that may hold from (0 when
// from is ""), found by a binary search over the blocks' first terms.
func (s *segment) dictStart(from string) (uint64, error) {
	if from == "" || s.ft.nblocks == 0 {
		return 0, nil
	}
	var ferr error
	i := sort.Search(int(s.ft.nblocks), func(i int) bool {
		t, err := s.blockTerm(uint64(i))
		if err != nil {
			ferr = err
			return true
		}
		return t > from
	})
	if ferr != nil {
		return 0, ferr
	}
	start := uint64(0)
	if i > 0 {
		b, err := s.read(s.ft.blocksOff+8*uint64(i-1), 8)
		if err != nil {
			return 0, err
		}
		start = binary.LittleEndian.Uint64(b)
	}
	if start > s.ft.dictLen {
		return 0, errCorrupt
	}
	return start, nil
}

// dictScan walks the dictionary from the block that may hold from (all of it when
// from is ""), calling fn for each entry until fn returns false. The block is
// found by a binary search over the blocks' first terms.
func (s *segment) dictScan(from string, fn func(e dictEntry) bool) error {
	start, err := s.dictStart(from)
	if err != nil {
		return err
	}
	var br byteReader
	if s.data != nil {
		br = bytes.NewReader(s.data[s.ft.dictOff+start : s.ft.dictOff+s.ft.dictLen])
	} else {
		br = bufio.NewReaderSize(io.NewSectionReader(s.f, int64(s.ft.dictOff+start), int64(s.ft.dictLen-start)), 4096)
	}
	it := dictIter{r: br}
	for {
		if err := it.next(); err != nil {
			return err
		}
		if !it.ok || !fn(it.e) {
			return nil
		}
	}
}

// lookup finds the entries of a term, or of every term with that prefix.
func (s *segment) lookup(term string, prefix bool) ([]dictEntry, error) {
	var out []dictEntry
	err := s.dictScan(term, func(e dictEntry) bool {
		switch {
		case e.term < term:
			return true
		case e.term == term:
			out = append(out, e)
			return prefix
		case prefix && strings.HasPrefix(e.term, term):
			out = append(out, e)
			return true
		}
		return false
	})
	return out, err
}

// postings reads one term's encoded postings.
func (s *segment) postings(e dictEntry) ([]byte, error) {
	return s.postingsInto(e, nil)
}

// postingsInto is postings reading into buf (reused) when the segment is not
// mapped: a merge reads every term's postings once, one term at a time.
func (s *segment) postingsInto(e dictEntry, buf []byte) ([]byte, error) {
	if e.off > s.ft.postLen || e.len > s.ft.postLen-e.off {
		return nil, errCorrupt
	}
	if s.data != nil {
		return s.read(s.ft.postOff+e.off, e.len)
	}
	b := slices.Grow(buf[:0], int(e.len))[:e.len]
	if _, err := s.f.ReadAt(b, int64(s.ft.postOff+e.off)); err != nil {
		return nil, err
	}
	return b, nil
}
