package usage

import (
	"bytes"
	"testing"

	"github.com/sessionwatch/sessionwatch/indexer"
)

// appendKeyFast must write exactly encoding/json's line of every key it
// writes (appendKeyJSON's), and leave to it the strings it would escape.
func TestAppendKeyFastWritesWhatJSONWrites(t *testing.T) {
	units := genLineUnits(t)
	l := newLedger(t.TempDir())
	var refs []indexer.SessionRef
	for i, u := range units {
		l.Reset(u.Ref)
		for j, line := range u.Lines {
			l.Line(u.Ref, u.Offs[j], line)
		}
		l.Done(u.Ref, int64(len(u.Lines)), "fp")
		project := "/p/" + u.Ref.Source
		switch i % 7 {
		case 1:
			project = "/p/My Projects/ünï" // escaped by neither, but not plain ASCII
		case 2:
			project = "/p/a\"b\\c\td\x01\u2028<&>"
		case 3:
			project = ""
		}
		refs = append(refs, indexer.SessionRef{UnitRef: u.Ref, ID: u.Ref.Unit, Type: "main", Project: project})
	}
	l.Sync(refs) // in memory (no dir): files the units
	// A document's seen totals, a retired record, odd models.
	doc := indexer.UnitRef{Source: "wave", Unit: "doc/s.json", Layout: "wave", Path: "/w/doc/s.json", Dev: 1, Ino: 2}
	l.Reset(doc)
	d := l.units.get(doc.Source, doc.Unit)
	d.Seen = &Tokens{Input: 1, Output: 2, CacheWrite: 3, CacheRead: 4}
	d.acc.Win = append(d.acc.Win, winEntry{ID: 0xabcdef0123, OrigReq: 0xfeed, Req: 0xbeef, Side: true, Q: -5, Model: "m-1",
		T: Tokens{Input: 1 << 40, Output: -2, CacheWrite: 0, CacheRead: 9}})
	l.Remove(units[0].Ref)
	var windows, states, fast, slow int
	for r := range l.units.all() {
		b := l.bodyOf(r)
		windows += len(b.acc.Win)
		if b.St != (ParseState{}) {
			states++
		}
	}
	keys := map[ukey]bool{}
	for r := range l.units.all() {
		keys[ukey{r.source(), r.Unit}] = true
	}
	for k := range l.retired {
		keys[k] = true
	}
	for _, k := range sortedKeys(keys) {
		if checkAppendKeyFast(t, l, k) {
			fast++
		} else {
			slow++
		}
	}
	if fast == 0 || slow == 0 || windows == 0 || states == 0 || len(l.retired) == 0 {
		t.Errorf("the corpus must have keys of both paths, windows, parse states and a retired record: %d fast, %d slow, %d windows, %d states, %d retired",
			fast, slow, windows, states, len(l.retired))
	}
}

// checkAppendKeyFast compares appendKeyFast's line for k with encoding/json's
// (appendKeyJSON), after a prefix it must keep; when the fast path declines,
// the buffer must be left as it was. It reports whether the fast path wrote.
func checkAppendKeyFast(t testing.TB, l *Ledger, k ukey) bool {
	t.Helper()
	var want bytes.Buffer
	if err := l.appendKeyJSON(&want, k); err != nil {
		t.Fatal(err)
	}
	got, ok, err := l.appendKeyFast([]byte("prefix"), k)
	if err != nil {
		t.Fatal(err)
	}
	if !ok {
		if string(got) != "prefix" {
			t.Errorf("%v: not written, yet the buffer became %q", k, got)
		}
		return false
	}
	if !bytes.Equal(got, append([]byte("prefix"), want.Bytes()...)) {
		t.Errorf("%v:\n got %s\nwant %s", k, got[len("prefix"):], want.Bytes())
	}
	return true
}
