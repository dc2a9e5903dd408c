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
	"sort"
	"strings"
)

// Segment files are immutable; docs/search.md describes their layout.
const (
	segMagic   = "SWSEG1\n\x00"
	footerSize = 8*12 + 8 // twelve uint64 fields, crc32 + magic tail
	docSize    = 20       // bytes of one doc record
	sparseStep = 32       // one dictionary entry in this many is in the sparse index
)

var errCorrupt = errors.New("corrupt search segment")

// Unit states in a unit record.
const (
	unitLive    = 0
	unitRemoved = 1 // the file left the store; its docs count only for --archived
	unitDead    = 2 // replaced (reset or rewritten): its docs are garbage
)

// unitRec is what the index knows of one unit under one id. A unit that is reset
// gets a new id; its old id turns dead, which tombstones all its docs at once.
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
}

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
	unitsOff, unitsLen   uint64
	docsOff, ndocs       uint64
	postOff, postLen     uint64
	dictOff, dictLen     uint64
	sparseOff, sparseLen uint64
	nterms, tokens       uint64
}

func (f *footer) fields() []*uint64 {
	return []*uint64{&f.unitsOff, &f.unitsLen, &f.docsOff, &f.ndocs, &f.postOff, &f.postLen, &f.dictOff, &f.dictLen, &f.sparseOff, &f.sparseLen, &f.nterms, &f.tokens}
}

// termList is one term's postings while a segment is written: doc numbers
// ascending, each with its term frequency, encoded as (delta<<1 | tf==1) and tf
// when above 1.
type termList struct {
	buf  []byte
	last uint32
	n    uint32 // doc frequency
	// While a buffer is filled, the doc being counted and its count so far (count
	// adds it to buf when the next doc starts; flush at the end).
	cur, curTF uint32
}

// count counts one occurrence of the term in doc (docs come in ascending order)
// and returns how many bytes buf grew by.
func (t *termList) count(doc uint32) int {
	if t.curTF > 0 && t.cur == doc {
		t.curTF++
		return 0
	}
	before := len(t.buf)
	t.flush()
	t.cur, t.curTF = doc, 1
	return len(t.buf) - before + 2 // + the pending entry, about
}

// flush adds the pending doc to buf.
func (t *termList) flush() {
	if t.curTF > 0 {
		t.add(t.cur, t.curTF)
		t.curTF = 0
	}
}

func (t *termList) add(doc uint32, tf uint32) {
	d := uint64(doc-t.last) << 1
	if t.n == 0 {
		d = uint64(doc) << 1
	}
	if tf == 1 {
		t.buf = binary.AppendUvarint(t.buf, d|1)
	} else {
		t.buf = binary.AppendUvarint(t.buf, d)
		t.buf = binary.AppendUvarint(t.buf, uint64(tf))
	}
	t.last = doc
	t.n++
}

// decodePostings calls fn for each (doc, tf) of an encoded list.
func decodePostings(b []byte, fn func(doc uint32, tf uint32)) error {
	var doc uint64
	first := true
	for len(b) > 0 {
		v, n := binary.Uvarint(b)
		if n <= 0 {
			return errCorrupt
		}
		b = b[n:]
		tf := uint64(1)
		if v&1 == 0 {
			tf, n = binary.Uvarint(b)
			if n <= 0 {
				return errCorrupt
			}
			b = b[n:]
		}
		if first {
			doc, first = v>>1, false
		} else {
			doc += v >> 1
		}
		fn(uint32(doc), uint32(tf))
	}
	return nil
}

// segWriter streams a segment to a file: units, then docs, then terms in sorted
// order (each with its encoded postings), then the dictionary and its sparse index.
type segWriter struct {
	f      *os.File
	w      *bufio.Writer
	off    uint64
	ft     footer
	dict   bytes.Buffer
	sparse bytes.Buffer
	prev   string
	err    error
}

func newSegWriter(path string) (*segWriter, error) {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return nil, fmt.Errorf("create segment: %w", err)
	}
	s := &segWriter{f: f, w: bufio.NewWriterSize(f, 256<<10)}
	s.write([]byte(segMagic))
	return s, nil
}

func (s *segWriter) write(b []byte) {
	if s.err != nil {
		return
	}
	_, s.err = s.w.Write(b)
	s.off += uint64(len(b))
}

