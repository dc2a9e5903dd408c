package search

import (
	"fmt"
	"path/filepath"
	"testing"

	"github.com/sessionwatch/sessionwatch/indexer"
)

// TestSyncHoldsNoUnchangedRecords: a Sync handed every session of the store
// (a flush after the catalogs were rebuilt), none of whose projects changed,
// does not hold their records read back: only the records it writes (a changed
// project, a changed unit) are kept until the commit; the changed project is
// committed, the others stay.
func TestSyncHoldsNoUnchangedRecords(t *testing.T) {
	const n = 3000
	dir := genIndex(t, n)
	before := records(t, dir)
	x, err := Open(Options{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	defer x.Close()
	var refs []indexer.SessionRef
	var moved, grown *unitRec
	for _, r := range before {
		if r.State != unitLive {
			continue
		}
		u := indexer.UnitRef{Source: r.Source, Layout: r.Layout, Unit: r.Rel, Path: r.Path, Dev: r.Dev, Ino: r.Ino}
		proj := r.Projs[0]
		switch {
		case moved == nil:
			moved, proj = r, "/elsewhere"
		case grown == nil:
			grown = r
			x.Done(u, r.Offset+10, r.Fp)
		}
		refs = append(refs, indexer.SessionRef{UnitRef: u, ID: "s", Project: proj})
	}
	x.mu.Lock()
	err = x.setProjectsLocked(refs)
	held := len(x.pending)
	x.mu.Unlock()
	if err != nil {
		t.Fatal(err)
	}
	if held != 2 {
		t.Errorf("%d records held after handing over %d sessions, 2 of them to write", held, len(refs))
	}
	if err := x.Sync(nil); err != nil {
		t.Fatal(err)
	}
	after := records(t, dir)
	for id, r := range before {
		want := fmt.Sprint(r.Projs)
		if r == moved {
			want = "[/elsewhere]"
		}
		if got := fmt.Sprint(after[id].Projs); got != want {
			t.Errorf("unit %d: projects %s, want %s", id, got, want)
		}
	}
	if after[grown.ID].Offset != grown.Offset+10 {
		t.Errorf("the grown unit's offset %d, want %d", after[grown.ID].Offset, grown.Offset+10)
	}
}

// TestDocumentProjectsReadBack: a document's sessions' projects, handed over
// together, are set in its record read back, each in its place, with and
// without a change, across reopens.
func TestDocumentProjectsReadBack(t *testing.T) {
	dir := filepath.Join(t.TempDir(), DirName)
	x, err := Open(Options{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	u := indexer.UnitRef{Source: "gemini", Layout: "gemini", Unit: "chats/doc.json", Path: "/g/chats/doc.json", Dev: 1, Ino: 2}
	x.Document(u, []byte(`{}`), []*indexer.Session{{ID: "a"}, {ID: "b"}, {ID: "c"}})
	x.Done(u, 2, "")
	sync := func(projs ...string) {
		t.Helper()
		var refs []indexer.SessionRef
		for i, id := range []string{"a", "b", "c"} {
			refs = append(refs, indexer.SessionRef{UnitRef: u, ID: id, Project: projs[i]})
		}
		if err := x.Sync(refs); err != nil {
			t.Fatal(err)
		}
	}
	want := func(projs string) {
		t.Helper()
		var got []string
		for _, r := range records(t, dir) {
			if r.State == unitLive {
				got = append(got, fmt.Sprint(r.Projs))
			}
		}
		if fmt.Sprint(got) != "["+projs+"]" {
			t.Errorf("live records' projects %v, want [%s]", got, projs)
		}
	}
	sync("/p1", "/p2", "/p3")
	want("[/p1 /p2 /p3]")
	x.Close()
	if x, err = Open(Options{Dir: dir}); err != nil {
		t.Fatal(err)
	}
	defer func() { x.Close() }()
	sync("/p1", "/p2", "/p3")
	want("[/p1 /p2 /p3]")
	sync("/p1", "/q", "/p3")
	want("[/p1 /q /p3]")
	sync("/r", "/q", "/s")
	want("[/r /q /s]")
}
