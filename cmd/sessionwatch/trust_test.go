package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sessionwatch/sessionwatch/indexer"
	"github.com/sessionwatch/sessionwatch/janitor"
)

// oddSession writes a Wave session whose header names workdir, in a project
// directory of its own, last active 20 days ago.
func (e *testEnv) oddSession(dirName, workdir, id string) string {
	e.t.Helper()
	dir := filepath.Join(e.root, dirName)
	os.MkdirAll(dir, 0o700)
	ts := time.Now().Add(-20 * 24 * time.Hour)
	path := filepath.Join(dir, id+".jsonl")
	appendTo(e.t, path, header(workdir)+message(ts, "prompt of "+id))
	os.Chtimes(path, ts, ts)
	return path
}

// Sessions of the projects "/", "." and "..": listed, checked clean right after a
// reindex, archived into a directory of their own, and restorable.
func TestOddProjectsListCheckArchiveRestore(t *testing.T) {
	e := newEnv(t)
	ids := map[string]string{"/": "1d1d1d1d-0000-4000-8000-000000000001", ".": "2d2d2d2d-0000-4000-8000-000000000002", "..": "3d3d3d3d-0000-4000-8000-000000000003"}
	files := map[string]string{}
	for wd, id := range ids {
		files[wd] = e.oddSession("p"+id[:2], wd, id)
	}
	if _, errs, code := e.cli("reindex"); code != 0 {
		t.Fatalf("reindex: %s", errs)
	}
	if out, errs, code := e.cli("reindex", "--check"); code != 0 {
		t.Errorf("reindex --check right after reindex = %d:\n%s%s", code, out, errs)
	}
	for _, p := range []string{filepath.Join(e.state, "index", "wave", indexer.CatalogName), filepath.Join(e.state, "index", indexer.CatalogName)} {
		if fileExists(p) {
			t.Errorf("catalog outside a project directory: %s", p)
		}
	}
	out, _, _ := e.cli("list", "--all", "--json")
	for _, id := range ids {
		if !strings.Contains(out, id) {
			t.Errorf("list --all misses %s:\n%s", id, out)
		}
	}
	want := map[string][]byte{}
	for wd, f := range files {
		want[wd], _ = os.ReadFile(f)
	}
	if _, errs, code := e.cli("clean"); code != 0 {
		t.Fatal(errs)
	}
	for wd, f := range files {
		if fileExists(f) {
			t.Fatalf("session of %q not archived", wd)
		}
	}
	for _, f := range []string{"*.gz"} {
		for _, d := range []string{e.archiveDir(), filepath.Join(e.archiveDir(), "wave")} {
			if m, _ := filepath.Glob(filepath.Join(d, f)); len(m) > 0 {
				t.Errorf("archives outside a project directory: %v", m)
			}
		}
	}
	for wd, id := range ids {
		if out, errs, code := e.cli("restore", "--all", id); code != 0 {
			t.Errorf("restore %s (project %q) = %d: %s%s", id, wd, code, out, errs)
			continue
		}
		if got, _ := os.ReadFile(files[wd]); !bytes.Equal(got, want[wd]) {
			t.Errorf("restored session of %q differs", wd)
		}
	}
}

// Archives older versions wrote outside their project directory are adopted:
// moved into it once, and restorable.
func TestLegacyArchivesAdopted(t *testing.T) {
	e := newEnv(t)
	ids := []string{"4d4d4d4d-0000-4000-8000-000000000004", "5d5d5d5d-0000-4000-8000-000000000005"}
	files := []string{e.oddSession("pa", "/", ids[0]), e.oddSession("pb", "/srv/x", ids[1])}
	if _, errs, code := e.cli("clean"); code != 0 {
		t.Fatal(errs)
	}
	ars, _ := janitor.ListArchives(e.archiveDir(), nil)
	if len(ars) != 2 {
		t.Fatalf("%d archives, want 2", len(ars))
	}
	// Where older versions put them: <archive>/wave/<file> and <archive>/<file>.
	for i, a := range ars {
		to := filepath.Join(e.archiveDir(), "wave", filepath.Base(a.Path))
		if i == 1 {
			to = filepath.Join(e.archiveDir(), filepath.Base(a.Path))
		}
		if err := os.Rename(a.Path, to); err != nil {
			t.Fatal(err)
		}
	}
	if ars, _ := janitor.ListArchives(e.archiveDir(), nil); len(ars) != 0 {
		t.Fatalf("legacy archives already visible: %v", ars)
	}
	for i, id := range ids {
		if out, errs, code := e.cli("restore", "--all", id); code != 0 {
			t.Errorf("restore %s = %d: %s%s", id, code, out, errs)
		} else if !fileExists(files[i]) {
			t.Errorf("restore %s did not bring back %s", id, files[i])
		}
	}
}

// A root that is a symlink is resolved once: the walk indexes through it, the
// catalogs name files under the real directory, a check right after agrees,
// doctor names the real path, and the janitor archives from the real directory.
func TestSymlinkRootResolved(t *testing.T) {
	e := newEnv(t)
	real := filepath.Join(e.home, "disk", "wave-projects")
	os.MkdirAll(real, 0o700)
	os.MkdirAll(filepath.Dir(e.root), 0o700)
	if err := os.Symlink(real, e.root); err != nil {
		t.Fatal(err)
	}
	id := "6d6d6d6d-0000-4000-8000-000000000006"
	e.oddSession("proj", "/w/linked", id)
	if out, errs, code := e.cli("reindex"); code != 0 || !strings.Contains(out, "1 sessions") {
		t.Fatalf("reindex through a symlinked root = %d: %s%s", code, out, errs)
	}
	if out, errs, code := e.cli("reindex", "--check"); code != 0 {
		t.Errorf("reindex --check = %d:\n%s%s", code, out, errs)
	}
	s := e.sessionIn("/w/linked", id)
	if s == nil || !strings.HasPrefix(s.File, real+string(filepath.Separator)) {
		t.Fatalf("catalog entry %+v, want a file under %s", s, real)
	}
	if out, _, _ := e.cli("doctor"); !strings.Contains(out, tildePath(real)) {
		t.Errorf("doctor does not show the resolved root %s:\n%s", real, out)
	}
	if _, errs, code := e.cli("clean"); code != 0 {
		t.Fatal(errs)
	}
	if fileExists(filepath.Join(real, "proj", id+".jsonl")) {
		t.Error("janitor did not archive the session under the resolved root")
	}
}
