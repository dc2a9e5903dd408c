package indexer

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math/bits"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"unicode/utf8"
)

// FuzzObjectFields checks ObjectFields against encoding/json: it accepts exactly
// the lines json.Valid accepts that hold an object, and reports the same members.
func FuzzObjectFields(f *testing.F) {
	for _, s := range []string{
		`{}`, ` {"a":1} `, `{"a":"b\"c","d":[1,2,{"e":null}],"f":true,"g":-0.5e+3}`,
		`{"a":"\u00e9\ud83d\ude00"}`, `{"\u0061":1}`, `{"a":1,}`, `{"a" 1}`, `{"a":01}`, `{"a":1.}`,
		`{"a":"x` + "\x01" + `"}`, `{"a":"\x"}`, `[1]`, `"s"`, `null`, `{"a":1}{}`, `{"a":[}`, `{"a":tru}`,
		`{"a":"` + "\xff\xfe" + `"}`, `{"a":{"b":{"c":[[[]]]}}}`, `{"a":-}`, `{"a":1e}`, `{"a":"\u12"}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, line []byte) {
		got := map[string]json.RawMessage{}
		err := ObjectFields(line, func(k, v []byte) { got[string(k)] = append(json.RawMessage(nil), v...) })
		var want map[string]json.RawMessage
		werr := json.Unmarshal(line, &want)
		valid := json.Valid(line) && werr == nil && want != nil
		if (err == nil) != valid {
			t.Fatalf("ObjectFields(%q) err = %v, encoding/json valid object = %v (%v)", line, err, valid, werr)
		}
		if err != nil {
			return
		}
		if len(got) != len(want) {
			t.Fatalf("ObjectFields(%q) members %v, want %v", line, got, want)
		}
		for k, v := range want {
			var a, b any
			json.Unmarshal(v, &a)
			json.Unmarshal(got[k], &b)
			if !reflect.DeepEqual(a, b) {
				t.Fatalf("ObjectFields(%q)[%q] = %s, want %s", line, k, got[k], v)
			}
		}
	})
}

func TestJSONString(t *testing.T) {
	tests := []struct {
		raw  string
		want string
		ok   bool
	}{
		{`"plain"`, "plain", true},
		{`"a\nb\u00e9"`, "a\nbé", true},
		{`5`, "", false},
		{`null`, "", false},
	}
	for _, tt := range tests {
		got, ok := JSONString([]byte(tt.raw))
		if got != tt.want || ok != tt.ok {
			t.Errorf("JSONString(%s) = %q, %v; want %q, %v", tt.raw, got, ok, tt.want, tt.ok)
		}
	}
}

func TestSwarSpecial(t *testing.T) {
	for c := 0; c < 256; c++ {
		for pos := 0; pos < 8; pos++ {
			b := []byte("abcdefgh")
			b[pos] = byte(c)
			want := c < 0x20 || c == '"' || c == '\\'
			if got := swarSpecial(binary.LittleEndian.Uint64(b)); got != want {
				t.Fatalf("swarSpecial(%q) = %v, want %v", b, got, want)
			}
		}
	}
	// The lowest bit of the mask is the first special byte, whatever follows it.
	special := func(c int) bool { return c < 0x20 || c == '"' || c == '\\' }
	for c1 := 0; c1 < 256; c1++ {
		for c2 := 0; c2 < 256; c2++ {
			for p1 := 0; p1 < 7; p1++ {
				p2 := p1 + 1 + (c1+c2)%(7-p1)
				b := []byte("abcdefgh")
				b[p1], b[p2] = byte(c1), byte(c2)
				want := -1
				for i, c := range b {
					if special(int(c)) {
						want = i
						break
					}
				}
				m := swarSpecialMask(binary.LittleEndian.Uint64(b))
				got := -1
				if m != 0 {
					got = bits.TrailingZeros64(m) >> 3
				}
				if got != want {
					t.Fatalf("swarSpecialMask(%q): first special byte %d, want %d", b, got, want)
				}
			}
		}
	}
}

// FuzzCatalogLines: whatever the fast catalog reader accepts, encoding/json
// decodes to the same sessions (tails aside).
func FuzzCatalogLines(f *testing.F) {
	goldens, _ := filepath.Glob("testdata/*/*/catalog-*.json")
	for _, g := range goldens {
		data, _ := os.ReadFile(g)
		f.Add(data)
	}
	f.Add([]byte("{\"version\":1,\"generator\":\"sessionwatch\",\"sessions\":[\n{\"id\":\"a\",\"file\":\"f\",\"messageCount\":1e2}\n]}\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		fast, ok := decodeCatalogLines(data)
		if !ok {
			return
		}
		if copied, ok := decodeCatalogFast(data, false, nil, false); !ok || !reflect.DeepEqual(copied, fast) {
			t.Fatalf("with copied strings: %+v (ok %v), shared: %+v", copied, ok, fast)
		}
		// VisitCatalogs's way: strings into data, sessions in memory that held
		// another catalog's (every field set) just before.
		var scratch catalogScratch
		dirty := []byte("{\"version\":1,\"generator\":\"sessionwatch\",\"project\":\"/p\",\"sessions\":[\n" +
			strings.Repeat(`{"id":"x","type":"subagent","parentId":"p","file":"f","title":"t","firstPrompt":"fp","createdAt":"c","lastActiveAt":"l","messageCount":3,"sizeBytes":4,"provider":"pr","model":"m","gitBranch":"g","invalid":true,"corrupt":true,"hidden":true,"skippedLines":2},`+"\n", 3) +
			`{"id":"y","file":"f"}` + "\n]}\n")
		if _, ok := decodeCatalogWith(dirty, false, nil, aliasStrings, &scratch); !ok {
			t.Fatal("the dirtying catalog did not decode")
		}
		if aliased, ok := decodeCatalogWith(data, false, nil, aliasStrings, &scratch); !ok || !reflect.DeepEqual(aliased, fast) {
			t.Fatalf("with aliased strings in reused sessions: %+v (ok %v), shared: %+v", aliased, ok, fast)
		}
		full := &Catalog{}
		if err := json.Unmarshal(data, full); err != nil {
			t.Fatalf("fast path accepted what encoding/json rejects (%v): %q", err, data)
		}
		for _, s := range full.Sessions {
			if s == nil {
				t.Fatalf("fast path accepted a null session: %q", data)
			}
			s.Tail, s.Project = nil, full.Project
		}
		if !reflect.DeepEqual(fast, full) {
			t.Fatalf("fast %+v != full %+v for %q", fast, full, data)
		}
	})
}

// FuzzMembers: a line's Members hand over exactly what ObjectFields gives (the
// same members in order, the same error, the members before a syntax error too),
// and a Members of another line (or none) scans the line itself.
func FuzzMembers(f *testing.F) {
	for _, s := range []string{`{"a":1,"b":[1,2,{"c":"d"}],"e":"f\"g"}`, `{}`, ` {"x":null} `, `{"a":1,"b":`, `{"a":1}{`,
		`{"k\u00e9y":"v","k\\"2":true}`, `[1,2]`, `"s"`, ``, `{"a":"\x01"}`, `{"a":1,"a":2}`, `{"t":"user","m":{"c":[{"x":"y"}]}}`,
		`{"a":{"b":{"c":1},"d":[{"e":{}},{"f":"\u0067"}]},"g":{"h\u00e9":2,"i":{"j":[]}}}`, `{"a":{"b":{},"c":{"d":1}},"e":{"f":x}}`,
		`{"a":[{"b":1},{"c":{"d":2}}],"e":{"f":3`, `{"a":{ "b" : { } , "c":[ { } ] } }`, "{\"a\":{\"k\xff\":1}}"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		line := []byte(s)
		render := func(m *Members, line []byte) string {
			var b strings.Builder
			err := m.ObjectFields(line, func(k, v []byte) { fmt.Fprintf(&b, "%q=%q,", k, v) })
			fmt.Fprintf(&b, "err=%v", err != nil)
			return b.String()
		}
		want := render(nil, line)
		var m Members
		m.Scan([]byte(`{"other":"line"}`))
		m.Scan(line)
		if got := render(&m, line); got != want {
			t.Fatalf("members of %q: %s, want %s", s, got, want)
		}
		if got := render(&m, line); got != want {
			t.Fatalf("members of %q handed over twice: %s, want %s", s, got, want)
		}
		if string(m.Line()) != s {
			t.Fatalf("Line() = %q, want %q", m.Line(), s)
		}
		other := bytes.Clone(line)
		if got := render(&m, other); got != want {
			t.Fatalf("a copy of %q: %s, want %s", s, got, want)
		}
		// Every value inside the line, at any depth, and the slices around it:
		// handed over (a nested object scanned whole) or scanned, m gives what
		// ObjectFields gives.
		var walk func(v []byte, depth int)
		walk = func(v []byte, depth int) {
			if depth > 20 {
				return
			}
			cuts := [][]byte{v, v[:len(v)-1], v[1:]}
			if off := cap(line) - cap(v); off+len(v) < len(line) {
				cuts = append(cuts, line[off:off+len(v)+1]) // and the byte after it
			}
			for _, cut := range cuts {
				if len(cut) == 0 {
					continue
				}
				if got, want := render(&m, cut), render(nil, cut); got != want {
					t.Fatalf("members of %q in %q: %s, want %s", cut, s, got, want)
				}
			}
			if got, want := render(&m, bytes.Clone(v)), render(nil, v); got != want {
				t.Fatalf("members of a copy of %q in %q: %s, want %s", v, s, got, want)
			}
			switch v[0] {
			case '{':
				ObjectFields(v, func(_, e []byte) { walk(e, depth+1) })
			case '[':
				arrayElems(v, func(e []byte) { walk(e, depth+1) })
			}
		}
		ObjectFields(line, func(_, v []byte) { walk(v, 0) })
	})
}

// FuzzArrayElems: arrayElems gives the elements json.Unmarshal into
// []json.RawMessage gives, and fails where it fails, for anything that starts
// as an array.
func FuzzArrayElems(f *testing.F) {
	for _, s := range []string{`[]`, ` [ ] `, `[1, "a" ,{"b":[2]}, [3,[4]], null,true]`, `["x\"y", "\u00e9"]`, `[1,]`, `[1 2]`, `[`, `[1]x`,
		`[{"text":"hi"},"there"]`, "[\"\xff\"]", `[1.5e3,-0]`, `[[],{}]`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		raw := []byte(s)
		if t := bytes.TrimLeft(raw, " \t\r\n"); len(t) == 0 || t[0] != '[' {
			return
		}
		var got [][]byte
		ok := arrayElems(raw, func(e []byte) { got = append(got, e) })
		var want []json.RawMessage
		wantOK := json.Unmarshal(raw, &want) == nil
		if ok != wantOK {
			t.Fatalf("arrayElems(%q) ok = %v, json.Unmarshal %v", s, ok, wantOK)
		}
		if !ok {
			if len(got) > 0 {
				t.Fatalf("arrayElems(%q) failed after %d elements", s, len(got))
			}
			return
		}
		if len(got) != len(want) {
			t.Fatalf("arrayElems(%q) = %q, want %q", s, got, want)
		}
		for i := range got {
			if !bytes.Equal(got[i], want[i]) {
				t.Fatalf("arrayElems(%q) = %q, want %q", s, got, want)
			}
		}
	})
}

// refJSONString is JSONString as first written: strings with an escape or a byte
// that is not UTF-8 decoded by encoding/json.
func refJSONString(raw []byte) (string, bool) {
	if len(raw) < 2 || raw[0] != '"' {
		return "", false
	}
	inner := raw[1 : len(raw)-1]
	if !bytes.Contains(inner, []byte{'\\'}) && utf8.Valid(inner) {
		return string(inner), true
	}
	var s string
	if json.Unmarshal(raw, &s) != nil {
		return "", false
	}
	return s, true
}

// FuzzJSONString: JSONString (DecodeJSONString for escaped strings) gives what
// encoding/json gives, and fails where it fails.
func FuzzJSONString(f *testing.F) {
	for _, s := range []string{`"plain"`, `"a\nb\tc\"d\\e\/f\b\f\r"`, `"caf\u00e9 \u6771\u4eac"`, `"\ud83d\ude00 emoji"`,
		`"lone \ud83d surrogate"`, `"reversed \ude00\ud83d"`, "\"bad \xff byte\"", `"\u0000"`, `"x\q"`, `"unterminated`,
		"\"ctl\x01\"", `""`, `"\u12"`, `"\ud83d\u0041"`, `"a\n" `, `"a" "b"`, `"\"`, `"\\"`, `"a\u00e9\n` + "\xe6\x9d\xb1" + `"`,
		// Longer than a word (the eight-byte scans), specials at every offset.
		`"the quick brown fox jumps over the lazy dog"`, `"the quick brown \"fox\" jumps\nover the lazy dog\\"`,
		"\"the quick brown fox jumps \xc3\xa9 over the lazy dog \xff\xfe and \xe6\x9d\xb1 more\"",
		"\"0123456\x1f89abcdef\"", "\"01234567\"9abcdef\"", "\"0123456789abcde\x80\"", " \"0123456789abcdef\\u00e9xyz\"\t"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		got, gotOK := JSONString(raw)
		want, wantOK := refJSONString(raw)
		if got != want || gotOK != wantOK {
			t.Fatalf("JSONString(%q) = %q, %v; want %q, %v", raw, got, gotOK, want, wantOK)
		}
		// DecodeJSONString is encoding/json's reading of a string value.
		if t := TrimJSONSpace(raw); len(t) == 0 || t[0] != '"' {
			return
		}
		got, gotOK = DecodeJSONString(raw)
		want = ""
		if wantOK = json.Unmarshal(raw, &want) == nil; !wantOK {
			want = ""
		}
		if got != want || gotOK != wantOK {
			t.Fatalf("DecodeJSONString(%q) = %q, %v; want %q, %v", raw, got, gotOK, want, wantOK)
		}
	})
}

