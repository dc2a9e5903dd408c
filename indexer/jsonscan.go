package indexer

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"unicode/utf8"
)

// A fast, allocation-free validator for transcript lines. encoding/json validates
// with a per-byte state machine (~150 MB/s); transcripts are mostly long strings,
// which this scanner crosses with a table lookup per byte. Layouts use ObjectFields
// to validate a line and pick the top-level members they need, then decode only
// those (small) values.

// maxDepth bounds nesting, as encoding/json does.
const maxDepth = 10000

var errSyntax = errors.New("invalid JSON")

// strSpecial marks the bytes that end a run of plain string content.
var strSpecial = func() (t [256]bool) {
	for c := 0; c < 0x20; c++ {
		t[c] = true
	}
	t['"'], t['\\'] = true, true
	return t
}()

const (
	swarLo = 0x0101010101010101
	swarHi = 0x8080808080808080
)

// swarSpecial reports whether any of the eight bytes in x is '"', '\\' or below
// 0x20 (the classic has-zero-byte and has-less-than tricks).
func swarSpecial(x uint64) bool {
	less := (x - swarLo*0x20) &^ x
	q := x ^ (swarLo * '"')
	bs := x ^ (swarLo * '\\')
	return (less|(q-swarLo)&^q|(bs-swarLo)&^bs)&swarHi != 0
}

func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }

func skipSpace(b []byte, i int) int {
	for i < len(b) && isSpace(b[i]) {
		i++
	}
	return i
}

// scanString returns the index just past the string starting at b[i] == '"', and
// whether it holds an escape.
func scanString(b []byte, i int) (int, bool, error) {
	i++
	escaped := false
	for {
		// Eight bytes at a time while none is a quote, a backslash or a control byte.
		for i+8 <= len(b) && !swarSpecial(binary.LittleEndian.Uint64(b[i:])) {
			i += 8
		}
		for i < len(b) && !strSpecial[b[i]] {
			i++
		}
		if i >= len(b) {
			return 0, false, errSyntax
		}
		switch c := b[i]; {
		case c == '"':
			return i + 1, escaped, nil
		case c == '\\':
			escaped = true
			if i+1 >= len(b) {
				return 0, false, errSyntax
			}
			switch b[i+1] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				i += 2
			case 'u':
				if i+6 > len(b) {
					return 0, false, errSyntax
				}
				for _, h := range b[i+2 : i+6] {
					if !('0' <= h && h <= '9' || 'a' <= h && h <= 'f' || 'A' <= h && h <= 'F') {
						return 0, false, errSyntax
					}
				}
				i += 6
			default:
				return 0, false, errSyntax
			}
		default: // control character
			return 0, false, errSyntax
		}
	}
}

func scanDigits(b []byte, i int) int {
	for i < len(b) && b[i] >= '0' && b[i] <= '9' {
		i++
	}
	return i
}

func scanNumber(b []byte, i int) (int, error) {
	if b[i] == '-' {
		i++
	}
	switch {
	case i < len(b) && b[i] == '0':
		i++
	case i < len(b) && b[i] >= '1' && b[i] <= '9':
		i = scanDigits(b, i+1)
	default:
		return 0, errSyntax
	}
	if i < len(b) && b[i] == '.' {
		j := scanDigits(b, i+1)
		if j == i+1 {
			return 0, errSyntax
		}
		i = j
	}
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		i++
		if i < len(b) && (b[i] == '+' || b[i] == '-') {
			i++
		}
		j := scanDigits(b, i)
		if j == i {
			return 0, errSyntax
		}
		i = j
	}
	return i, nil
}

// scanValue returns the index just past the value starting at b[i] (no leading space).
func scanValue(b []byte, i, depth int) (int, error) {
	if i >= len(b) {
		return 0, errSyntax
	}
	switch c := b[i]; {
	case c == '"':
		j, _, err := scanString(b, i)
		return j, err
	case c == '{':
		return scanObject(b, i, depth+1, nil)
	case c == '[':
		if depth+1 > maxDepth {
			return 0, errSyntax
		}
		i = skipSpace(b, i+1)
		if i < len(b) && b[i] == ']' {
			return i + 1, nil
		}
		for {
			j, err := scanValue(b, i, depth+1)
			if err != nil {
				return 0, err
			}
			i = skipSpace(b, j)
			if i >= len(b) {
				return 0, errSyntax
			}
			if b[i] == ']' {
				return i + 1, nil
			}
			if b[i] != ',' {
				return 0, errSyntax
			}
			i = skipSpace(b, i+1)
		}
	case c == '-' || c >= '0' && c <= '9':
		return scanNumber(b, i)
	case c == 't':
		return scanLiteral(b, i, "true")
	case c == 'f':
		return scanLiteral(b, i, "false")
	case c == 'n':
		return scanLiteral(b, i, "null")
	}
	return 0, errSyntax
}

