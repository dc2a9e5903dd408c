package usage

import (
	"os"
	"path/filepath"
	"testing"
)

// A first-version ledger (64 JSON shards) read by Open retires, as any other
// ledger, a live unit whose file left the store while no writer ran: its
// records carry no place in a units file (idx 0, not -1), and Open's search for
// gone files must not take them for retired ones.
func TestOpenFirstVersionRetiresGoneUnits(t *testing.T) {
	state, store := t.TempDir(), t.TempDir()
	dir := filepath.Join(state, DirName)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	mk := func(unit string) *unitRec {
		r := &unitRec{Unit: unit, Ino: 5, Off: 10, unitBody: &unitBody{Layout: "claude",
			acc: account{Buckets: []Bucket{{Q: 1969300, Model: "opus", T: Tokens{Input: 7}}}}}}
		r.setSource("claude")
		r.setDev(3)
		r.setSession(sid(1))
		r.setFiling("main", "/w/p")
		r.setPath(filepath.Join(store, filepath.FromSlash(unit)))
		return r
	}
	here, gone := mk("-w-p/here.jsonl"), mk("-w-p/gone.jsonl")
	if err := os.MkdirAll(filepath.Dir(here.path()), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(here.path(), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	data, err := encodeShard([]*unitRec{here, gone}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "units-05.json"), data, 0o600); err != nil {
		t.Fatal(err)
	}
	l := mustOpen(t, state)
	l.warmAll() // the records read from units.idx into memory, to look at
	if l.units.get("claude", here.Unit) == nil {
		t.Fatalf("%s, whose file is there, is not live", here.Unit)
	}
	if r := l.units.get("claude", gone.Unit); r != nil {
		t.Fatalf("%s, whose file is gone, is still live after Open", gone.Unit)
	}
	if rs := l.retired[ukey{"claude", gone.Unit}]; len(rs) != 1 || l.bodyOf(rs[0]).Retired == "" {
		t.Fatalf("%s is not retired with its usage: %d records", gone.Unit, len(rs))
	}
}
