package indexer

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
)

// A project whose own key is the collision key another project gets (a
// directory named like "/p/a-b-<8 hex>" beside "/p/a-b" and "/p/a/b") does not
// share that project's catalog: every project has a catalog of its own, and
// each is listed by project, whole.
func TestCatalogKeysOwnKeyEqualsCollisionKey(t *testing.T) {
	second := "/p/a/b" // sorts after "/p/a-b", with which it shares the key p-a-b
	third := "/" + collisionKey(ProjectKey(second), second)
	third = "/p/a-b" + third[len("/p-a-b"):] // its own key is second's collision key
	projects := []string{"/p/a-b", second, third}
	// And a fourth whose own key is the third's collision key: moved in turn.
	fourth := "/p/a-b" + collisionKey(ProjectKey(third), third)[len("p-a-b"):]
	for _, set := range [][]string{projects, append(projects[:3:3], fourth)} {
		in := map[string]bool{}
		for _, p := range set {
			in[p] = true
		}
		keys := catalogKeys(in, ProjectKey)
		owner := map[string]string{}
		for p, k := range keys {
			if q, ok := owner[k]; ok {
				t.Errorf("projects %q and %q share the catalog key %q", q, p, k)
			}
			owner[k] = p
			// Readers look for a project's catalog under these two keys only.
			if b := ProjectKey(p); k != b && k != collisionKey(b, p) {
				t.Errorf("project %q has key %q, neither its own nor its collision key", p, k)
			}
		}
		if len(keys) != len(set) {
			t.Errorf("keys %v for %d projects", keys, len(set))
		}
	}

	root, state := t.TempDir(), t.TempDir()
	for i, wd := range projects {
		dir := filepath.Join(root, fmt.Sprintf("p%d", i))
		os.MkdirAll(dir, 0o700)
		for j := range 2 {
			appendFile(t, filepath.Join(dir, fmt.Sprintf("%08d-0000-4000-8000-%012d.jsonl", i, j)),
				`{"type":"metadata","workdir":"`+wd+`","createdAt":"2026-01-01T00:00:00Z"}`+"\n"+msg("2026-01-01T00:00:01Z", "hi"))
		}
	}
	ix := newLayoutIndexer(t, "wave", root, state, false)
	if err := ix.Reconcile(); err != nil {
		t.Fatal(err)
	}
	for _, p := range projects {
		got, err := ReadCatalogs(state, nil, []string{p})
		if err != nil || len(got) != 2 {
			t.Errorf("ReadCatalogs(%q) = %d sessions (%v), want its 2", p, len(got), err)
		}
	}
	all, err := ReadCatalogs(state, nil, nil)
	if err != nil || len(all) != 6 {
		t.Errorf("ReadCatalogs(all) = %d sessions (%v), want 6", len(all), err)
	}
	assertLayoutConverged(t, "wave", root, state)
}
