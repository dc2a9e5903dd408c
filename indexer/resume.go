package indexer

import (
	"bytes"
	"hash/crc32"
	"os"
	"path/filepath"
	"strconv"
	"unicode/utf8"
)

// ResumeName is the file beside each catalog that holds its sessions' resume
// state (the Tail: file identity, offset, fingerprints and the layout's
// accumulator), so the catalog holds only what a listing needs and its size does
// not grow with a session's messages. It is internal to sessionwatch:
//
//	{"version":1,"generator":"sessionwatch","source":…,"layout":…,"project":…,"resume":[
//	{"id":…,"file":…,"line":"<crc32c of the session's catalog line>","tail":{…}},
//	…
//	]}
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

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// lineSum is the checksum that ties a resume entry to its catalog line (the
// session's JSON object, as Encode writes it).
func lineSum(line []byte) uint32 { return crc32.Checksum(line, castagnoli) }

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

// appendResumeEntry appends one session's resume line. Its members come in a
// fixed order, and the accumulator's state is the last, so decodeResume finds
// every part without scanning the state.
func appendResumeEntry(b []byte, s *Session, sum uint32) []byte {
	b = append(b, `{"line":"`...)
	b = appendHex32(b, sum)
	b = append(b, `","id":`...)
	b = appendJSONString(b, s.ID)
	b = append(b, `,"file":`...)
	b = appendJSONString(b, s.File)
	b = append(b, `,"tail":`...)
	b = appendTailFixed(b, s.Tail)
	b = append(b, '}')
	if st := s.Tail.State; len(st) > 2 && st[0] == '{' && st[len(st)-1] == '}' {
		b = append(b, `,"state":`...)
		b = append(b, st...)
	}
	return append(b, '}')
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
	state    []byte // the accumulator's state, a JSON object, or nil
}

// decodeResume parses a resume file as EncodeWithResume writes it for catalog c;
// ok is false for anything else (another catalog's, a hand-edited file), whose
// sessions are then read again from the start.
func decodeResume(data []byte, c *Catalog) ([]resumeEntry, bool) {
	head, rest, found := bytes.Cut(data, []byte("\n"))
	if !found || !bytes.Equal(head, resumeHeader(c)) {
		return nil, false
	}
	entries := make([]resumeEntry, 0, len(c.Sessions))
	for len(rest) > 0 {
		var line []byte
		line, rest, _ = bytes.Cut(rest, []byte("\n"))
		if string(line) == "]}" {
			return entries, len(bytes.TrimSpace(rest)) == 0
		}
		line, _ = bytes.CutSuffix(line, []byte(","))
		e, ok := parseResumeLine(line)
		if !ok {
			return nil, false
		}
		entries = append(entries, e)
	}
	return nil, false
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
	switch rest := line[end : len(line)-1]; {
	case len(rest) == 0:
	case bytes.HasPrefix(rest, []byte(`,"state":{`)) && rest[len(rest)-1] == '}':
		e.state = rest[len(`,"state":`):]
	default:
		return e, false
	}
	return e, true
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
// entry: the one of the same file and id whose checksum is that of the session's
// catalog line (sums[i]). Entries are in the catalog's order, so the entry at the
// session's own position is tried first.
func attachResume(c *Catalog, sums []uint32, entries []resumeEntry) {
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
		if t, ok := decodeTail(entries[j].tail); ok {
			t.State = entries[j].state
			s.Tail = t
		}
	}
}

// readCatalogFiles reads the catalog at path and its resume file, and gives each
// session its tail (ReadCatalog, Load). It returns the bytes of both files; a
// missing or unreadable resume file is no error (its sessions have no tail).
func readCatalogFiles(path string) (c *Catalog, catData, resData []byte, err error) {
	catData, err = os.ReadFile(path)
	if err != nil {
		return nil, nil, nil, err
	}
	var sums []uint32
	c, ok := decodeCatalogFast(catData, true, &sums)
	if !ok {
		sums = nil
		if c, err = DecodeCatalog(catData); err != nil {
			return nil, catData, nil, err
		}
	}
	resData, err = os.ReadFile(resumePath(path))
	if err != nil {
		// Missing or unreadable: the sessions have no tail, so their files
		// are read again from the start.
		return c, catData, nil, nil
	}
	if entries, ok := decodeResume(resData, c); ok {
		attachResume(c, sums, entries)
	}
	return c, catData, resData, nil
}
