package indexer

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"math/bits"
	"strconv"
	"unicode/utf8"

	"github.com/sessionwatch/sessionwatch/internal/avx2"
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
func swarSpecial(x uint64) bool { return swarSpecialMask(x) != 0 }

// swarSpecialMask has the high bit of each byte of x that is '"', '\\' or below
// 0x20 set, and maybe of bytes above the first such byte (a borrow carries only
// upwards): its lowest set bit marks the first special byte exactly.
func swarSpecialMask(x uint64) uint64 {
	// Flipping bit 1 turns '"' (0x22) into 0x20 and keeps the control bytes
	// below 0x20 (and ' ', '!' above it), so one has-less-than-0x21 test finds
	// both; the has-zero-byte test of x^'\\' finds the backslashes.
	q := x ^ (swarLo * 0x02)
	bs := x ^ (swarLo * '\\')
	return ((q-swarLo*0x21)&^q | (bs-swarLo)&^bs) & swarHi
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
	if i+8 <= len(b) {
		if m := swarSpecialMask(binary.LittleEndian.Uint64(b[i:])); m == 0 {
			// Not a short string: its runs of plain bytes (a message's text)
			// are crossed 64 bytes at a time.
			var err error
			if i, escaped, err = scanStringBlocks(b, i+8); err != nil {
				return 0, false, err
			}
		} else if j := i + bits.TrailingZeros64(m)>>3; b[j] == '"' {
			// A short string (a key, most values), closed in its first 8
			// bytes: told by the mask at hand.
			return j + 1, false, nil
		}
	}
	for {
		// Eight bytes at a time while none is a quote, a backslash or a control
		// byte, then straight to the first that is; byte by byte in the last
		// few bytes of b.
		if i+8 <= len(b) {
			m := swarSpecialMask(binary.LittleEndian.Uint64(b[i:]))
			if m == 0 {
				i += 8
				continue
			}
			i += bits.TrailingZeros64(m) >> 3
		} else {
			for i < len(b) && !strSpecial[b[i]] {
				i++
			}
			if i >= len(b) {
				return 0, false, errSyntax
			}
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

// scanStringBlocks crosses a string's bytes from b[i] on, 64 at a time, up to
// its closing quote, a control byte or b's last 64 bytes. It returns where the
// string's scan goes on, whether it crossed an escape, and the error of an
// escape that is not JSON's.
func scanStringBlocks(b []byte, i int) (int, bool, error) {
	escaped := false
	for i+64 <= len(b) {
		x, bs, esc := scanMasks(b[i : i+64 : i+64])
		if bs != 0 && bs&(bs<<1) == 0 && bs>>59 == 0 && (bs<<1)&^esc == 0 {
			// Every backslash of the block is a simple escape within it (no
			// \u, no backslash escaped or escaping a backslash, none at the
			// block's end: most text's \n and \"): crossed at once, its
			// letter a separator. Those before the first special byte left,
			// if any, are the string's.
			x &^= bs | bs<<1
			if x != 0 {
				t := bits.TrailingZeros64(x)
				return i + t, escaped || bs&(1<<t-1) != 0, nil
			}
			escaped = true
			i += 64
			continue
		}
		next := i + 64
		for x != 0 {
			t := bits.TrailingZeros64(x)
			if b[i+t] != '\\' {
				// The closing quote or a control byte: scanString's.
				return i + t, escaped, nil
			}
			if t > 58 {
				next = i + t // an escape that may run past the block: the next one's
				break
			}
			escaped = true
			switch b[i+t+1] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				x &^= 3 << t // the escape's letter is no quote or backslash
			case 'u':
				for _, h := range b[i+t+2 : i+t+6] {
					if !('0' <= h && h <= '9' || 'a' <= h && h <= 'f' || 'A' <= h && h <= 'F') {
						return 0, false, errSyntax
					}
				}
				x &^= 1 << t
			default:
				return 0, false, errSyntax
			}
		}
		i = next
	}
	return i, escaped, nil
}

// useAVX2 is whether scanMasks runs the vector code (specials_amd64.go): AVX2
// on amd64, the purego tag not set (tests switch it off to run the fallback).
var useAVX2 = avx2.Supported

// specials64 is the bitmap of the bytes of b[:64] that are '"', '\\' or below
// 0x20, exactly (bit j for b[j]): scanMasks' first result in pure Go
// (specials_amd64.go).
func specials64(b []byte) uint64 {
	b = b[:64]
	return pack8(specials8(binary.LittleEndian.Uint64(b[0:]))) |
		pack8(specials8(binary.LittleEndian.Uint64(b[8:])))<<8 |
		pack8(specials8(binary.LittleEndian.Uint64(b[16:])))<<16 |
		pack8(specials8(binary.LittleEndian.Uint64(b[24:])))<<24 |
		pack8(specials8(binary.LittleEndian.Uint64(b[32:])))<<32 |
		pack8(specials8(binary.LittleEndian.Uint64(b[40:])))<<40 |
		pack8(specials8(binary.LittleEndian.Uint64(b[48:])))<<48 |
		pack8(specials8(binary.LittleEndian.Uint64(b[56:])))<<56
}

// specials8 has the high bit of each byte of x that is '"', '\\' or below 0x20
// set, exactly: as swarSpecialMask, each byte's test kept within its byte.
func specials8(x uint64) uint64 {
	const lo7 = swarLo * 0x7f
	lx := x & lo7
	q := lx ^ (swarLo * 0x02)  // '"' below 0x21, as the control bytes
	bs := lx ^ (swarLo * '\\') // a backslash 0
	return ^((q+swarLo*(0x80-0x21))&(bs+lo7) | x) & swarHi
}

// pack8 gathers the high bits of m's bytes (its other bits clear) into its low
// 8 bits, byte 0's lowest.
func pack8(m uint64) uint64 {
	return (m >> 7) * 0x0102040810204080 >> 56
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
func scanValue(b []byte, i, depth int) (int, error) { return scanValueRec(b, i, depth, nil) }

// scanValueRec is scanValue recording the objects nested in the value in rec
// (nil: none).
func scanValueRec(b []byte, i, depth int, rec *Members) (int, error) {
	if i >= len(b) {
		return 0, errSyntax
	}
	switch c := b[i]; {
	case c == '"':
		j, _, err := scanString(b, i)
		return j, err
	case c == '{':
		return scanObject(b, i, depth+1, nil, rec)
	case c == '[':
		if depth+1 > maxDepth {
			return 0, errSyntax
		}
		i = skipSpace(b, i+1)
		if i < len(b) && b[i] == ']' {
			return i + 1, nil
		}
		for {
			j, err := scanValueRec(b, i, depth+1, rec)
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
// With rec set, the object's members go to rec.mem if it is the line's (depth
// 1), and the objects nested in it are recorded in rec with their members.
func scanObject(b []byte, i, depth int, fn func(key, val []byte), rec *Members) (int, error) {
	if depth > maxDepth {
		return 0, errSyntax
	}
	o, last := -1, -1 // the object's place in rec.objs, its last member's in rec.sub
	if rec != nil && depth > 1 {
		o = len(rec.objs)
		rec.objs = append(rec.objs, objSpan{start: int32(i), end: -1, first: -1})
	}
	i = skipSpace(b, i+1)
	if i < len(b) && b[i] == '}' {
		if o >= 0 {
			rec.objs[o].end = int32(i + 1)
		}
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
		// A key no one is given needs no decoding: scanString has validated it.
		decoded := (fn != nil || rec != nil) && (kEsc || !isASCII(key))
		if decoded {
			var k string
			if json.Unmarshal(b[i:kEnd], &k) != nil {
				return 0, errSyntax
			}
			key = []byte(k)
			if rec != nil {
				rec.copied = true
			}
		}
		kStart := i + 1
		i = skipSpace(b, kEnd)
		if i >= len(b) || b[i] != ':' {
			return 0, errSyntax
		}
		i = skipSpace(b, i+1)
		vEnd, err := scanValueRec(b, i, depth, rec)
		if err != nil {
			return 0, err
		}
		if fn != nil {
			fn(key, b[i:vEnd])
		}
		if rec != nil && depth == 1 {
			rec.mem = append(rec.mem, member{key, b[i:vEnd]})
		}
		if o >= 0 {
			e := subMember{kStart: int32(kStart), kEnd: int32(kEnd - 1), vStart: int32(i), vEnd: int32(vEnd), next: -1}
			if decoded {
				rec.keys = append(rec.keys, key) // unescaped into a copy
				e.kStart, e.kEnd = -int32(len(rec.keys)), 0
			}
			n := int32(len(rec.sub))
			rec.sub = append(rec.sub, e)
			if last < 0 {
				rec.objs[o].first = n
			} else {
				rec.sub[last].next = n
			}
			last = int(n)
		}
		i = skipSpace(b, vEnd)
		if i >= len(b) {
			return 0, errSyntax
		}
		if b[i] == '}' {
			if o >= 0 {
				rec.objs[o].end = int32(i + 1)
			}
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
	return objectFields(line, fn, nil)
}

// objectFields is ObjectFields recording the objects nested in the line in rec
// (nil: none).
func objectFields(line []byte, fn func(key, val []byte), rec *Members) error {
	i := skipSpace(line, 0)
	if i >= len(line) || line[i] != '{' {
		return fmt.Errorf("not a JSON object")
	}
	end, err := scanObject(line, i, 1, fn, rec)
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
	// Eight bytes at a time while all are ASCII and none is a backslash: most
	// strings are, and are then copied as they are without another pass.
	i := 0
	for ; i+8 <= len(inner); i += 8 {
		x := binary.LittleEndian.Uint64(inner[i:])
		bs := x ^ (swarLo * '\\')
		if (x|(bs-swarLo)&^bs)&swarHi != 0 {
			break
		}
	}
	plain := bytes.IndexByte(inner[i:], '\\') < 0
	if plain && utf8.Valid(inner[i:]) {
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
//
// The scan also records every object nested in the line (in members, in arrays,
// at any depth) that it crossed whole, with its members: a reader that looks into
// a member (a message, its usage, a payload) with ObjectFields is handed those
// too, rather than validating the bytes again.
type Members struct {
	line []byte
	mem  []member
	err  error
	objs []objSpan   // the nested objects scanned whole, by start
	sub  []subMember // their members
	keys [][]byte    // their keys that were unescaped into copies
	// Whether a key of the line (at any depth) was unescaped into a copy
	// (KeyText cannot tell where its text is).
	copied bool
}

type member struct{ key, val []byte }

// objSpan is a nested object of the line: line[start:end], its first member
// sub[first] (-1: none), the others linked by next. end is -1 until the object
// is scanned whole. (Offsets, not slices: the records hold no pointers, which
// the collector would have to look at.)
type objSpan struct{ start, end, first int32 }

// subMember is a member of a nested object: its key line[kStart:kEnd] (or
// keys[-kStart-1] if kStart < 0) and its value line[vStart:vEnd].
type subMember struct {
	kStart, kEnd, vStart, vEnd int32
	next                       int32 // the next member of the object in sub; -1: none
}

// Scan validates line as ObjectFields does and records the members it gives fn.
func (m *Members) Scan(line []byte) {
	clear(m.mem)
	clear(m.keys)
	m.line, m.mem, m.objs, m.sub, m.keys, m.copied = line, m.mem[:0], m.objs[:0], m.sub[:0], m.keys[:0], false
	if len(line) > math.MaxInt32 {
		// The records' offsets would not fit: nothing nested is recorded.
		m.err = objectFields(line, func(key, val []byte) { m.mem = append(m.mem, member{key, val}) }, nil)
		return
	}
	m.err = objectFields(line, nil, m)
}

// KeyText is bytes.Contains(line, []byte(`"`+key+`"`+after)) told from the
// scan, without reading the line again: known is false when the scan cannot
// tell (m nil, line not the line last scanned in place, the line not valid
// JSON, a key unescaped into a copy, key not made of ASCII letters, digits and
// '_', or after not starting with ':').
//
// In a valid line such text is a member's key and what follows it: its first
// quote opens a string (a closing quote is followed by no letter, and one
// within a string is escaped; then the string, ending with that escape and the
// key, would be a key with a backslash in it: unescaped into a copy), which
// ends right after key, a ':' after it.
func (m *Members) KeyText(line []byte, key, after string) (found, known bool) {
	if m == nil || len(line) == 0 || len(line) != len(m.line) || &line[0] != &m.line[0] ||
		m.err != nil || m.copied || len(line) > math.MaxInt32 || !plainKey(key) || after == "" || after[0] != ':' {
		return false, false
	}
	at := func(q int) bool { // the key's closing quote is line[q]
		return len(line)-(q+1) >= len(after) && string(line[q+1:q+1+len(after)]) == after
	}
	for _, e := range m.mem {
		if string(e.key) == key {
			if off := cap(line) - cap(e.key); off > 0 && off < len(line) && &line[off] == &e.key[0] && at(off+len(key)) {
				return true, true
			}
		}
	}
	for _, e := range m.sub {
		if int(e.kEnd-e.kStart) == len(key) && string(line[e.kStart:e.kEnd]) == key && at(int(e.kEnd)) {
			return true, true
		}
	}
	return false, true
}

// plainKey reports whether key is a non-empty run of ASCII letters, digits and '_'.
func plainKey(key string) bool {
	for i := 0; i < len(key); i++ {
		if c := key[i]; !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '_') {
			return false
		}
	}
	return key != ""
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
//
// So is an object nested in the line that the scan crossed whole, when line is
// exactly its bytes in place (as a member's value is handed out): its members are
// those ObjectFields would give, and the error nil (the object is valid, whatever
// follows it in the line).
func (m *Members) ObjectFields(line []byte, fn func(key, val []byte)) error {
	if m == nil || len(line) == 0 || len(m.line) == 0 {
		return ObjectFields(line, fn)
	}
	if len(line) == len(m.line) && &line[0] == &m.line[0] {
		for _, e := range m.mem {
			fn(e.key, e.val)
		}
		return m.err
	}
	if m.Nested(line, fn) {
		return nil
	}
	return ObjectFields(line, fn)
}

// nested finds the nested object whose bytes are exactly raw, in place.
func (m *Members) nested(raw []byte) (objSpan, bool) {
	// A slice inside the line ends in the same array: its capacity tells its
	// offset, which the address of the byte there confirms.
	off := cap(m.line) - cap(raw)
	if off <= 0 || off >= len(m.line) || &m.line[off] != &raw[0] || len(m.objs) == 0 {
		return objSpan{}, false
	}
	lo, hi := 0, len(m.objs)
	for lo < hi {
		h := int(uint(lo+hi) >> 1)
		if int(m.objs[h].start) < off {
			lo = h + 1
		} else {
			hi = h
		}
	}
	if lo < len(m.objs) && int(m.objs[lo].start) == off && int(m.objs[lo].end) == off+len(raw) {
		return m.objs[lo], true
	}
	return objSpan{}, false
}

// arrayElems calls fn with each element of the JSON array raw (JSON whitespace
// around it allowed), as json.Unmarshal into []json.RawMessage would give them;
// false, having called nothing, if raw is not a valid JSON array.
func arrayElems(raw []byte, fn func(elem []byte)) bool {
	i := skipSpace(raw, 0)
	if i >= len(raw) || raw[i] != '[' {
		return false
	}
	// One pass, as scanValue(raw, i, 0) validates the array, its elements'
	// bounds kept to be handed out once it is valid: an element (a message's
	// text) is not scanned twice.
	var spans [16][2]int
	elems := spans[:0]
	j := skipSpace(raw, i+1)
	if j < len(raw) && raw[j] == ']' {
		j++
	} else {
		for {
			e, err := scanValue(raw, j, 1)
			if err != nil {
				return false
			}
			elems = append(elems, [2]int{j, e})
			j = skipSpace(raw, e)
			if j >= len(raw) {
				return false
			}
			if raw[j] == ']' {
				j++
				break
			}
			if raw[j] != ',' {
				return false
			}
			j = skipSpace(raw, j+1)
		}
	}
	if skipSpace(raw, j) != len(raw) {
		return false
	}
	for _, e := range elems {
		fn(raw[e[0]:e[1]])
	}
	return true
}
