package indexer

import (
	"bytes"
	"testing"
)

// keyTextSeeds are lines where the text "usage":{ is, is not, or only seems to
// be a member.
var keyTextSeeds = []string{
	`{"usage":{"a":1}}`,
	`{"message":{"id":"m","usage":{"input_tokens":1}},"type":"assistant"}`,
	`{"message":{"content":[{"type":"text","text":"say \"usage\":{ here"}]}}`, // in a string, escaped
	`{"a\"usage":{}}`,      // a key ending in an escaped quote and the text
	`{"a\\\"usage":{}}`,    // the same after an escaped backslash
	`{"x":{"a\"usage":1}}`, // nested, another value
	`{"usage" :{}}`, `{"usage": {}}`, `{"usage":[]}`, `{"usage":null}`, `{"usages":{}}`, `{"xusage":{}}`,
	`{"a":[{"b":[{"usage":{}}]}]}`, `{"a":[1,"usage",{"usage":{}}]}`,
	`{"usage":{}`, `{"a":"\"usage\":{"`, `{"usage":{}} x`, `{"k\u00e9y":1,"usage":{}}`, `{"u\u0073age":{}}`,
	`{"a":{"usage":{}},"usage":1}`, `{}`, ``, `[{"usage":{}}]`,
}

// FuzzKeyText: whenever KeyText knows, it is bytes.Contains of the line; and it
// knows for a valid line whose keys have no escape.
func FuzzKeyText(f *testing.F) {
	for _, s := range keyTextSeeds {
		f.Add(s, "usage", byte('{'))
	}
	f.Add(`{"tokens":{"input":1}}`, "tokens", byte('{'))
	f.Add(`{"a":[1],"b":"x"}`, "a", byte('['))
	f.Add(`{"a":"x","b":"y"}`, "b", byte('"'))
	f.Fuzz(func(t *testing.T, s, key string, c byte) {
		line := []byte(s)
		var m Members
		m.Scan(line)
		want := bytes.Contains(line, []byte(`"`+key+`":`+string(c)))
		found, known := m.KeyText(line, key, c)
		if known && found != want {
			t.Fatalf("KeyText(%q, %q, %q) = %v, Contains %v", s, key, c, found, want)
		}
		if _, known := m.KeyText(bytes.Clone(line), key, c); known && len(line) > 0 {
			t.Fatalf("KeyText of a copy of %q knew", s)
		}
		if ObjectFields(line, func([]byte, []byte) {}) == nil && plainKey(key) && !bytes.Contains(line, []byte(`\`)) && isASCII(line) && !known {
			t.Fatalf("KeyText(%q, %q) did not know", s, key)
		}
	})
}

func TestKeyText(t *testing.T) {
	var m Members
	for _, s := range keyTextSeeds {
		line := []byte(s)
		m.Scan(line)
		found, known := m.KeyText(line, "usage", '{')
		want := bytes.Contains(line, []byte(`"usage":{`))
		if known && found != want {
			t.Errorf("KeyText(%q) = %v, Contains %v", s, found, want)
		}
	}
	line := []byte(`{"message":{"id":"m","usage":{"input_tokens":1}},"type":"assistant"}`)
	m.Scan(line)
	if found, known := m.KeyText(line, "usage", '{'); !found || !known {
		t.Errorf("KeyText of a nested usage = %v, %v", found, known)
	}
	if found, known := (*Members)(nil).KeyText(line, "usage", '{'); found || known {
		t.Errorf("KeyText of no scan = %v, %v", found, known)
	}
}
