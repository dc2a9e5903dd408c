package indexer

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strconv"
	"syscall"
	"unicode/utf8"
	"unsafe"
)

// Reading catalogs: the fast line decoders (Encode's layout), their
// encoding/json fallbacks, and the listing's summary reader.

// DecodeCatalog parses a catalog file's bytes.
func DecodeCatalog(data []byte) (*Catalog, error) {
	if c, ok := decodeCatalogFast(data, true, nil, false); ok {
		return c, nil
	}
	var c Catalog
	if err := json.Unmarshal(data, &c); err != nil {
		return nil, err
	}
	if c.Version != CatalogVersion || c.Generator != "sessionwatch" {
		return nil, fmt.Errorf("not a sessionwatch catalog version %d", CatalogVersion)
	}
	for i, s := range c.Sessions {
		if s == nil || s.ID == "" || s.File == "" {
			return nil, fmt.Errorf("sessions[%d]: missing id or file", i)
		}
		s.Project = c.Project
	}
	return &c, nil
}

// skipTail decodes to nothing: listing needs no resume state, and skipping it keeps
// `list` fast.
type skipTail struct{}

func (*skipTail) UnmarshalJSON([]byte) error { return nil }

// listSession decodes a session without its tail: the outer Tail field shadows the
// embedded Session's.
type listSession struct {
	*Session
	Tail skipTail `json:"tail"`
}

// readCatalogSummaries reads a catalog without the sessions' tail state.
func readCatalogSummaries(path string) (*Catalog, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	return decodeCatalogSummaries(path, data)
}

// summaryReader reads catalogs' summaries through one reused buffer: nothing
// decoded refers to it (every string is copied out).
type summaryReader struct{ buf []byte }

func (r *summaryReader) read(path string) (*Catalog, error) {
	var err error
	if r.buf, err = readFileInto(r.buf, path); err != nil {
		return nil, err
	}
	return decodeCatalogSummaries(path, r.buf)
}

// readFileInto reads the file into buf (grown if needed) and returns it. It
// makes the system calls itself: an os.File's would be six per file (its
// poller's registration and a last read to see the end among them), and a
// listing of 100,000 sessions reads 5,000 catalogs.
func readFileInto(buf []byte, path string) ([]byte, error) {
	fd, err := openRead(path)
	if err != nil {
		return buf, &fs.PathError{Op: "open", Path: path, Err: err}
	}
	defer syscall.Close(fd)
	buf = buf[:0]
	var st syscall.Stat_t
	size := -1
	if syscall.Fstat(fd, &st) == nil && st.Mode&syscall.S_IFMT == syscall.S_IFREG {
		size = int(st.Size)
		if size+512 > cap(buf) {
			buf = make([]byte, 0, size+512)
		}
	}
	for {
		if len(buf) == cap(buf) {
			buf = append(buf, 0)[:len(buf)] // grown by append
		}
		n, err := syscall.Read(fd, buf[len(buf):cap(buf)])
		if err == syscall.EINTR {
			continue
		}
		if err != nil {
			return buf, fmt.Errorf("read catalog %s: %w", path, err)
		}
		buf = buf[:len(buf)+n]
		// The end: nothing more, or all the file held when it was opened (a
		// catalog is replaced by a rename, never written in place).
		if n == 0 || len(buf) == size {
			return buf, nil
		}
	}
}

// openRead opens path read-only, retrying on EINTR.
func openRead(path string) (int, error) {
	for {
		fd, err := syscall.Open(path, syscall.O_RDONLY|syscall.O_CLOEXEC, 0)
		if err != syscall.EINTR {
			return fd, err
		}
	}
}

func decodeCatalogSummaries(path string, data []byte) (*Catalog, error) {
	if c, ok := decodeCatalogLines(data); ok {
		return c, nil
	}
	var lite struct {
		Catalog
		Sessions []listSession `json:"sessions"`
	}
	if err := json.Unmarshal(data, &lite); err != nil {
		return nil, fmt.Errorf("read catalog %s: %w", path, err)
	}
	c := lite.Catalog
	if c.Version != CatalogVersion || c.Generator != "sessionwatch" {
		return nil, fmt.Errorf("read catalog %s: not a sessionwatch catalog version %d", path, CatalogVersion)
	}
	c.Sessions = make([]*Session, 0, len(lite.Sessions))
	for i, ls := range lite.Sessions {
		if ls.Session == nil || ls.ID == "" || ls.File == "" {
			return nil, fmt.Errorf("read catalog %s: sessions[%d]: missing id or file", path, i)
		}
		ls.Session.Project = c.Project
		c.Sessions = append(c.Sessions, ls.Session)
	}
	return &c, nil
}

