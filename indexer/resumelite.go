package indexer

import (
	"bytes"
	"io"
	"io/fs"
	"slices"
	"strconv"
	"syscall"
)

// readResumeTailsInto is readResumeTails with the system calls themselves (an
// os.File costs three more per file, its poller's among them; a listing of
// 100,000 sessions reads 5,000 resume files): the file up to the line that
// starts its states, into buf's storage, grown as needed. It reads hint bytes
// at a time (at least 4 KiB): what the tails are expected to take, so that the
// states after them, as long again or longer, are mostly not copied.
func readResumeTailsInto(path string, buf []byte, hint int) ([]byte, error) {
	fd, err := openRead(path)
	if err != nil {
		return buf, &fs.PathError{Op: "open", Path: path, Err: err}
	}
	defer syscall.Close(fd)
	buf = buf[:0]
	step := max(hint, 4<<10)
	for {
		buf = slices.Grow(buf, step)
		from := len(buf)
		n, err := syscall.Read(fd, buf[from:from+step])
		if err == syscall.EINTR {
			continue
		}
		if err != nil {
			return buf, &fs.PathError{Op: "read", Path: path, Err: err}
		}
		if n == 0 {
			return buf, io.EOF // no states line: the file does not decode
		}
		buf = buf[:from+n]
		if end, ok := statesLineEnd(buf, from); ok {
			return buf[:end], nil
		}
	}
}

// resumeTailsHint is what the resume tails of catalog c are expected to take
// (appendResumeEntry: a line per session, its id, file and own project and
// ~200 bytes of numbers), a little more.
func resumeTailsHint(c *Catalog) int {
	n := 1024 + len(c.Source) + len(c.Layout) + len(c.Project)
	for _, s := range c.Sessions {
		n += 256 + len(s.ID) + len(s.File) + len(s.Project)
	}
	return n
}

// statesLineEnd finds the line that starts a resume file's states in data
// (resumeStatesLine, a whole line), looking at the lines that end at or after
// from: where that line and its newline end.
func statesLineEnd(data []byte, from int) (int, bool) {
	const marker = "\n" + resumeStatesLine + "\n"
	// A line that ends at or after from starts after the newline before it.
	i := max(from-len(marker)+1, 0)
	for {
		j := bytes.IndexByte(data[i:], '\n')
		if j < 0 {
			return 0, false
		}
		i += j
		if len(data)-i < len(marker) {
			return 0, false // maybe, once more is read
		}
		if string(data[i:i+len(marker)]) == marker {
			return i + len(marker), true
		}
		i++
	}
}

// tailLiteJSON is tailLite for a tail parseResumeLineLite did not scan: it
// also holds the numbers tailLite reads to JSON's form (no leading zero,
// which tailLite's digits accept and scanValue rejects), so that what it
// accepts the full decoder accepts alike (FuzzParseResumeLineLite).
func tailLiteJSON(v []byte, t *Tail) bool {
	if !tailLite(v, t) {
		return false
	}
	// The numbers come first, before any string: every digit up to the
	// size's last is a number's (no key holds one).
	end := bytes.Index(v, []byte(`,"size":`))
	if end < 0 {
		return false
	}
	end += len(`,"size":`)
	for end < len(v) && (v[end] == '-' || '0' <= v[end] && v[end] <= '9') {
		end++
	}
	digit := func(i int) bool { return i >= 0 && i < end && '0' <= v[i] && v[i] <= '9' }
	for i := range end {
		if v[i] == '0' && !digit(i-1) && digit(i+1) {
			return false
		}
	}
	return true
}

// decodeResumeLite is decodeResume without states for a lean proof, into
// dst's storage: each line as parseResumeLine splits it, but its tail taken
// as the rest of the line, unscanned, which the caller must read with
// tailLiteJSON (whose form is stricter than scanValue's): anything else is
// decoded the usual way. ok false for anything decodeResume would reject, and
// for more.
func decodeResumeLite(data []byte, c *Catalog, head []byte, entries []resumeEntry) ([]byte, []resumeEntry, bool) {
	head = append(head[:0], `{"version":`...)
	head = strconv.AppendInt(head, CatalogVersion, 10)
	head = append(head, `,"generator":"sessionwatch","source":`...)
	head = appendJSONString(head, c.Source)
	head = append(head, `,"layout":`...)
	head = appendJSONString(head, c.Layout)
	head = append(head, `,"project":`...)
	head = appendJSONString(head, c.Project)
	head = append(head, `,"resume":[`...)
	first, rest, found := bytes.Cut(data, []byte("\n"))
	entries = entries[:0]
	if !found || !bytes.Equal(first, head) {
		return head, entries, false
	}
	for {
		var line []byte
		if line, rest, found = bytes.Cut(rest, []byte("\n")); !found {
			return head, entries, false
		}
		if string(line) == resumeStatesLine {
			return head, entries, true
		}
		line, _ = bytes.CutSuffix(line, []byte(","))
		e, ok := parseResumeLineLite(line)
		if !ok {
			return head, entries, false
		}
		entries = append(entries, e)
	}
}

// parseResumeLineLite is parseResumeLine but for the tail, which it takes as
// the rest of the line (between `,"tail":` and the line's last '}') without
// scanning it.
func parseResumeLineLite(line []byte) (e resumeEntry, ok bool) {
	const pre = `{"line":"`
	i := len(pre) + 8
	if len(line) < i+1 || string(line[:len(pre)]) != pre || line[i] != '"' || !bytes.HasSuffix(line, []byte("}}")) {
		return e, false
	}
	n, err := strconv.ParseUint(string(line[len(pre):i]), 16, 32)
	if err != nil {
		return e, false
	}
	e.sum = uint32(n)
	i++
	str := func(key string) []byte {
		if i < 0 || !bytes.HasPrefix(line[i:], []byte(key)) {
			i = -1
			return nil
		}
		start := i + len(key)
		if start >= len(line) || line[start] != '"' {
			i = -1
			return nil
		}
		end, _, err := scanString(line, start)
		if err != nil {
			i = -1
			return nil
		}
		i = end
		return line[start:end]
	}
	e.id = str(`,"id":`)
	e.file = str(`,"file":`)
	if i < 0 || !bytes.HasPrefix(line[i:], []byte(`,"tail":{`)) {
		return e, false
	}
	e.tail = line[i+len(`,"tail":`) : len(line)-1]
	return e, true
}