func appendStr(b []byte, s string) []byte {
	b = binary.AppendUvarint(b, uint64(len(s)))
	return append(b, s...)
}

func (s *segWriter) units(us []*unitRec) {
	s.ft.unitsOff = s.off
	var b []byte
	b = binary.AppendUvarint(b, uint64(len(us)))
	for _, u := range us {
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
	}
	s.write(b)
	s.ft.unitsLen = s.off - s.ft.unitsOff
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
}

func (s *segWriter) endDocs(tokens uint64) {
	s.ft.tokens = tokens
	s.ft.postOff = s.off
}

// term appends one term (terms come in ascending order) with its postings.
func (s *segWriter) term(term string, df uint32, post []byte) {
	if s.ft.nterms%sparseStep == 0 {
		s.sparse.Write(appendStr(nil, term))
		s.sparse.Write(binary.AppendUvarint(nil, uint64(s.dict.Len())))
		s.prev = ""
	}
	shared := 0
	for shared < len(term) && shared < len(s.prev) && term[shared] == s.prev[shared] {
		shared++
	}
	var b [40]byte
	e := binary.AppendUvarint(b[:0], uint64(shared))
	e = appendStr(e, term[shared:])
	e = binary.AppendUvarint(e, uint64(df))
	e = binary.AppendUvarint(e, s.off-s.ft.postOff)
	e = binary.AppendUvarint(e, uint64(len(post)))
	s.dict.Write(e)
	s.write(post)
	s.prev = term
	s.ft.nterms++
}

// finish writes the dictionary, sparse index and footer, and makes the file durable.
func (s *segWriter) finish() error {
	s.ft.postLen = s.off - s.ft.postOff
	s.ft.dictOff = s.off
	s.write(s.dict.Bytes())
	s.ft.dictLen = uint64(s.dict.Len())
	s.ft.sparseOff = s.off
	s.write(s.sparse.Bytes())
	s.ft.sparseLen = uint64(s.sparse.Len())
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
	s.f.Close()
	os.Remove(s.f.Name())
}

// segment is an open segment file.
type segment struct {
	name   string
	size   int64
	f      *os.File
	ft     footer
	sparse []sparseEntry
}

type sparseEntry struct {
	term string
	off  uint64
}

// dictEntry is one term of a segment's dictionary.
type dictEntry struct {
	term     string
	df       uint32
	off, len uint64 // of its postings, relative to the postings section
}

func openSegment(path string) (*segment, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	s := &segment{name: path, f: f}
	if err := s.load(); err != nil {
		f.Close()
		return nil, fmt.Errorf("open %s: %w", path, err)
	}
	return s, nil
}

func (s *segment) load() error {
	fi, err := s.f.Stat()
	if err != nil {
		return err
	}
	s.size = fi.Size()
	if s.size < int64(len(segMagic)+footerSize) {
		return errCorrupt
	}
	tail := make([]byte, footerSize)
	if _, err := s.f.ReadAt(tail, s.size-footerSize); err != nil {
		return err
	}
	body := tail[:8*12]
	if string(tail[footerSize-4:]) != segMagic[:4] || binary.LittleEndian.Uint32(tail[8*12:]) != crc32.ChecksumIEEE(body) {
		return errCorrupt
	}
	for i, p := range s.ft.fields() {
		*p = binary.LittleEndian.Uint64(body[8*i:])
	}
	if s.ft.sparseOff+s.ft.sparseLen > uint64(s.size) || s.ft.docsOff+s.ft.ndocs*docSize > uint64(s.size) {
		return errCorrupt
	}
	sp := make([]byte, s.ft.sparseLen)
	if _, err := s.f.ReadAt(sp, int64(s.ft.sparseOff)); err != nil {
		return err
	}
	for len(sp) > 0 {
		t, n := readStr(sp)
		if n <= 0 {
			return errCorrupt
		}
		sp = sp[n:]
		off, m := binary.Uvarint(sp)
		if m <= 0 {
			return errCorrupt
		}
		sp = sp[m:]
		s.sparse = append(s.sparse, sparseEntry{t, off})
	}
	return nil
}

func (s *segment) close() { s.f.Close() }

