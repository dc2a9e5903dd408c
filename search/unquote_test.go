package search

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/sessionwatch/sessionwatch/indexer"
)

var unquoteSeeds = []string{`"plain"`, `"a\nb\tc\"d\\e\/f\b\f\r"`, `"caf\u00e9 \u6771\u4eac"`, `"\ud83d\ude00 emoji"`,
	`"lone \ud83d surrogate"`, `"reversed \ude00\ud83d"`, `"bad \xff byte"`, "\"caf\xc3\xa9\"", `"\u0000"`, `"x\q"`, `"unterminated`,
	`"ctl` + "\x01" + `"`, `""`, `"\u12"`, `"\ud83d\u0041"`}

// TestUnquoteMatchesEncodingJSON: the decoder gives what encoding/json gives for
// every valid JSON string, and "" for what encoding/json rejects.
func TestUnquoteMatchesEncodingJSON(t *testing.T) {
	for _, s := range unquoteSeeds {
		checkUnquote(t, []byte(s))
	}
}

func checkUnquote(t *testing.T, raw []byte) {
	t.Helper()
	var want string
	if err := json.Unmarshal(raw, &want); err != nil || !bytes.HasPrefix(indexer.TrimJSONSpace(raw), []byte{'"'}) {
		want = ""
	}
	if got := unquote(raw); got != want {
		t.Errorf("unquote(%q) = %q, want %q", raw, got, want)
	}
}

func FuzzUnquote(f *testing.F) {
	for _, s := range unquoteSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, raw []byte) { checkUnquote(t, raw) })
}
