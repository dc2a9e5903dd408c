package indexer

import (
	"strconv"
	"strings"
	"unicode/utf8"
)

// appendJSONString appends s as a JSON string exactly as encoding/json renders it
// with SetEscapeHTML(false). The common case (no quote, backslash, control byte,
// invalid UTF-8, U+2028 or U+2029) is copied as is; the rest goes through
// marshalNoEscape, so the two never disagree.
func appendJSONString(b []byte, s string) []byte {
	ascii := true
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c < 0x20 || c == '"' || c == '\\' {
			return appendJSONStringSlow(b, s)
		}
		if c >= utf8.RuneSelf {
			ascii = false
		}
	}
	if !ascii && (!utf8.ValidString(s) || strings.Contains(s, "\u2028") || strings.Contains(s, "\u2029")) {
		return appendJSONStringSlow(b, s)
	}
	b = append(b, '"')
	b = append(b, s...)
	return append(b, '"')
}

func appendJSONStringSlow(b []byte, s string) []byte {
	enc, err := marshalNoEscape(s)
	if err != nil { // a Go string always encodes
		panic(err)
	}
	return append(b, enc...)
}

// indentObject appends the members of one pretty-printed JSON object (or the
// elements of an array), as encoding/json's SetIndent("", "  ") lays them out: each
// member on its own line at depth+1, the closing bracket at depth.
type indentObject struct {
	b     []byte
	depth int
	n     int
	array bool
}

// elem starts the next member's line; for an array it is the whole element prefix.
func (o *indentObject) elem() {
	if o.n > 0 {
		o.b = append(o.b, ',')
	}
	o.n++
	o.b = append(o.b, '\n')
	for range o.depth + 1 {
		o.b = append(o.b, ' ', ' ')
	}
}

func (o *indentObject) key(k string) {
	o.elem()
	o.b = appendJSONString(o.b, k)
	o.b = append(o.b, ':', ' ')
}

func (o *indentObject) bool(k string, v bool) {
	o.key(k)
	o.b = strconv.AppendBool(o.b, v)
}

func (o *indentObject) str(k, v string) {
	o.key(k)
	o.b = appendJSONString(o.b, v)
}

func (o *indentObject) int(k string, v int64) {
	o.key(k)
	o.b = strconv.AppendInt(o.b, v, 10)
}

// end closes the object ("{}" when it has no members) or array ("[]").
func (o *indentObject) end() {
	if o.n > 0 {
		o.b = append(o.b, '\n')
		for range o.depth {
			o.b = append(o.b, ' ', ' ')
		}
	}
	if o.array {
		o.b = append(o.b, ']')
	} else {
		o.b = append(o.b, '}')
	}
}