func scanLiteral(b []byte, i int, lit string) (int, error) {
	if len(b)-i < len(lit) || string(b[i:i+len(lit)]) != lit {
		return 0, errSyntax
	}
	return i + len(lit), nil
}

// scanObject scans the object at b[i] == '{'; fn, if set, gets every member.
func scanObject(b []byte, i, depth int, fn func(key, val []byte)) (int, error) {
	if depth > maxDepth {
		return 0, errSyntax
	}
	i = skipSpace(b, i+1)
	if i < len(b) && b[i] == '}' {
		return i + 1, nil
	}
	for {
		if i >= len(b) || b[i] != '"' {
			return 0, errSyntax
		}
		kEnd, kEsc, err := scanString(b, i)
		if err != nil {
			return 0, err
		}
		key := b[i+1 : kEnd-1]
		if kEsc || !isASCII(key) {
			var k string
			if json.Unmarshal(b[i:kEnd], &k) != nil {
				return 0, errSyntax
			}
			key = []byte(k)
		}
		i = skipSpace(b, kEnd)
		if i >= len(b) || b[i] != ':' {
			return 0, errSyntax
		}
		i = skipSpace(b, i+1)
		vEnd, err := scanValue(b, i, depth)
		if err != nil {
			return 0, err
		}
		if fn != nil {
			fn(key, b[i:vEnd])
		}
		i = skipSpace(b, vEnd)
		if i >= len(b) {
			return 0, errSyntax
		}
		if b[i] == '}' {
			return i + 1, nil
		}
		if b[i] != ',' {
			return 0, errSyntax
		}
		i = skipSpace(b, i+1)
	}
}

// ObjectFields validates that line holds exactly one JSON object (whitespace around
// it allowed) and calls fn with every top-level member: the key (unescaped) and the
// raw value. fn is only called while the line is being validated, so a layout must
// not commit what it gathered unless ObjectFields returns nil. Neither slice may be
// kept after fn returns.
func ObjectFields(line []byte, fn func(key, val []byte)) error {
	i := skipSpace(line, 0)
	if i >= len(line) || line[i] != '{' {
		return fmt.Errorf("not a JSON object")
	}
	end, err := scanObject(line, i, 1, fn)
	if err != nil {
		return err
	}
	if skipSpace(line, end) != len(line) {
		return errSyntax
	}
	return nil
}

func isASCII(b []byte) bool {
	for _, c := range b {
		if c >= 0x80 {
			return false
		}
	}
	return true
}

// JSONString decodes a raw JSON string value as encoding/json does (invalid UTF-8
// becomes U+FFFD); ok is false for any other value.
func JSONString(raw []byte) (string, bool) {
	if len(raw) < 2 || raw[0] != '"' {
		return "", false
	}
	inner := raw[1 : len(raw)-1]
	plain := true
	for _, c := range inner {
		if c == '\\' {
			plain = false
			break
		}
	}
	if plain && utf8.Valid(inner) {
		return string(inner), true
	}
	return DecodeJSONString(raw) // what json.Unmarshal gives (FuzzJSONString)
}

// JSONInt decodes a raw JSON number as an integer (truncating a fraction); 0 for
// anything else.
func JSONInt(raw []byte) int64 {
	if n, err := strconv.ParseInt(string(raw), 10, 64); err == nil {
		return n
	}
	if len(raw) > 0 && raw[0] != '"' {
		if f, err := strconv.ParseFloat(string(raw), 64); err == nil {
			return int64(f)
		}
	}
	return 0
}

// JSONTrue reports whether a raw value is the literal true.
func JSONTrue(raw []byte) bool { return string(raw) == "true" }