// decodeCatalogLines is the fast path of readCatalogSummaries for the layout Encode
// writes (a header line, then one session per line): each session line is read by
// decodeSessionLine, skipping any tail, instead of being decoded by encoding/json.
// ok is false for anything else (a hand-edited file), which the caller decodes in
// full.
func decodeCatalogLines(data []byte) (*Catalog, bool) {
	return decodeCatalogFast(data, false, nil, true)
}

// decodeCatalogFast is decodeCatalogLines that, with tails, also decodes the
// tails a catalog of an older version holds (Load's fast path, DecodeCatalog's
// first try). With sums, it appends each session line's lineSum to *sums.
func decodeCatalogFast(data []byte, tails bool, sums *[]uint32, share bool) (*Catalog, bool) {
	strs := copyStrings
	if share {
		strs = shareStrings
	}
	return decodeCatalogWith(data, tails, sums, strs, nil)
}

// stringMode is where the strings a catalog decoder sets live.
type stringMode int

const (
	// copyStrings: each string is copied to its exact size, for an indexer
	// that keeps the sessions for days.
	copyStrings stringMode = iota
	// shareStrings: every string is a substring of one copy of the session
	// lines (strings must not alias data, which summaryReader reuses): two
	// allocations per catalog instead of ten per session, for a listing that
	// lives for milliseconds.
	shareStrings
	// aliasStrings: the strings refer to data itself, valid only as long as
	// data is not changed (VisitCatalogs: until the next catalog is read).
	aliasStrings
)

// decodeCatalogWith is decodeCatalogFast with the strings where strs says; the
// sessions are allocated together, in scratch's when given (reused: valid until
// its next use).
func decodeCatalogWith(data []byte, tails bool, sums *[]uint32, strs stringMode, scratch *catalogScratch) (*Catalog, bool) {
	head, rest, found := bytes.Cut(data, []byte("\n"))
	if !found || !bytes.HasSuffix(head, []byte(`"sessions":[`)) {
		return nil, false
	}
	var c Catalog
	if !decodeCatalogHead(head, &c) || c.Version != CatalogVersion || c.Generator != "sessionwatch" {
		return nil, false
	}
	text := ""
	switch {
	case len(rest) == 0:
	case strs == shareStrings:
		text = string(rest)
	case strs == aliasStrings:
		text = unsafe.String(&rest[0], len(rest))
	}
	base := len(data) - len(rest) // offset of text in data
	n := bytes.Count(rest, []byte("\n"))
	var block []Session
	if scratch != nil {
		if cap(scratch.block) < n {
			scratch.block = make([]Session, n)
			scratch.ptrs = make([]*Session, 0, n)
		}
		block = scratch.block[:n]
		clear(block)
		c.Sessions = scratch.ptrs[:0]
	} else {
		block = make([]Session, n)
		c.Sessions = make([]*Session, 0, n)
	}
	more := false // the previous session line ended with a comma
	for len(rest) > 0 {
		var line []byte
		off := len(data) - len(rest) - base
		line, rest, _ = bytes.Cut(rest, []byte("\n"))
		if string(line) == "]}" {
			if more || len(bytes.TrimSpace(rest)) != 0 {
				return nil, false
			}
			return &c, true
		}
		if len(c.Sessions) > 0 && !more {
			return nil, false // two sessions without a comma between them
		}
		line, more = bytes.CutSuffix(line, []byte(","))
		if sums != nil {
			*sums = append(*sums, lineSum(line))
		}
		if len(c.Sessions) == len(block) {
			return nil, false // a last line without its newline
		}
		s := &block[len(c.Sessions)]
		s.Project = c.Project
		lineText := ""
		if text != "" {
			lineText = text[off : off+len(line)]
		}
		if !decodeSessionLine(line, lineText, s, tails) || s.ID == "" || s.File == "" {
			return nil, false
		}
		c.Sessions = append(c.Sessions, s)
	}
	return nil, false
}

