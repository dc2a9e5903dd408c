package indexer

import (
	"bytes"
	"hash/crc32"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"unicode/utf8"
)

// ResumeName is the file beside each catalog that holds its sessions' resume
// state (the Tail: file identity, offset, fingerprints and the layout's
// accumulator), so the catalog holds only what a listing needs and its size does
// not grow with a session's messages. It is internal to sessionwatch:
//
//	{"version":1,"generator":"sessionwatch","source":…,"layout":…,"project":…,"resume":[
//	{"line":"<crc32c of the session's catalog line>","id":…,"file":…,"tail":{…}},
//	…
//	],"states":[
//	{…the layout's accumulator of the first entry…} or null,
//	…
//	]}
//
// The fixed tails come first and the accumulators' states after them, one per
// entry in the same order, so what a listing needs to prove the catalogs current
// (Unchanged: the tails) is read without the states, which grow with messages.
//
// Both files are written atomically in the same flush, but not together: after a
// crash between the two renames they may disagree. An entry is used only while
// its checksum matches the session's line in the catalog; a session without a
// matching entry is read again from the start, which gives what a rebuild gives.
const ResumeName = "sessions-resume.json"

// resumePath is the resume file of a catalog file.
func resumePath(catalogPath string) string {
	return filepath.Join(filepath.Dir(catalogPath), ResumeName)
}

// castagnoli is made on first use: on amd64 making it runs the SSE4.2 setup
// (~0.15 ms), which every command paid at init although few write or read
// resume files.
var castagnoli = sync.OnceValue(func() *crc32.Table { return crc32.MakeTable(crc32.Castagnoli) })

// lineSum is the checksum that ties a resume entry to its catalog line (the
// session's JSON object, as Encode writes it).
func lineSum(line []byte) uint32 { return crc32.Checksum(line, castagnoli()) }

// resumeHeader is the resume file's first line.
func resumeHeader(c *Catalog) []byte {
	b := append([]byte(nil), `{"version":`...)
	b = strconv.AppendInt(b, CatalogVersion, 10)
	b = append(b, `,"generator":"sessionwatch","source":`...)
	b = appendJSONString(b, c.Source)
	b = append(b, `,"layout":`...)
	b = appendJSONString(b, c.Layout)
	b = append(b, `,"project":`...)
	b = appendJSONString(b, c.Project)
	return append(b, `,"resume":[`...)
}

// appendResumeEntry appends one session's resume line, its members in a fixed
// order (parseResumeLine reads them without a general JSON scan).
func appendResumeEntry(b []byte, s *Session, sum uint32) []byte {
	b = append(b, `{"line":"`...)
	b = appendHex32(b, sum)
	b = append(b, `","id":`...)
	b = appendJSONString(b, s.ID)
	b = append(b, `,"file":`...)
	b = appendJSONString(b, s.File)
	b = append(b, `,"tail":`...)
	b = appendTailFixed(b, s.Tail)
	return append(b, "}}"...)
}

// resumeStatesLine separates a resume file's tails from its states.
const resumeStatesLine = `],"states":[`

// appendResumeState appends one entry's state line: the accumulator, or null.
func appendResumeState(b []byte, t *Tail) []byte {
	if st := t.State; len(st) > 2 && st[0] == '{' && st[len(st)-1] == '}' {
		return append(b, st...)
	}
	return append(b, "null"...)
}

func appendHex32(b []byte, v uint32) []byte {
	const digits = "0123456789abcdef"
	for shift := 28; shift >= 0; shift -= 4 {
		b = append(b, digits[v>>shift&0xf])
	}
	return b
}

// resumeEntry is one parsed resume line; its slices alias the file's bytes.
type resumeEntry struct {
	sum      uint32
	id, file []byte // JSON strings
	tail     []byte // the tail's fixed fields, a JSON object
	state    []byte // the accumulator's state, a JSON object, or nil (from the states)
}

