package search

import (
	"path/filepath"
	"testing"
	"unsafe"

	"github.com/sessionwatch/sessionwatch/indexer"
)

// The writer's unit records, read back from the segments, share what units
// repeat (source, layout, a project's one-element list) and keep the relative
// path inside the absolute one's string; a change of one unit's project leaves
// the others of the shared list alone, and Resume still finds every unit.
func TestUnitRecordsShareAndStayApart(t *testing.T) {
	s := newStore(t)
	meta := `{"type":"metadata","workdir":"/w/p","createdAt":"2026-01-01T00:00:00Z"}` + "\n"
	s.write("wave", "p/"+uuid1+".jsonl", meta+waveMsg("2026-01-01T00:00:01Z", "user", "fix the parser"))
	s.write("wave", "p/"+uuid2+".jsonl", meta+waveMsg("2026-01-01T00:00:02Z", "user", "deploy the parser"))
	x, _ := s.index(Options{})
	x.Close()

	x, err := Open(Options{Dir: filepath.Join(s.state, DirName)})
	if err != nil {
		t.Fatal(err)
	}
	defer x.Close()
	x.mu.Lock()
	defer x.mu.Unlock()
	rec := func(id string) *unitRec {
		t.Helper()
		r := x.units[x.live[liveKey{"wave", "p/" + id + ".jsonl"}]]
		if r == nil || r.State != unitLive {
			t.Fatalf("no live record of %s", id)
		}
		return r
	}
	a, b := rec(uuid1), rec(uuid2)
	if len(a.Projs) != 1 || len(b.Projs) != 1 || &a.Projs[0] != &b.Projs[0] {
		t.Errorf("the two units' project lists %v and %v are not one shared list", a.Projs, b.Projs)
	}
	if a.project(0) != "/w/p" || b.project(0) != "/w/p" {
		t.Fatalf("projects %q and %q, want /w/p", a.project(0), b.project(0))
	}
	if unsafeData(a.Source) != unsafeData(b.Source) {
		t.Errorf("the source string is not shared")
	}
	if want := a.Path[len(a.Path)-len(a.Rel):]; a.Rel != "p/"+uuid1+".jsonl" || unsafeData(a.Rel) != unsafeData(want) {
		t.Errorf("the relative path %q is not a part of the path %q", a.Rel, a.Path)
	}
	x.setProjectsLocked([]indexer.SessionRef{{UnitRef: indexer.UnitRef{Source: "wave", Unit: a.Rel}, ID: uuid1, Project: "/w/q"}})
	if a.project(0) != "/w/q" || b.project(0) != "/w/p" {
		t.Errorf("after a's project changed: a %q (want /w/q), b %q (want /w/p)", a.project(0), b.project(0))
	}
	for _, r := range []*unitRec{a, b} {
		ref := indexer.UnitRef{Source: "wave", Unit: r.Rel, Dev: r.Dev, Ino: r.Ino}
		x.mu.Unlock()
		off, _, ok := x.Resume(ref)
		x.mu.Lock()
		if !ok || off != r.Offset || off == 0 {
			t.Errorf("Resume(%s) = %d, %v; want %d", r.Rel, off, ok, r.Offset)
		}
	}
}

// unsafeData is the address of a string's bytes: equal for strings that share them.
func unsafeData(s string) *byte { return unsafe.StringData(s) }