// decodeCatalogHead decodes a catalog's first line (up to and with
// `"sessions":[`) into c's other fields, as json.Unmarshal of the line closed
// by "]}" does (FuzzDecodeCatalogHead): the line as Encode writes it without
// encoding/json (a third of the decoding of a small catalog), anything else
// with it.
func decodeCatalogHead(head []byte, c *Catalog) bool {
	const pre = `{"version":1,"generator":"sessionwatch"`
	if rest, ok := bytes.CutPrefix(head, []byte(pre)); ok {
		var fields [4]string
		for k, key := range [...]string{`,"source":`, `,"layout":`, `,"project":`, `,"updatedAt":`} {
			if rest, ok = bytes.CutPrefix(rest, []byte(key)); !ok {
				break
			}
			end, _, err := scanString(rest, 0)
			if err != nil || len(rest) == 0 || rest[0] != '"' {
				ok = false
				break
			}
			if fields[k], ok = JSONString(rest[:end]); !ok {
				break
			}
			rest = rest[end:]
		}
		if ok && string(rest) == `,"sessions":[` {
			*c = Catalog{Version: 1, Generator: "sessionwatch", Source: fields[0], Layout: fields[1], Project: fields[2], UpdatedAt: fields[3], Sessions: []*Session{}}
			return true
		}
	}
	*c = Catalog{}
	return json.Unmarshal(append(append([]byte(nil), head...), "]}"...), c) == nil
}

// catalogScratch is the memory a catalog is decoded into, reused from one
// catalog to the next.
type catalogScratch struct {
	block []Session
	ptrs  []*Session
}

// decodeSessionLine sets s from one catalog line, a JSON object of the summary
// fields (and, in catalogs of older versions, the tail: decoded with tails, else
// skipped). text, if not empty, holds the same bytes as line: the strings set are
// then substrings of it unless they need decoding; else they are copies. ok is
// false for an unknown key or a value of the wrong type.
func decodeSessionLine(line []byte, text string, s *Session, tails bool) (ok bool) {
	i := skipSpace(line, 0)
	if i >= len(line) || line[i] != '{' {
		return false
	}
	i = skipSpace(line, i+1)
	if i < len(line) && line[i] == '}' {
		return skipSpace(line, i+1) == len(line)
	}
	for {
		if i >= len(line) || line[i] != '"' {
			return false
		}
		kend, esc, err := scanString(line, i)
		if err != nil || esc {
			return false
		}
		key := line[i+1 : kend-1]
		i = skipSpace(line, kend)
		if i >= len(line) || line[i] != ':' {
			return false
		}
		i = skipSpace(line, i+1)
		if i >= len(line) {
			return false
		}
		var vend int
		str := func(dst *string) bool {
			if line[i] != '"' {
				vend, _ = scanValue(line, i, 0)
				return false
			}
			end, esc, err := scanString(line, i)
			if vend = end; err != nil {
				return false
			}
			if inner := line[i+1 : end-1]; text != "" && !esc && utf8.Valid(inner) {
				*dst = text[i+1 : end-1]
				return true
			}
			v, ok := JSONString(line[i:end])
			*dst = v
			return ok
		}
		num := func() int64 {
			end, err := scanValue(line, i, 0)
			if vend = end; err != nil {
				ok = false
				return 0
			}
			n, err := strconv.ParseInt(string(line[i:end]), 10, 64)
			ok = err == nil
			return n
		}
		flag := func() bool {
			end, err := scanValue(line, i, 0)
			if vend = end; err != nil {
				ok = false
				return false
			}
			v := string(line[i:end])
			ok = v == "true" || v == "false"
			return v == "true"
		}
		ok = true
		switch string(key) {
		case "id":
			ok = str(&s.ID)
		case "type":
			ok = str(&s.Type)
		case "parentId":
			ok = str(&s.ParentID)
		case "file":
			ok = str(&s.File)
		case "title":
			ok = str(&s.Title)
		case "firstPrompt":
			ok = str(&s.FirstPrompt)
		case "createdAt":
			ok = str(&s.CreatedAt)
		case "lastActiveAt":
			ok = str(&s.LastActiveAt)
		case "provider":
			ok = str(&s.Provider)
		case "model":
			ok = str(&s.Model)
		case "gitBranch":
			ok = str(&s.GitBranch)
		case "messageCount":
			s.MessageCount = int(num())
		case "sizeBytes":
			s.SizeBytes = num()
		case "skippedLines":
			s.SkippedLines = int(num())
		case "invalid":
			s.Invalid = flag()
		case "corrupt":
			s.Corrupt = flag()
		case "hidden":
			s.Hidden = flag()
		case "tail":
			vend, err = scanValue(line, i, 0)
			ok = err == nil && line[i] == '{'
			if ok && tails {
				s.Tail, ok = decodeTail(line[i:vend])
			}
		default:
			return false
		}
		if !ok || vend <= i {
			return false
		}
		i = skipSpace(line, vend)
		if i < len(line) && line[i] == ',' {
			i = skipSpace(line, i+1)
			continue
		}
		return i < len(line) && line[i] == '}' && skipSpace(line, i+1) == len(line)
	}
}