// decodeResume parses a resume file as EncodeWithResume writes it for catalog c;
// ok is false for anything else (another catalog's, a hand-edited file), whose
// sessions are then read again from the start. Without states, data may end
// right after the line that starts the states (readResumeTails).
func decodeResume(data []byte, c *Catalog, states bool) ([]resumeEntry, bool) {
	head, rest, found := bytes.Cut(data, []byte("\n"))
	if !found || !bytes.Equal(head, resumeHeader(c)) {
		return nil, false
	}
	entries := make([]resumeEntry, 0, len(c.Sessions))
	for {
		var line []byte
		if line, rest, found = bytes.Cut(rest, []byte("\n")); !found {
			return nil, false
		}
		if string(line) == resumeStatesLine {
			break
		}
		line, _ = bytes.CutSuffix(line, []byte(","))
		e, ok := parseResumeLine(line)
		if !ok {
			return nil, false
		}
		entries = append(entries, e)
	}
	if !states {
		return entries, true
	}
	for i := range entries {
		var line []byte
		if line, rest, found = bytes.Cut(rest, []byte("\n")); !found {
			return nil, false
		}
		line, _ = bytes.CutSuffix(line, []byte(","))
		switch {
		case string(line) == "null":
		case len(line) >= 2 && line[0] == '{' && line[len(line)-1] == '}':
			entries[i].state = line
		default:
			return nil, false
		}
	}
	return entries, string(bytes.TrimSpace(rest)) == "]}"
}

// parseResumeLine splits one line written by appendResumeEntry.
func parseResumeLine(line []byte) (e resumeEntry, ok bool) {
	const pre = `{"line":"`
	i := len(pre) + 8
	if len(line) < i+1 || string(line[:len(pre)]) != pre || line[len(line)-1] != '}' {
		return e, false
	}
	n, err := strconv.ParseUint(string(line[len(pre):i]), 16, 32)
	if err != nil {
		return e, false
	}
	e.sum = uint32(n)
	str := func(key string) []byte {
		if i < 0 || !bytes.HasPrefix(line[i:], []byte(key)) {
			i = -1
			return nil
		}
		start := i + len(key)
		end, _, err := scanString(line, start)
		if err != nil || start >= len(line) || line[start] != '"' {
			i = -1
			return nil
		}
		i = end
		return line[start:end]
	}
	if line[i] != '"' {
		return e, false
	}
	i++
	e.id = str(`,"id":`)
	e.file = str(`,"file":`)
	if i < 0 || !bytes.HasPrefix(line[i:], []byte(`,"tail":{`)) {
		return e, false
	}
	start := i + len(`,"tail":`)
	end, err := scanValue(line, start, 0)
	if err != nil || end >= len(line) {
		return e, false
	}
	e.tail = line[start:end]
	return e, string(line[end:]) == "}"
}

// jsonStringIs reports whether the JSON string raw decodes to s.
func jsonStringIs(raw []byte, s string) bool {
	if len(raw) >= 2 && bytes.IndexByte(raw, '\\') < 0 && utf8.Valid(raw) {
		return string(raw[1:len(raw)-1]) == s
	}
	v, ok := JSONString(raw)
	return ok && v == s
}

// attachResume gives each session of c that has no tail yet the tail of its
// entry (matchResume), with its state.
func attachResume(c *Catalog, sums []uint32, entries []resumeEntry) {
	matchResume(c, sums, entries, func(_ int, s *Session, e *resumeEntry) {
		if t, ok := decodeTail(e.tail); ok {
			t.State = e.state
			s.Tail = t
		}
	})
}

