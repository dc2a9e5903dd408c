package indexer

import (
	"bytes"
	"encoding/json"
	"testing"
)

// jsonMemberDecoder is jsonMember as encoding/json's Decoder reads it: the
// reference the in-place scan must agree with.
func jsonMemberDecoder(obj []byte, key string) ([]byte, bool) {
	dec := json.NewDecoder(bytes.NewReader(obj))
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return nil, false
	}
	for dec.More() {
		t, err := dec.Token()
		if err != nil {
			return nil, false
		}
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return nil, false
		}
		if k, _ := t.(string); k == key {
			return v, true
		}
	}
	return nil, false
}

var jsonMemberSeeds = []string{
	`{"model":"claude-opus-4","content":[{"type":"text","text":"hi"}]}`,
	`{"id":"m1","model":"x"}`,
	` { "model" : "spaced" , "content" : "c" } `,
	`{"content":{"a":[1,2,{"b":null}]},"model":"after"}`,
	`{"mod\u0065l":"escaped key"}`,
	`{"model":"first","model":"second"}`,
	`{}`,
	`[]`,
	`{"model":}`,
	`{"content":"unterminated}`,
	`{"a":1,"model":-1.5e3}`,
	`{"a":tru,"model":"x"}`,
	`{"é":1,"model":true}`,
	`{"model":"x"`,
	`not json`,
	``,
}

func TestJSONMemberMatchesDecoder(t *testing.T) {
	for _, s := range jsonMemberSeeds {
		for _, key := range []string{"model", "content", "é", "missing"} {
			got, gok := jsonMember([]byte(s), key)
			want, wok := jsonMemberDecoder([]byte(s), key)
			if gok != wok || (gok && !bytes.Equal(got, want)) {
				t.Errorf("jsonMember(%q, %q) = %q, %v; the decoder reads %q, %v", s, key, got, gok, want, wok)
			}
		}
	}
}

// FuzzJSONMember: on any object that is valid JSON (the only input the layouts
// pass it: a member of a line ObjectFields validated) the scan finds what the
// decoder finds.
func FuzzJSONMember(f *testing.F) {
	for _, s := range jsonMemberSeeds {
		f.Add(s, "model")
	}
	f.Fuzz(func(t *testing.T, s, key string) {
		got, gok := jsonMember([]byte(s), key)
		if !json.Valid([]byte(s)) {
			return
		}
		want, wok := jsonMemberDecoder([]byte(s), key)
		if gok != wok || (gok && !bytes.Equal(got, want)) {
			t.Fatalf("jsonMember(%q, %q) = %q, %v; the decoder reads %q, %v", s, key, got, gok, want, wok)
		}
	})
}
