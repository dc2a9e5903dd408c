package indexer

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Every project gets a key that is non-empty and names a directory of its own
// (no separator, not "." or ".."); the keys of the projects of one source,
// assigned together, all differ (Wave's encoding itself makes "/a-b" and "/a/b"
// alike: the later one gets a hash suffix).
func TestProjectKeyNeverEscapesOrCollides(t *testing.T) {
	projects := []string{"", "/", ".", "..", "./x", "../x", "x", "_", "-", "/-", "/_", "/ ", "/a/b", "/a-b", "/x"}
	byProject := map[string][]*Session{}
	for _, p := range projects {
		k := ProjectKey(p)
		if k == "" || k == "." || k == ".." || strings.ContainsAny(k, `/\`) {
			t.Errorf("ProjectKey(%q) = %q, want a plain directory name", p, k)
		}
		byProject[p] = nil
	}
	seen := map[string]string{}
	for p, k := range catalogKeys(byProject, ProjectKey) {
		if q, ok := seen[k]; ok {
			t.Errorf("projects %q and %q share the catalog key %q", p, q, k)
		}
		seen[k] = p
	}
	// "/" and "." no longer share a base key; a relative project is never
	// resolved against our own working directory.
	wd, _ := os.Getwd()
	for _, p := range []string{"/", wd, "x"} {
		if ProjectKey(".") == ProjectKey(p) {
			t.Errorf("ProjectKey(\".\") = ProjectKey(%q) = %q", p, ProjectKey(p))
		}
	}
}

// Sessions of the projects "/", "." and ".." get catalogs in directories of their
// own under the source's catalog directory; nothing lands in the directory itself
// or in the index directory above it, and a rebuild agrees.
func TestOddProjectsGetOwnCatalogs(t *testing.T) {
	root, state := t.TempDir(), t.TempDir()
	for i, wd := range []string{"/", ".", ".."} {
		dir := filepath.Join(root, []string{"slash", "dot", "dotdot"}[i])
		os.MkdirAll(dir, 0o700)
		appendFile(t, filepath.Join(dir, []string{uuidA, "bbbbbbbb-0000-4000-8000-000000000002", "cccccccc-0000-4000-8000-000000000003"}[i]+".jsonl"),
			`{"type":"metadata","workdir":"`+wd+`","createdAt":"2026-01-01T00:00:00Z"}`+"\n"+msg("2026-01-01T00:00:01Z", "in "+wd))
	}
	ix := newLayoutIndexer(t, "wave", root, state, false)
	if err := ix.Reconcile(); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{filepath.Join(state, "index", "wave", CatalogName), filepath.Join(state, "index", CatalogName)} {
		if _, err := os.Lstat(p); err == nil {
			t.Errorf("catalog written outside a project directory: %s", p)
		}
	}
	for _, wd := range []string{"/", ".", ".."} {
		if c := layoutCatalog(t, state, "wave", wd); c == nil || len(c.Sessions) != 1 || c.Project != wd {
			t.Errorf("catalog of project %q: %+v", wd, c)
		}
	}
	assertLayoutConverged(t, "wave", root, state)
}

// Catalogs that older versions left in the legacy places are adopted into their
// project's directory by Load (keeping their tails: nothing is re-read), and a
// check run reports a leftover as stale.
func TestLegacyCatalogsAdopted(t *testing.T) {
	root, state := t.TempDir(), t.TempDir()
	dir := filepath.Join(root, "slash")
	os.MkdirAll(dir, 0o700)
	appendFile(t, filepath.Join(dir, uuidA+".jsonl"),
		`{"type":"metadata","workdir":"/","createdAt":"2026-01-01T00:00:00Z"}`+"\n"+msg("2026-01-01T00:00:01Z", "root"))
	if err := newLayoutIndexer(t, "wave", root, state, false).Reconcile(); err != nil {
		t.Fatal(err)
	}
	// Put the catalog where older versions wrote it.
	now := filepath.Join(state, "index", "wave", ProjectKey("/"), CatalogName)
	legacy := filepath.Join(state, "index", "wave", CatalogName)
	if err := os.Rename(now, legacy); err != nil {
		t.Fatal(err)
	}
	chk := newLayoutIndexer(t, "wave", root, state, true)
	if err := chk.Reconcile(); err != nil {
		t.Fatal(err)
	}
	found := false
	for _, d := range chk.Differences() {
		found = found || (d.Path == legacy && d.Change == "remove")
	}
	if !found {
		t.Errorf("check run does not report the legacy catalog %s as stale: %+v", legacy, chk.Differences())
	}

	ix := newLayoutIndexer(t, "wave", root, state, false)
	if err := ix.Load(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Lstat(legacy); err == nil {
		t.Errorf("legacy catalog %s still there after Load", legacy)
	}
	if err := ix.Reconcile(); err != nil {
		t.Fatal(err)
	}
	if st := ix.Stats(); st.BytesRead != 0 || st.CatalogWrites != 0 {
		t.Errorf("after adoption: read %d bytes and wrote %d catalogs, want 0 and 0", st.BytesRead, st.CatalogWrites)
	}
	assertLayoutConverged(t, "wave", root, state)
}