// matchResume calls attach for each session of c that has no tail yet, with its
// entry: the one of the same file and id whose checksum is that of the session's
// catalog line (sums[i]). Entries are in the catalog's order, so the entry at the
// session's own position is tried first.
func matchResume(c *Catalog, sums []uint32, entries []resumeEntry, attach func(i int, s *Session, e *resumeEntry)) {
	if len(entries) == 0 || len(sums) != len(c.Sessions) {
		return
	}
	var bySum map[uint32][]int // built only when the two files are out of step
	for i, s := range c.Sessions {
		if s.Tail != nil {
			continue // an older catalog that holds its tails itself
		}
		match := func(j int) bool {
			e := &entries[j]
			return e.sum == sums[i] && jsonStringIs(e.file, s.File) && jsonStringIs(e.id, s.ID)
		}
		j := i
		if j >= len(entries) || !match(j) {
			if bySum == nil {
				bySum = make(map[uint32][]int, len(entries))
				for k, e := range entries {
					bySum[e.sum] = append(bySum[e.sum], k)
				}
			}
			j = -1
			for _, k := range bySum[sums[i]] {
				if match(k) {
					j = k
					break
				}
			}
			if j < 0 {
				continue
			}
		}
		attach(i, s, &entries[j])
	}
}

// readCatalogFiles reads the catalog at path and its resume file, and gives each
// session its tail (ReadCatalog, Load). It returns the bytes of both files; a
// missing or unreadable resume file is no error (its sessions have no tail).
// Without states it is a liteReader's read (LoadLite's), and returns no bytes.
func readCatalogFiles(path string, states bool) (c *Catalog, catData, resData []byte, err error) {
	if !states {
		c, err = (&liteReader{}).read(path)
		return c, nil, nil, err
	}
	catData, err = os.ReadFile(path)
	if err != nil {
		return nil, nil, nil, err
	}
	var sums []uint32
	c, ok := decodeCatalogFast(catData, true, &sums, false)
	if !ok {
		sums = nil
		if c, err = DecodeCatalog(catData); err != nil {
			return nil, catData, nil, err
		}
	}
	if resData, err = os.ReadFile(resumePath(path)); err != nil {
		// Missing or unreadable: the sessions have no tail, so their files
		// are read again from the start.
		return c, catData, nil, nil
	}
	if entries, ok := decodeResume(resData, c, true); ok {
		attachResume(c, sums, entries)
		compactStates(c)
	}
	return c, catData, resData, nil
}

// compactStates copies the sessions' states, which alias the resume file's bytes,
// into one buffer of their exact size: a daemon keeps them for as long as the
// sessions live, and the file's tails need not be kept with them.
func compactStates(c *Catalog) {
	n := 0
	for _, s := range c.Sessions {
		if s.Tail != nil {
			n += len(s.Tail.State)
		}
	}
	buf := make([]byte, 0, n)
	for _, s := range c.Sessions {
		if s.Tail != nil && s.Tail.State != nil {
			start := len(buf)
			buf = append(buf, s.Tail.State...)
			s.Tail.State = buf[start:len(buf):len(buf)]
		}
	}
}

// readResumeTails reads a resume file up to the line that starts its states.
// It reads into buf's storage, grown as needed.
func readResumeTails(path string, buf []byte) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	marker := []byte("\n" + resumeStatesLine + "\n")
	buf = buf[:0]
	for {
		if len(buf) == cap(buf) {
			buf = append(buf, 0)[:len(buf)]
		}
		from := max(len(buf)-len(marker), 0)
		n, err := f.Read(buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+n]
		if i := bytes.Index(buf[from:], marker); i >= 0 {
			return buf[:from+i+len(marker)], nil
		}
		if err != nil {
			return buf, err // io.EOF: no states line, the file does not decode
		}
	}
}

// liteReader reads catalogs for LoadLite: each catalog with only what Unchanged
// compares of its sessions' tails, through buffers reused from one catalog to
// the next (nothing decoded refers to them: a listing's strings are copied out,
// and the tails keep no state). It reads no more than the catalog and the tails
// of its resume file, and the tails are decoded into one block per catalog.
type liteReader struct {
	cat, res []byte
	sums     []uint32
	key      []byte // unitTails's scratch
}