// decodeTail is Tail.UnmarshalJSON for a tail as Encode writes it (compact, the
// fixed keys first): the accumulator's members are copied as they are.
func decodeTail(v []byte) (*Tail, bool) {
	if t, ok := decodeTailFixed(v); ok {
		return t, true
	}
	t := &Tail{}
	var st []byte
	ok := true
	num := func(v []byte) int64 {
		n, err := strconv.ParseInt(string(v), 10, 64)
		ok = ok && err == nil
		return n
	}
	unum := func(v []byte) uint64 {
		n, err := strconv.ParseUint(string(v), 10, 64)
		ok = ok && err == nil
		return n
	}
	str := func(v []byte) string {
		s, sok := JSONString(v)
		ok = ok && sok
		return s
	}
	err := ObjectFields(v, func(k, v []byte) {
		switch string(k) {
		case "dev":
			t.Dev = unum(v)
		case "ino":
			t.Ino = unum(v)
		case "offset":
			t.Offset = num(v)
		case "mtime":
			t.Mtime = num(v)
		case "size":
			t.Size = num(v)
		case "longLine":
			t.LongLine = JSONTrue(v)
		case "fp":
			t.Fp = str(v)
		case "hfp":
			t.Hfp = str(v)
		case "dep":
			t.Dep = str(v)
		case "ownProject":
			t.OwnProject = str(v)
		default:
			if st == nil {
				st = append(make([]byte, 0, len(v)+64), '{')
			} else {
				st = append(st, ',')
			}
			st = appendJSONString(st, string(k))
			st = append(st, ':')
			st = append(st, v...)
		}
	})
	if err != nil || !ok {
		return nil, false
	}
	if st != nil {
		t.State = append(st, '}')
	}
	return t, true
}

// decodeTailFixed decodes a tail of the fixed fields only, in the order
// appendTailFixed writes them (a resume file's); ok is false for anything else.
func decodeTailFixed(v []byte) (*Tail, bool) {
	t := &Tail{}
	i := 0
	key := func(k string) bool {
		if len(v)-i > len(k) && string(v[i:i+len(k)]) == k {
			i += len(k)
			return true
		}
		return false
	}
	num := func() (int64, bool) {
		j := i
		for j < len(v) && (v[j] >= '0' && v[j] <= '9' || v[j] == '-') {
			j++
		}
		n, err := strconv.ParseInt(string(v[i:j]), 10, 64)
		i = j
		return n, err == nil
	}
	unum := func() (uint64, bool) {
		j := i
		for j < len(v) && v[j] >= '0' && v[j] <= '9' {
			j++
		}
		n, err := strconv.ParseUint(string(v[i:j]), 10, 64)
		i = j
		return n, err == nil
	}
	str := func(dst *string) bool {
		end, _, err := scanString(v, i)
		if err != nil || v[i] != '"' {
			return false
		}
		s, ok := JSONString(v[i:end])
		*dst, i = s, end
		return ok
	}
	var ok1, ok2, ok3, ok4, ok5 bool
	if !key(`{"dev":`) {
		return nil, false
	}
	if t.Dev, ok1 = unum(); !ok1 || !key(`,"ino":`) {
		return nil, false
	}
	if t.Ino, ok2 = unum(); !ok2 || !key(`,"offset":`) {
		return nil, false
	}
	if t.Offset, ok3 = num(); !ok3 || !key(`,"mtime":`) {
		return nil, false
	}
	if t.Mtime, ok4 = num(); !ok4 || !key(`,"size":`) {
		return nil, false
	}
	if t.Size, ok5 = num(); !ok5 {
		return nil, false
	}
	if key(`,"longLine":true`) {
		t.LongLine = true
	}
	for _, f := range [...]struct {
		k   string
		dst *string
	}{{`,"fp":`, &t.Fp}, {`,"hfp":`, &t.Hfp}, {`,"dep":`, &t.Dep}, {`,"ownProject":`, &t.OwnProject}} {
		if key(f.k) && (i >= len(v) || !str(f.dst)) {
			return nil, false
		}
	}
	return t, i == len(v)-1 && v[i] == '}'
}

// ReadCatalog reads and parses one catalog file, with each session's Tail from
// the resume file beside it (ResumeName); errors name the file.
func ReadCatalog(path string) (*Catalog, error) {
	c, _, _, err := readCatalogFiles(path, true)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, err
	}
	if err != nil {
		return nil, fmt.Errorf("read catalog %s: %w", path, err)
	}
	return c, nil
}
