package indexer

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"
	"unicode/utf16"
	"unicode/utf8"
)

// The line scan, the string decoders and the Gemini and llxprt content readers as
// they were before the scan recorded the line's nested objects and the readers
// took them from it (b8cbf71): the oracle FuzzScanOracle holds the new ones to.

func oldswarSpecial(x uint64) bool {
	less := (x - swarLo*0x20) &^ x
	q := x ^ (swarLo * '"')
	bs := x ^ (swarLo * '\\')
	return (less|(q-swarLo)&^q|(bs-swarLo)&^bs)&swarHi != 0
}
func oldscanString(b []byte, i int) (int, bool, error) {
	i++
	escaped := false
	for {
		// Eight bytes at a time while none is a quote, a backslash or a control byte.
		for i+8 <= len(b) && !oldswarSpecial(binary.LittleEndian.Uint64(b[i:])) {
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
func oldscanValue(b []byte, i, depth int) (int, error) {
	if i >= len(b) {
		return 0, errSyntax
	}
	switch c := b[i]; {
	case c == '"':
		j, _, err := oldscanString(b, i)
		return j, err
	case c == '{':
		return oldscanObject(b, i, depth+1, nil)
	case c == '[':
		if depth+1 > maxDepth {
			return 0, errSyntax
		}
		i = skipSpace(b, i+1)
		if i < len(b) && b[i] == ']' {
			return i + 1, nil
		}
		for {
			j, err := oldscanValue(b, i, depth+1)
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
func oldscanObject(b []byte, i, depth int, fn func(key, val []byte)) (int, error) {
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
		kEnd, kEsc, err := oldscanString(b, i)
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
		vEnd, err := oldscanValue(b, i, depth)
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
func oldObjectFields(line []byte, fn func(key, val []byte)) error {
	i := skipSpace(line, 0)
	if i >= len(line) || line[i] != '{' {
		return fmt.Errorf("not a JSON object")
	}
	end, err := oldscanObject(line, i, 1, fn)
	if err != nil {
		return err
	}
	if skipSpace(line, end) != len(line) {
		return errSyntax
	}
	return nil
}
func oldJSONString(raw []byte) (string, bool) {
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
	return oldDecodeJSONString(raw) // what json.Unmarshal gives (FuzzJSONString)
}
func oldDecodeJSONString(raw []byte) (string, bool) {
	raw = TrimJSONSpace(raw)
	if len(raw) < 2 || raw[0] != '"' || raw[len(raw)-1] != '"' {
		return "", false
	}
	in := raw[1 : len(raw)-1]
	i := 0
	for i < len(in) {
		c := in[i]
		if c == '\\' || c == '"' || c < 0x20 || c >= utf8.RuneSelf {
			break
		}
		i++
	}
	if i == len(in) {
		return string(in), true
	}
	out := make([]byte, 0, len(in)+8)
	out = append(out, in[:i]...)
	for i < len(in) {
		c := in[i]
		switch {
		case c == '\\':
			if i+1 >= len(in) {
				return "", false
			}
			switch e := in[i+1]; e {
			case '"', '\\', '/':
				out = append(out, e)
			case 'b':
				out = append(out, '\b')
			case 'f':
				out = append(out, '\f')
			case 'n':
				out = append(out, '\n')
			case 'r':
				out = append(out, '\r')
			case 't':
				out = append(out, '\t')
			case 'u':
				r, ok := Hex4(in[i+2:]) // i+1 < len(in): in[i+2:] is at most empty
				if !ok {
					return "", false
				}
				i += 6
				if utf16.IsSurrogate(r) {
					if i+1 < len(in) && in[i] == '\\' && in[i+1] == 'u' {
						if r2, ok := Hex4(in[i+2:]); ok {
							if d := utf16.DecodeRune(r, r2); d != utf8.RuneError {
								out = utf8.AppendRune(out, d)
								i += 6
								continue
							}
						}
					}
					r = utf8.RuneError
				}
				out = utf8.AppendRune(out, r)
				continue
			default:
				return "", false
			}
			i += 2
		case c == '"' || c < 0x20:
			return "", false
		case c < utf8.RuneSelf:
			j := i + 1 // a run of plain ASCII at once
			for j < len(in) && plainASCII[in[j]] {
				j++
			}
			out = append(out, in[i:j]...)
			i = j
		default:
			r, n := utf8.DecodeRune(in[i:])
			if r == utf8.RuneError && n == 1 {
				out = utf8.AppendRune(out, utf8.RuneError)
			} else {
				out = append(out, in[i:i+n]...)
			}
			i += n
		}
	}
	return string(out), true
}

func oldNormTime(s string) string {
	if s == "" {
		return ""
	}
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return ""
	}
	return FormatTime(t)
}

func oldJsObject(raw []byte) (map[string]json.RawMessage, error) {
	m := map[string]json.RawMessage{}
	if err := oldObjectFields(raw, func(k, v []byte) { m[string(k)] = v }); err != nil {
		if t := bytes.TrimSpace(raw); len(t) > 0 && t[0] != '{' {
			return nil, errJSNotObject
		}
		return nil, err
	}
	return m, nil
}

func oldJsStr(raw json.RawMessage) string {
	s, _ := oldJSONString(bytes.TrimSpace(raw))
	return s
}

func oldGeminiVerboseText(raw json.RawMessage) string {
	var b strings.Builder
	var add func(raw json.RawMessage, depth int)
	add = func(raw json.RawMessage, depth int) {
		raw = bytes.TrimSpace(raw)
		if len(raw) == 0 || depth > geminiMaxPartDepth {
			return
		}
		switch raw[0] {
		case '"':
			s, _ := oldJSONString(raw)
			b.WriteString(s)
		case '{':
			part, err := oldJsObject(raw)
			if err != nil {
				return
			}
			for _, k := range geminiMarkedParts {
				if _, ok := part[k]; ok {
					b.WriteString("[" + k + "]")
					return
				}
			}
			b.WriteString(oldJsStr(part["text"]))
		case '[':
			var parts []json.RawMessage
			if json.Unmarshal(raw, &parts) == nil {
				for _, p := range parts {
					add(p, depth+1)
				}
			}
		}
	}
	add(raw, 0)
	return strings.TrimSpace(b.String())
}

func oldGeminiText(raw json.RawMessage) string {
	var b strings.Builder
	var add func(raw json.RawMessage, nested bool)
	add = func(raw json.RawMessage, nested bool) {
		raw = bytes.TrimSpace(raw)
		if len(raw) == 0 {
			return
		}
		switch raw[0] {
		case '"':
			s, _ := oldJSONString(raw)
			b.WriteString(s)
		case '{':
			if part, err := oldJsObject(raw); err == nil {
				b.WriteString(oldJsStr(part["text"]))
			}
		case '[':
			if !nested {
				var parts []json.RawMessage
				if json.Unmarshal(raw, &parts) == nil {
					for _, p := range parts {
						add(p, true)
					}
				}
			}
		}
	}
	add(raw, false)
	return strings.TrimSpace(b.String())
}

func oldLlxprtHumanText(raw json.RawMessage) string {
	c, err := oldJsObject(raw)
	if err != nil || oldJsStr(c["speaker"]) != "human" {
		return ""
	}
	var blocks []json.RawMessage
	if json.Unmarshal(c["blocks"], &blocks) != nil {
		return ""
	}
	var b strings.Builder
	for _, br := range blocks {
		blk, err := oldJsObject(br)
		if err != nil || oldJsStr(blk["type"]) != "text" {
			continue
		}
		b.WriteString(oldJsStr(blk["text"]))
	}
	return Prompt(b.String())
}

// scanReport renders what the readers make of v, with old's or the new code.
func scanReport(v []byte, m *Members, old bool) string {
	var sb strings.Builder
	members := func(err error) { fmt.Fprintf(&sb, " err=%v;", err != nil) }
	if old {
		members(oldObjectFields(v, func(k, e []byte) { fmt.Fprintf(&sb, "%q=%q,", k, e) }))
		s, ok := oldJSONString(v)
		d, dok := oldDecodeJSONString(v)
		fmt.Fprintf(&sb, "str %q %v dec %q %v|", s, ok, d, dok)
		fmt.Fprintf(&sb, "verbose %q text %q llxprt %q|", oldGeminiVerboseText(v), oldGeminiText(v), oldLlxprtHumanText(v))
		if ok {
			tm, err := time.Parse(time.RFC3339Nano, s)
			if err != nil {
				tm = time.Time{}
			}
			fmt.Fprintf(&sb, "time %q %d %s %v", oldNormTime(s), tm.UnixNano(), tm, err == nil)
		}
		return sb.String()
	}
	members(m.ObjectFields(v, func(k, e []byte) { fmt.Fprintf(&sb, "%q=%q,", k, e) }))
	s, ok := JSONString(v)
	d, dok := DecodeJSONString(v)
	fmt.Fprintf(&sb, "str %q %v dec %q %v|", s, ok, d, dok)
	fmt.Fprintf(&sb, "verbose %q text %q llxprt %q|", geminiVerboseText(v, m), geminiText(v, m), llxprtHumanText(v, m))
	if ok {
		tm, tok := ParseRFC3339(s)
		fmt.Fprintf(&sb, "time %q %d %s %v", NormTime(s), tm.UnixNano(), ParseTime(s), tok)
	}
	return sb.String()
}

// FuzzScanOracle: for a line and every value in it at any depth (in place, as the
// layouts hand them over, and in a copy), the members, strings, times and the
// Gemini and llxprt content the new code reads, with the line's scan and
// without, are what the old code read; nothing read aliases the line's buffer.
func FuzzScanOracle(f *testing.F) {
	for _, s := range []string{
		`{"a":1,"b":[1,2,{"c":"d"}],"e":"f\"g"}`, `{}`, ` {"x":null} `, `{"a":1,"b":`, `{"a":1}{`, `{"a":{"b":1}} x`,
		`{"k\u00e9y":"v","k\\"2":true,"t\u0079pe":"text","type":"Text","Type":"text"}`, `{"a":{"x":1,"x":2,"X":3}}`,
		`{"content":[{"text":"a"},"b",["c",{"text":"d"}],{"inlineData":{}},7,null,{"t\u0065xt":"e"}]}`,
		`{"content":{"speaker":"human","blocks":[{"type":"text","text":"p1"},{"type":"text","text":"p2"},3,{"type":"t\u0065xt","text":"p3"}]}}`,
		`{"content":{"speaker":"human","blocks":null}}`, `{"content":{"speaker":"human","blocks":[{"type":"text","text":"a"},{"type":"text","text":"b"}],"blocks":"x"}}`,
		`{"ts":"2026-03-01T10:00:00.532Z","ts2":"2024-02-29T23:59:59.999Z","a":"2026-03-01t10:00:00.000z","b":"2026-12-31T23:59:60.000Z","c":"0999-01-01T00:00:00.000Z","d":"2026-03-01T12:00:00.5+02:00"}`,
		"{\"a\":\"0123456789\x00abcdef\",\"b\":\"0123456789abcdef\xff\xfe\",\"c\":\"\xe6\x9d\xb1\xe4\xba\xac0123456789\\u00e9\"}",
		`{"a":"0123456789abcdef\`, `{"a":"0123456\u00`, `{"a":[{"b":{"c":{"d":[{"e":{}}]}}}],"f":{"g":-0.5e+3,"h":1E400}}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, line []byte) {
		orig := bytes.Clone(line)
		buf := append(make([]byte, 0, len(line)+8), line...)
		var m Members
		m.Scan(buf)
		type res struct{ where, got, want string }
		var out []res
		check := func(where string, v []byte, mm *Members) {
			// v is a slice of buf; the oracle reads the same bytes in orig.
			off := cap(buf) - cap(v)
			ov := orig[off : off+len(v)]
			out = append(out, res{where + fmt.Sprintf(" %q", v), scanReport(v, mm, false), scanReport(ov, nil, true)})
			out = append(out, res{where + " copy", scanReport(bytes.Clone(v), mm, false), ""})
			out[len(out)-1].want = out[len(out)-2].want
		}
		check("line", buf, &m)
		check("line no scan", buf, nil)
		var walk func(v []byte, depth int)
		walk = func(v []byte, depth int) {
			if len(v) == 0 || depth > 12 {
				return
			}
			check("value", v, &m)
			check("value no scan", v, nil)
			// and the slices that start with it but end elsewhere
			if len(v) > 1 {
				check("value cut", v[:len(v)-1], &m)
			}
			if off := cap(buf) - cap(v); off+len(v) < len(buf) {
				check("value and the byte after", buf[off:off+len(v)+1], &m)
			}
			switch v[0] {
			case '{':
				oldObjectFields(v, func(_, e []byte) { walk(e, depth+1) })
			case '[':
				arrayElems(v, func(e []byte) { walk(e, depth+1) })
			}
		}
		oldObjectFields(buf, func(_, v []byte) { walk(v, 0) })
		for i := range buf {
			buf[i] = 'Q' // the reader's next line
		}
		for _, r := range out {
			if r.got != r.want {
				t.Fatalf("%s in %q:\n got %s\nwant %s", r.where, orig, r.got, r.want)
			}
		}
	})
}