// TestSpecials8: specials8 marks exactly the bytes that are '"', '\\' or below
// 0x20, each byte alone and beside every other (no test carries into the next
// byte), and pack8 gathers the marks in order.
func TestSpecials8(t *testing.T) {
	special := func(c int) bool { return c < 0x20 || c == '"' || c == '\\' }
	for c1 := 0; c1 < 256; c1++ {
		for c2 := 0; c2 < 256; c2++ {
			p1, p2 := (c1+c2)%8, (c1*7+c2*3+1)%8
			b := []byte("abcdefgh")
			b[p1], b[p2] = byte(c1), byte(c2)
			var want uint64
			for i, c := range b {
				if special(int(c)) {
					want |= 1 << i
				}
			}
			if got := pack8(specials8(binary.LittleEndian.Uint64(b))); got != want {
				t.Fatalf("specials8(%q) packed = %08b, want %08b", b, got, want)
			}
		}
	}
}

// refScanString is scanString a byte at a time.
func refScanString(b []byte, i int) (int, bool, bool) {
	escaped := false
	for i++; i < len(b); i++ {
		switch c := b[i]; {
		case c == '"':
			return i + 1, escaped, true
		case c < 0x20:
			return 0, false, false
		case c == '\\':
			escaped = true
			if i+1 >= len(b) {
				return 0, false, false
			}
			switch b[i+1] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				i++
			case 'u':
				if i+6 > len(b) {
					return 0, false, false
				}
				for _, h := range b[i+2 : i+6] {
					if !('0' <= h && h <= '9' || 'a' <= h && h <= 'f' || 'A' <= h && h <= 'F') {
						return 0, false, false
					}
				}
				i += 5
			default:
				return 0, false, false
			}
		}
	}
	return 0, false, false
}