// jsonMember returns the raw value of the first top-level member key of a JSON
// object, reading no further than that member: an assistant message names its
// model before its (possibly huge) content.
func jsonMember(obj []byte, key string) ([]byte, bool) {
	// Scanned in place (a json.Decoder here was most of what a cold pass of a
	// Claude store allocated): the members are walked up to the first key that
	// matches, each value validated as it is skipped.
	i := skipSpace(obj, 0)
	if i >= len(obj) || obj[i] != '{' {
		return nil, false
	}
	i = skipSpace(obj, i+1)
	if i < len(obj) && obj[i] == '}' {
		return nil, false
	}
	for {
		if i >= len(obj) || obj[i] != '"' {
			return nil, false
		}
		kEnd, kEsc, err := scanString(obj, i)
		if err != nil {
			return nil, false
		}
		match := false
		if k := obj[i+1 : kEnd-1]; !kEsc && isASCII(k) {
			match = string(k) == key
		} else {
			s, ok := JSONString(obj[i:kEnd])
			match = ok && s == key
		}
		i = skipSpace(obj, kEnd)
		if i >= len(obj) || obj[i] != ':' {
			return nil, false
		}
		i = skipSpace(obj, i+1)
		vEnd, err := scanValue(obj, i, 1)
		if err != nil {
			return nil, false
		}
		if match {
			return obj[i:vEnd], true
		}
		i = skipSpace(obj, vEnd)
		if i >= len(obj) || obj[i] != ',' {
			return nil, false
		}
		i = skipSpace(obj, i+1)
	}
}

// TrimJSONSpace cuts JSON's insignificant whitespace (space, tab, newline, CR)
// from both ends of a raw value; bytes.TrimSpace would cut Unicode spaces too.
func TrimJSONSpace(b []byte) []byte {
	for len(b) > 0 && (b[0] == ' ' || b[0] == '\t' || b[0] == '\n' || b[0] == '\r') {
		b = b[1:]
	}
	for len(b) > 0 && (b[len(b)-1] == ' ' || b[len(b)-1] == '\t' || b[len(b)-1] == '\n' || b[len(b)-1] == '\r') {
		b = b[:len(b)-1]
	}
	return b
}

// Members is a line's top-level members from one validating scan, shared by the
// readers of the line: on a cold pass's read workers (prefetch.go) each line is
// scanned once for the layout's fold and every consumer's Prepared, not once by
// each (see MembersLiner, MembersPrepared).
type Members struct {
	line []byte
	mem  []member
	err  error
	add  func(key, val []byte) // bound once
}

type member struct{ key, val []byte }

// Scan validates line as ObjectFields does and records the members it gives fn.
func (m *Members) Scan(line []byte) {
	if m.add == nil {
		m.add = func(key, val []byte) { m.mem = append(m.mem, member{key, val}) }
	}
	clear(m.mem)
	m.line, m.mem = line, m.mem[:0]
	m.err = ObjectFields(line, m.add)
}

// Line is the line last scanned.
func (m *Members) Line() []byte { return m.line }

// ObjectFields is ObjectFields(line, fn): the same calls of fn, in order, and the
// same error (fn is called with the members read before a syntax error, as
// ObjectFields calls it while it validates). When m is the scan of this very line
// (the same bytes in place), the members are handed over from the scan; otherwise
// (m nil, another line) the line is scanned. "This very line" is told by its
// place and length alone: a caller that reads new bytes into the buffer it
// scanned must Scan again before handing m over.
func (m *Members) ObjectFields(line []byte, fn func(key, val []byte)) error {
	if m == nil || len(line) != len(m.line) || len(line) == 0 || &line[0] != &m.line[0] {
		return ObjectFields(line, fn)
	}
	for _, e := range m.mem {
		fn(e.key, e.val)
	}
	return m.err
}

// arrayElems calls fn with each element of the JSON array raw (JSON whitespace
// around it allowed), as json.Unmarshal into []json.RawMessage would give them;
// false, having called nothing, if raw is not a valid JSON array.
func arrayElems(raw []byte, fn func(elem []byte)) bool {
	i := skipSpace(raw, 0)
	if i >= len(raw) || raw[i] != '[' {
		return false
	}
	end, err := scanValue(raw, i, 0)
	if err != nil || skipSpace(raw, end) != len(raw) {
		return false
	}
	j := skipSpace(raw, i+1)
	for raw[j] != ']' {
		e, _ := scanValue(raw, j, 1) // valid: scanned whole above
		fn(raw[j:e])
		j = skipSpace(raw, e)
		if raw[j] == ',' {
			j = skipSpace(raw, j+1)
		}
	}
	return true
}