func readStr(b []byte) (string, int) {
	l, n := binary.Uvarint(b)
	if n <= 0 || uint64(len(b)-n) < l {
		return "", -1
	}
	return string(b[n : n+int(l)]), n + int(l)
}

// readUnits decodes the segment's unit records.
func (s *segment) readUnits() ([]*unitRec, error) {
	b := make([]byte, s.ft.unitsLen)
	if _, err := s.f.ReadAt(b, int64(s.ft.unitsOff)); err != nil {
		return nil, err
	}
	cnt, n := binary.Uvarint(b)
	if n <= 0 {
		return nil, errCorrupt
	}
	b = b[n:]
	uv := func() uint64 {
		v, n := binary.Uvarint(b)
		if n <= 0 {
			b = nil
			return 0
		}
		b = b[n:]
		return v
	}
	str := func() string {
		v, n := readStr(b)
		if n <= 0 {
			b = nil
			return ""
		}
		b = b[n:]
		return v
	}
	out := make([]*unitRec, 0, cnt)
	for i := uint64(0); i < cnt; i++ {
		u := &unitRec{ID: uint32(uv())}
		if len(b) == 0 {
			return nil, errCorrupt
		}
		u.State = b[0]
		b = b[1:]
		ra, n := binary.Varint(b)
		if n <= 0 {
			return nil, errCorrupt
		}
		b = b[n:]
		u.RemovedAt = ra
		u.Dev, u.Ino, u.Offset = uv(), uv(), int64(uv())
		u.Fp, u.Source, u.Layout, u.Rel, u.Path = str(), str(), str(), str(), str()
		ns := uv()
		for j := uint64(0); j < ns && b != nil; j++ {
			u.Sids = append(u.Sids, str())
		}
		if b == nil {
			return nil, errCorrupt
		}
		out = append(out, u)
	}
	return out, nil
}

// doc reads one doc record.
func (s *segment) doc(i uint32) (docRec, error) {
	var b [docSize]byte
	if uint64(i) >= s.ft.ndocs {
		return docRec{}, errCorrupt
	}
	if _, err := s.f.ReadAt(b[:], int64(s.ft.docsOff)+int64(i)*docSize); err != nil {
		return docRec{}, err
	}
	return getDoc(b[:]), nil
}

// allDocs reads the whole doc table.
func (s *segment) allDocs() ([]docRec, error) {
	b := make([]byte, s.ft.ndocs*docSize)
	if _, err := s.f.ReadAt(b, int64(s.ft.docsOff)); err != nil {
		return nil, err
	}
	out := make([]docRec, s.ft.ndocs)
	for i := range out {
		out[i] = getDoc(b[i*docSize:])
	}
	return out, nil
}

// dictScan walks the dictionary from the block that may hold from (all of it when
// from is ""), calling fn for each entry until fn returns false.
func (s *segment) dictScan(from string, fn func(e dictEntry) bool) error {
	start := uint64(0)
	if from != "" && len(s.sparse) > 0 {
		i := sort.Search(len(s.sparse), func(i int) bool { return s.sparse[i].term > from })
		if i > 0 {
			start = s.sparse[i-1].off
		}
	}
	r := io.NewSectionReader(s.f, int64(s.ft.dictOff+start), int64(s.ft.dictLen-start))
	br := bufio.NewReaderSize(r, 4096)
	var prev []byte
	for {
		shared, err := binary.ReadUvarint(br)
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return errCorrupt
		}
		l, err := binary.ReadUvarint(br)
		if err != nil || shared > uint64(len(prev)) || l > MaxTermBytes*4 {
			return errCorrupt
		}
		term := append(prev[:shared:shared], make([]byte, l)...)
		if _, err := io.ReadFull(br, term[shared:]); err != nil {
			return errCorrupt
		}
		df, err1 := binary.ReadUvarint(br)
		off, err2 := binary.ReadUvarint(br)
		ln, err3 := binary.ReadUvarint(br)
		if err1 != nil || err2 != nil || err3 != nil {
			return errCorrupt
		}
		prev = term
		if !fn(dictEntry{term: string(term), df: uint32(df), off: off, len: ln}) {
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
	if e.off+e.len > s.ft.postLen {
		return nil, errCorrupt
	}
	b := make([]byte, e.len)
	_, err := s.f.ReadAt(b, int64(s.ft.postOff+e.off))
	return b, err
}
