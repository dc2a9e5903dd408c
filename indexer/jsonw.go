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
	var high uint64 // any byte >= 0x80 sets a high bit
	i := 0
	for ; i+8 <= len(s); i += 8 {
		x := uint64(s[i]) | uint64(s[i+1])<<8 | uint64(s[i+2])<<16 | uint64(s[i+3])<<24 |
			uint64(s[i+4])<<32 | uint64(s[i+5])<<40 | uint64(s[i+6])<<48 | uint64(s[i+7])<<56
		if swarSpecial(x) {
			return appendJSONStringSlow(b, s)
		}
		high |= x
	}
	for ; i < len(s); i++ {
		c := s[i]
		if c < 0x20 || c == '"' || c == '\\' {
			return appendJSONStringSlow(b, s)
		}
		high |= uint64(c)
	}
	if high&swarHi != 0 && (!utf8.ValidString(s) || strings.Contains(s, "\u2028") || strings.Contains(s, "\u2029")) {
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

// appendSession appends s's catalog line exactly as encoding/json (without HTML
// escaping) renders the Session struct, Tail.MarshalJSON included. A flush renders
// every session of each catalog it rewrites, so this is on the hot path; keeping
// the rendered lines instead would cost a kilobyte of memory per session.
func appendSession(b []byte, s *Session) []byte {
	b = appendSessionSummary(b, s)
	if t := s.Tail; t != nil {
		b = append(b, `,"tail":`...)
		b = appendTail(b, t)
	}
	return append(b, '}')
}

// appendSessionSummary appends s's catalog line without its tail and without the
// closing brace.
func appendSessionSummary(b []byte, s *Session) []byte {
	b = append(b, `{"id":`...)
	b = appendJSONString(b, s.ID)
	b = append(b, `,"type":`...)
	b = appendJSONString(b, s.Type)
	if s.ParentID != "" {
		b = append(b, `,"parentId":`...)
		b = appendJSONString(b, s.ParentID)
	}
	b = append(b, `,"file":`...)
	b = appendJSONString(b, s.File)
	if s.Title != "" {
		b = append(b, `,"title":`...)
		b = appendJSONString(b, s.Title)
	}
	b = append(b, `,"firstPrompt":`...)
	b = appendJSONString(b, s.FirstPrompt)
	b = append(b, `,"createdAt":`...)
	b = appendJSONString(b, s.CreatedAt)
	b = append(b, `,"lastActiveAt":`...)
	b = appendJSONString(b, s.LastActiveAt)
	b = append(b, `,"messageCount":`...)
	b = strconv.AppendInt(b, int64(s.MessageCount), 10)
	b = append(b, `,"sizeBytes":`...)
	b = strconv.AppendInt(b, s.SizeBytes, 10)
	for _, f := range [...]struct{ k, v string }{{`,"provider":`, s.Provider}, {`,"model":`, s.Model}, {`,"gitBranch":`, s.GitBranch}} {
		if f.v != "" {
			b = append(b, f.k...)
			b = appendJSONString(b, f.v)
		}
	}
	if s.Invalid {
		b = append(b, `,"invalid":true`...)
	}
	if s.Corrupt {
		b = append(b, `,"corrupt":true`...)
	}
	if s.Hidden {
		b = append(b, `,"hidden":true`...)
	}
	if s.SkippedLines != 0 {
		b = append(b, `,"skippedLines":`...)
		b = strconv.AppendInt(b, int64(s.SkippedLines), 10)
	}
	return b
}

// appendTail appends t as Tail.MarshalJSON renders it.
func appendTail(b []byte, t *Tail) []byte {
	b = appendTailFixed(b, t)
	if st := t.State; len(st) > 2 && st[0] == '{' && st[len(st)-1] == '}' {
		// The accumulator's keys continue the tail object. State is always
		// compact JSON (see Tail.State), as encoding/json would make it.
		b = append(b, ',')
		return append(b, st[1:]...)
	}
	return append(b, '}')
}

// appendTailFixed appends t's fixed fields as an object without its closing brace.
func appendTailFixed(b []byte, t *Tail) []byte {
	b = append(b, `{"dev":`...)
	b = strconv.AppendUint(b, t.Dev, 10)
	b = append(b, `,"ino":`...)
	b = strconv.AppendUint(b, t.Ino, 10)
	b = append(b, `,"offset":`...)
	b = strconv.AppendInt(b, t.Offset, 10)
	b = append(b, `,"mtime":`...)
	b = strconv.AppendInt(b, t.Mtime, 10)
	b = append(b, `,"size":`...)
	b = strconv.AppendInt(b, t.Size, 10)
	if t.LongLine {
		b = append(b, `,"longLine":true`...)
	}
	for _, f := range [...]struct{ k, v string }{{`,"fp":`, t.Fp}, {`,"hfp":`, t.Hfp}, {`,"dep":`, t.Dep}, {`,"ownProject":`, t.OwnProject}} {
		if f.v != "" {
			b = append(b, f.k...)
			b = appendJSONString(b, f.v)
		}
	}
	return b
}
