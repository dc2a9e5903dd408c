package search

import (
	"bytes"
	"encoding/binary"
	"math/bits"

	"github.com/sessionwatch/sessionwatch/indexer"
)

// The extractors validate each line once, as a whole (indexer.ObjectFields); the
// members they then look into (a message, its content blocks, a payload) are
// parts of that valid line, so they are walked here without validating them
// again: a string is crossed by searching for its closing quote
// (bytes.IndexByte), not byte by byte. Tool outputs, most of a transcript's
// bytes, are crossed that way when search.tool_output is off. On JSON that is not
// valid these walkers stop or skip quietly; they never read out of bounds.

// fields calls fn with every member of the valid JSON object obj: the key
// (unescaped, as indexer.ObjectFields gives it) and the raw value. Anything but
// an object calls nothing.
func fields(obj []byte, fn func(key, val []byte)) {
	i := skipWS(obj, 0)
	if i >= len(obj) || obj[i] != '{' {
		return
	}
	i = skipWS(obj, i+1)
	for i < len(obj) && obj[i] == '"' {
		kEnd := skipString(obj, i)
		if kEnd <= i {
			return
		}
		key := obj[i+1 : kEnd-1]
		if plainKey(key) < 0 {
			k, _ := indexer.JSONString(obj[i:kEnd])
			key = []byte(k)
		}
		i = skipWS(obj, kEnd)
		if i >= len(obj) || obj[i] != ':' {
			return
		}
		i = skipWS(obj, i+1)
		vEnd := skipValue(obj, i)
		if vEnd <= i {
			return
		}
		fn(key, obj[i:vEnd])
		i = skipWS(obj, vEnd)
		if i >= len(obj) || obj[i] != ',' {
			return
		}
		i = skipWS(obj, i+1)
	}
}

// plainKey returns -1 if key holds an escape or a byte that is not ASCII (it is
// then decoded), else 0.
func plainKey(key []byte) int {
	for _, c := range key {
		if c == '\\' || c >= 0x80 {
			return -1
		}
	}
	return 0
}

func skipWS(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r') {
		i++
	}
	return i
}

// skipString returns the index just past the string starting at b[i] == '"', or
// i if it is not closed.
func skipString(b []byte, i int) int {
	j := i + 1
	for {
		k := quoteIn8(b, j) // most strings (keys, types) are short: no call
		if k < 0 {
			if k = bytes.IndexByte(b[j:], '"'); k < 0 {
				return i
			}
		}
		j += k
		// The quote is escaped if an odd number of backslashes precede it.
		n := 0
		for p := j - 1; p > i && b[p] == '\\'; p-- {
			n++
		}
		j++
		if n%2 == 0 {
			return j
		}
	}
}

// quoteIn8 returns where the first quote of b[j:j+8] is, from j; -1 if there
// is none or b has fewer than 8 bytes from j.
func quoteIn8(b []byte, j int) int {
	if len(b)-j < 8 {
		return -1
	}
	const each, hi = 0x0101010101010101, 0x8080808080808080
	x := binary.LittleEndian.Uint64(b[j:j+8]) ^ '"'*each // a quote is a 0 byte
	// The lowest 0 byte of x is found exactly (a borrow marks only bytes above it).
	if m := (x - each) &^ x & hi; m != 0 {
		return bits.TrailingZeros64(m) / 8
	}
	return -1
}

// valueEnd marks the bytes skipValue stops at inside a container: quotes,
// brackets and braces.
var valueEnd = func() (t [256]bool) {
	for _, c := range `"{}[]` {
		t[c] = true
	}
	return t
}()

// skipValue returns the index just past the JSON value starting at b[i], or i if
// it is truncated. Inside a container only quotes and brackets are looked at.
// A scalar ends at a comma, a closing bracket or space.
func skipValue(b []byte, i int) int {
	if i >= len(b) {
		return i
	}
	switch b[i] {
	case '"':
		return skipString(b, i)
	case '{', '[':
		depth := 0
		for j := i; j < len(b); {
			for j < len(b) && !valueEnd[b[j]] {
				j++
			}
			if j >= len(b) {
				break
			}
			switch b[j] {
			case '"':
				e := skipString(b, j)
				if e <= j {
					return i
				}
				j = e
				continue
			case '{', '[':
				depth++
			default:
				depth--
				if depth == 0 {
					return j + 1
				}
				if depth < 0 {
					return i
				}
			}
			j++
		}
		return i
	}
	j := i
	for j < len(b) && b[j] != ',' && b[j] != '}' && b[j] != ']' && b[j] != ' ' && b[j] != '\t' && b[j] != '\n' && b[j] != '\r' {
		j++
	}
	return j
}

// The same walkers, handed the line's members as the indexer's read worker
// scanned them (m, nil if none): an object the scan recorded is taken from its
// records (indexer.Members.Nested, ObjectLen) without crossing its bytes again;
// anything else is walked as above. They call fn exactly as those do.

// fieldsOf is fields(obj, fn).
func fieldsOf(m *indexer.Members, obj []byte, fn func(key, val []byte)) {
	if !m.Nested(obj, fn) {
		fields(obj, fn)
	}
}

// eachElemOf is eachElem(arr, fn), crossing an element the scan m recorded (an
// object in place in m's line) by its recorded length instead of a walk.
func eachElemOf(m *indexer.Members, arr []byte, fn func(elem []byte)) {
	arr = indexer.TrimJSONSpace(arr)
	if len(arr) < 2 || arr[0] != '[' {
		return
	}
	i := 1
	for i < len(arr) {
		for i < len(arr) && (arr[i] == ' ' || arr[i] == '\t' || arr[i] == '\n' || arr[i] == '\r' || arr[i] == ',') {
			i++
		}
		if i >= len(arr) || arr[i] == ']' {
			return
		}
		end := i
		if n, ok := m.ObjectLen(arr[i:]); ok { // false for a nil m
			end = i + n
		} else {
			end = skipValue(arr, i)
		}
		if end <= i {
			return
		}
		fn(arr[i:end])
		i = end
	}
}
