package indexer

import (
	"bytes"
	"strings"
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
		f.Add(s, "usage", ":{")
	}
	f.Add(`{"tokens":{"input":1}}`, "tokens", ":{")
	f.Add(`{"a":[1],"b":"x"}`, "a", ":[")
	f.Add(`{"a":"x","b":"y"}`, "b", `:"y"`)
	f.Add(`{"content":[{"type":"image","source":{}}]}`, "type", `:"image"`)
	f.Add(`{"content":[{"type": "image"}],"type":"user"}`, "type", `: "image"`)
	f.Add(`{"content":[{"type":"images"}]}`, "type", `:"image"`)
	f.Add(`{"content":[{"text":"\"type\":\"image\""}]}`, "type", `:"image"`)
	f.Fuzz(func(t *testing.T, s, key, after string) {
		line := []byte(s)
		var m Members
		m.Scan(line)
		want := bytes.Contains(line, []byte(`"`+key+`"`+after))
		found, known := m.KeyText(line, key, after)
		if known && found != want {
			t.Fatalf("KeyText(%q, %q, %q) = %v, Contains %v", s, key, after, found, want)
		}
		if _, known := m.KeyText(bytes.Clone(line), key, after); known && len(line) > 0 {
			t.Fatalf("KeyText of a copy of %q knew", s)
		}
		if ObjectFields(line, func([]byte, []byte) {}) == nil && plainKey(key) && strings.HasPrefix(after, ":") &&
			!bytes.Contains(line, []byte(`\`)) && isASCII(line) && !known {
			t.Fatalf("KeyText(%q, %q) did not know", s, key)
		}
	})
}

func TestKeyText(t *testing.T) {
	var m Members
	for _, s := range keyTextSeeds {
		line := []byte(s)
		m.Scan(line)
		found, known := m.KeyText(line, "usage", ":{")
		want := bytes.Contains(line, []byte(`"usage":{`))
		if known && found != want {
			t.Errorf("KeyText(%q) = %v, Contains %v", s, found, want)
		}
	}
	line := []byte(`{"message":{"id":"m","usage":{"input_tokens":1}},"type":"assistant"}`)
	m.Scan(line)
	if found, known := m.KeyText(line, "usage", ":{"); !found || !known {
		t.Errorf("KeyText of a nested usage = %v, %v", found, known)
	}
	if found, known := (*Members)(nil).KeyText(line, "usage", ":{"); found || known {
		t.Errorf("KeyText of no scan = %v, %v", found, known)
	}
}

// TestClaudeMediaFromScan: the media of a line told from its scan is the one read
// from its text.
func TestClaudeMediaFromScan(t *testing.T) {
	for _, s := range []string{
		`{"type":"user","message":{"content":[{"type":"image","source":{}}]}}`,
		`{"type":"user","message":{"content":[{"type": "image"}]}}`,
		`{"type":"user","message":{"content":[{"type" : "image"}]}}`,
		`{"type":"user","message":{"content":[{"type":"document"},{"type":"image"}]}}`,
		`{"type":"user","message":{"content":[{"type": "document"}]}}`,
		`{"type":"user","message":{"content":"paste \"type\":\"image\" here"}}`,
		`{"type":"user","message":{"content":[{"a\"type":"image"}]}}`,
		`{"type":"user","message":{"content":[{"type":"images"}]}}`,
		`{"type":"user","message":{"content":[{"type":"image"}]}`,
		`{"type":"user","message":{"content":[{"text":"d\u00e9j\u00e0"},{"type":"document"}]}}`,
	} {
		var m Members
		line := []byte(s)
		m.Scan(line)
		if got, want := claudeMedia(line, &m), claudeMedia(line, nil); got != want {
			t.Errorf("claudeMedia(%s) from the scan = %q, from the text %q", s, got, want)
		}
	}
}