// TestScanStringBlocks: scanString, which crosses a long string 64 bytes at a
// time, ends, errs and reports escapes as a byte-at-a-time scan does, whatever
// kind of byte (every escape, a bad one, a cut one, a control byte, the closing
// quote, UTF-8) falls at each offset of its first blocks, in runs of escapes too,
// and wherever its line is cut.
func TestScanStringBlocks(t *testing.T) {
	var text strings.Builder
	for k := 0; text.Len() < 300; k++ {
		text.WriteString(strings.Repeat("word", 3)[:1+k%11])
		text.WriteString([]string{" ", ", ", "é ", " -- "}[k%4])
	}
	plain := text.String()
	specials := []string{`\n`, `\"`, `\\`, `\/`, `\b`, `\f`, `\r`, `\t`, `\\\"`, `\\\\\\`, `\u0041`, `\uD83D\uDE00`, `\u00zz`,
		`\u12`, `\q`, `\`, `"`, "\x01", "\x1f", "\x7f", "é", "\xff", `\n\n\n\n\n\n\n\n\n\n`}
	check := func(line []byte) {
		t.Helper()
		line = line[:len(line):len(line)] // nothing past the line to read
		end, esc, err := scanString(line, 0)
		wend, wesc, ok := refScanString(line, 0)
		if (err == nil) != ok || err == nil && (end != wend || esc != wesc) {
			t.Fatalf("scanString(%q) = %d, %v, %v; want %d, %v, ok %v", line, end, esc, err, wend, wesc, ok)
		}
	}
	for _, sp := range specials {
		for at := range 140 {
			s := `"` + plain[:at] + sp + plain[at:] + `"` + `,"next":1}`
			check([]byte(s))
			for cut := at + 1; cut < len(s) && cut <= at+len(sp)+8; cut++ {
				check([]byte(s[:cut]))
			}
			check([]byte(s[:at+70]))
		}
	}
	for n := range 200 {
		check([]byte(`"` + plain[:n] + `"}`))
		check([]byte(`"` + strings.Repeat(`\n`, n) + `"}`))
	}
}
