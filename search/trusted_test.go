package search

import (
	"fmt"
	"reflect"
	"testing"

	"github.com/sessionwatch/sessionwatch/indexer"
)

// members lists an object's members as fields gives them, and what an
// element-by-element walk of each array value gives (eachElem).
func members(walk func([]byte, func(k, v []byte)), obj []byte) []string {
	var out []string
	walk(obj, func(k, v []byte) {
		out = append(out, fmt.Sprintf("%q=%q", k, indexer.TrimJSONSpace(v)))
		eachElem(v, func(e []byte) { out = append(out, fmt.Sprintf("  elem %q", indexer.TrimJSONSpace(e))) })
	})
	return out
}

var trustedSeeds = []string{
	`{"type":"user","message":{"role":"user","content":[{"type":"text","text":"hi \"there\" \\"},{"type":"tool_result","content":"a\\\\"}]}}`,
	`{ "a" : [ 1 , -2.5e3 , true , null , "x" , [ ] , { } ] , "b" : { "c" : "}]" } }`,
	`{"k\u00e9y":"v","t\"q":"\\\"","":""}`,
	`{"blocks":[{"type":"tool","result":"{\"nested\":[1,2,\"]\"]}"},{"type":"text","content":"ok"}]}`,
	`{"n":0,"f":false,"arr":[[[]],[{}],"\\"]}`,
	`{"payload":{"content":{"speaker":"human","blocks":[{"type":"text","text":"日本語 text"}]}}}`,
}

// TestFieldsMatchesObjectFields: on valid JSON the trusted walker gives the
// members (keys unescaped, raw values) and array elements that the validating
// one gives.
func TestFieldsMatchesObjectFields(t *testing.T) {
	lines := append([]string(nil), trustedSeeds...)
	for _, u := range genUnits(t) {
		for _, l := range u.Lines {
			lines = append(lines, string(l))
		}
	}
	checked := 0
	for _, l := range lines {
		if indexer.ObjectFields([]byte(l), func(k, v []byte) {}) != nil {
			continue
		}
		checked++
		want := members(func(b []byte, fn func(k, v []byte)) { indexer.ObjectFields(b, fn) }, []byte(l))
		got := members(fields, []byte(l))
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("line %s:\nfields gives %q\nwant %q", l, got, want)
		}
	}
	if checked < 100 {
		t.Fatalf("only %d valid lines checked", checked)
	}
}

// FuzzFields: fields equals indexer.ObjectFields on valid JSON, and on anything
// else returns without a panic.
func FuzzFields(f *testing.F) {
	for _, s := range trustedSeeds {
		f.Add([]byte(s))
	}
	f.Add([]byte(`{"a":"unterminated`))
	f.Add([]byte(`{"a":[1,2`))
	f.Add([]byte(`[1,"\\"]`))
	f.Fuzz(func(t *testing.T, data []byte) {
		got := members(fields, data)
		if indexer.ObjectFields(data, func(k, v []byte) {}) != nil {
			return
		}
		want := members(func(b []byte, fn func(k, v []byte)) { indexer.ObjectFields(b, fn) }, data)
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("fields gives %q, want %q", got, want)
		}
	})
}