// catalogTails reads the catalog at path into r.cat and the tails of its
// resume file into r.res, and returns the resume file's entries (nil when there
// is none that fits the catalog: the sessions' files are read again from the
// start). An older catalog's inline states, which may alias r.cat, are cloned
// (keepStates) or dropped.
func (r *liteReader) catalogTails(path string, keepStates bool) (*Catalog, []resumeEntry, error) {
	var err error
	if r.cat, err = readFileInto(r.cat, path); err != nil {
		return nil, nil, err
	}
	r.sums = r.sums[:0]
	c, ok := decodeCatalogFast(r.cat, true, &r.sums, true)
	if !ok {
		r.sums = r.sums[:0]
		if c, err = DecodeCatalog(r.cat); err != nil {
			return nil, nil, err
		}
	}
	for _, s := range c.Sessions {
		if s.Tail == nil {
			continue
		}
		if !keepStates {
			s.Tail.State = nil
		} else if s.Tail.State != nil {
			s.Tail.State = bytes.Clone(s.Tail.State)
		}
	}
	res, err := readResumeTails(resumePath(path), r.res)
	if res != nil {
		r.res = res
	}
	if err != nil {
		return c, nil, nil
	}
	entries, ok := decodeResume(res, c, false)
	if !ok {
		return c, nil, nil
	}
	return c, entries, nil
}

// read reads the catalog at path and the tails of its resume file. The
// sessions' tails hold Dev, Ino, Offset, Mtime, Size and Dep (tailLite).
func (r *liteReader) read(path string) (*Catalog, error) {
	c, entries, err := r.catalogTails(path, false)
	if err != nil || entries == nil {
		return c, err
	}
	tails := make([]Tail, len(c.Sessions))
	matchResume(c, r.sums, entries, func(i int, s *Session, e *resumeEntry) {
		if tailLite(e.tail, &tails[i]) {
			s.Tail = &tails[i]
		} else if t, ok := decodeTail(e.tail); ok {
			s.Tail = t
		}
	})
	return c, nil
}

// tailLite decodes of a tail's fixed fields (appendTailFixed's order) what
// Unchanged compares: Dev, Ino, Offset, Mtime, Size and Dep; the fingerprints
// and the session's own project are skipped unread. False for anything else.
func tailLite(v []byte, t *Tail) bool {
	i := 0
	key := func(k string) bool {
		if len(v)-i > len(k) && string(v[i:i+len(k)]) == k {
			i += len(k)
			return true
		}
		return false
	}
	num := func(dst *int64) bool {
		j := i
		if j < len(v) && v[j] == '-' {
			j++
		}
		for j < len(v) && v[j] >= '0' && v[j] <= '9' {
			j++
		}
		n, ok := parseInt(v[i:j])
		*dst, i = n, j
		return ok
	}
	unum := func(dst *uint64) bool {
		j := i
		for j < len(v) && v[j] >= '0' && v[j] <= '9' {
			j++
		}
		n, ok := parseUint(v[i:j])
		*dst, i = n, j
		return ok
	}
	str := func() (start, end int, ok bool) {
		if i >= len(v) || v[i] != '"' {
			return 0, 0, false
		}
		end, _, err := scanString(v, i)
		start, i = i, end
		return start, end, err == nil
	}
	if !key(`{"dev":`) || !unum(&t.Dev) || !key(`,"ino":`) || !unum(&t.Ino) ||
		!key(`,"offset":`) || !num(&t.Offset) || !key(`,"mtime":`) || !num(&t.Mtime) ||
		!key(`,"size":`) || !num(&t.Size) {
		return false
	}
	key(`,"longLine":true`)
	for _, k := range [...]string{`,"fp":`, `,"hfp":`, `,"dep":`, `,"ownProject":`} {
		if !key(k) {
			continue
		}
		start, end, ok := str()
		if !ok {
			return false
		}
		if k == `,"dep":` {
			if t.Dep, ok = JSONString(v[start:end]); !ok {
				return false
			}
		}
	}
	return i == len(v)-1 && v[i] == '}'
}
