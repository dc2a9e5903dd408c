package indexer

import (
	"bytes"
	"fmt"
	"strings"
	"testing"
)

// FuzzMembersNested: Nested hands over exactly the members ObjectFields gives
// (and never for a slice that is not an object the scan crossed whole: a cut, a
// copy, a value that is no object), and does so for every object nested in a
// valid line; ObjectLen gives the length of every such object from its first
// byte on, and nothing where no object starts.
func FuzzMembersNested(f *testing.F) {
	for _, s := range []string{`{"a":1,"b":[1,2,{"c":"d"}],"e":"f\"g"}`, `{}`, ` {"x":null} `, `{"a":1,"b":`, `{"a":1}{`,
		`{"k\u00e9y":"v","k\\"2":true}`, `[1,2]`, `"s"`, ``, `{"a":"\x01"}`, `{"a":1,"a":2}`, `{"t":"user","m":{"c":[{"x":"y"}]}}`,
		`{"a":{"b":{"c":1},"d":[{"e":{}},{"f":"\u0067"}]},"g":{"h\u00e9":2,"i":{"j":[]}}}`, `{"a":{"b":{},"c":{"d":1}},"e":{"f":x}}`,
		`{"a":[{"b":1},{"c":{"d":2}}],"e":{"f":3`, `{"a":{ "b" : { } , "c":[ { } ] } }`, "{\"a\":{\"k\xff\":1}}",
		`{"message":{"role":"user","content":[{"type":"text","text":"hi \"there\"\n"},{"type":"tool_use","input":{"k":[{"x":{}}]}}]}}`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		line := []byte(s)
		var m Members
		m.Scan(line)
		valid := ObjectFields(line, func(_, _ []byte) {}) == nil
		render := func(v []byte) string {
			var b strings.Builder
			err := ObjectFields(v, func(k, val []byte) { fmt.Fprintf(&b, "%q=%q,", k, val) })
			fmt.Fprintf(&b, "err=%v", err != nil)
			return b.String()
		}
		nested := func(v []byte) (string, bool) {
			var b strings.Builder
			ok := m.Nested(v, func(k, val []byte) { fmt.Fprintf(&b, "%q=%q,", k, val) })
			fmt.Fprintf(&b, "err=false")
			return b.String(), ok
		}
		if _, ok := nested(line); ok && len(line) > 0 {
			t.Fatalf("Nested of the whole line %q", s)
		}
		var walk func(v []byte, depth int)
		walk = func(v []byte, depth int) {
			if depth > 20 || len(v) == 0 {
				return
			}
			off := cap(line) - cap(v)
			got, ok := nested(v)
			if ok && got != render(v) {
				t.Fatalf("Nested(%q) in %q: %s, want %s", v, s, got, render(v))
			}
			if v[0] == '{' && valid && !ok {
				t.Fatalf("Nested(%q) in the valid line %q: not handed over", v, s)
			}
			if v[0] != '{' && ok {
				t.Fatalf("Nested(%q) in %q: handed over, not an object", v, s)
			}
			n, lok := m.ObjectLen(line[off:])
			if lok && (v[0] != '{' || n != len(v)) {
				t.Fatalf("ObjectLen at %q in %q = %d, want %d", v, s, n, len(v))
			}
			if v[0] == '{' && valid && !lok {
				t.Fatalf("ObjectLen at %q in the valid line %q: none", v, s)
			}
			// Cuts and copies are never handed over.
			for _, cut := range [][]byte{v[:len(v)-1], v[1:], bytes.Clone(v)} {
				if _, ok := nested(cut); ok {
					t.Fatalf("Nested(%q) of %q in %q handed over", cut, v, s)
				}
			}
			if len(v) > 1 && v[0] == '{' {
				if _, ok := m.ObjectLen(v[1:]); ok {
					t.Fatalf("ObjectLen(%q) inside %q in %q", v[1:], v, s)
				}
				if n, ok := m.ObjectLen(v[:len(v)-1]); ok {
					t.Fatalf("ObjectLen(%q) = %d, running past it, in %q", v[:len(v)-1], n, s)
				}
			}
			if _, ok := m.ObjectLen(bytes.Clone(v)); ok {
				t.Fatalf("ObjectLen of a copy of %q in %q", v, s)
			}
			switch v[0] {
			case '{':
				ObjectFields(v, func(_, e []byte) { walk(e, depth+1) })
			case '[':
				arrayElems(v, func(e []byte) { walk(e, depth+1) })
			}
		}
		ObjectFields(line, func(_, v []byte) { walk(v, 0) })
		var nilM *Members
		if nilM.Nested(line, func(_, _ []byte) { t.Fatal("called") }) {
			t.Fatal("nil Members hands over")
		}
		if _, ok := nilM.ObjectLen(line); ok {
			t.Fatal("nil Members has an object")
		}
	})
}
