package indexer

import (
	"os"
	"path/filepath"
	"reflect"
	"testing"
)

// A flush whose projects are those of the last one keeps the last one's
// catalog keys rather than assigning them all again (under load every append
// did); a new project, or a pass that forgets the base keys, assigns them
// afresh, a collision's suffix included.
func TestFlushKeepsCatalogKeysOfSameProjects(t *testing.T) {
	root, state := t.TempDir(), t.TempDir()
	ids := []string{uuidA, "bbbbbbbb-0000-4000-8000-000000000002", "cccccccc-0000-4000-8000-000000000003"}
	write := func(i int, wd string) string {
		dir := filepath.Join(root, "d"+ids[i][:1])
		os.MkdirAll(dir, 0o700)
		path := filepath.Join(dir, ids[i]+".jsonl")
		appendFile(t, path, `{"type":"metadata","workdir":"`+wd+`","createdAt":"2026-01-01T00:00:00Z"}`+"\n"+msg("2026-01-01T00:00:01Z", "hi"))
		return path
	}
	a := write(0, "/p/a-b")
	write(1, "/p/c")
	ix := newLayoutIndexer(t, "wave", root, state, false)
	if err := ix.Reconcile(); err != nil {
		t.Fatal(err)
	}
	keysOf := func() (map[string]string, uintptr) {
		ix.mu.Lock()
		defer ix.mu.Unlock()
		m := make(map[string]string, len(ix.keys))
		for p, k := range ix.keys {
			m[p] = k
		}
		return m, reflect.ValueOf(ix.keys).Pointer()
	}
	appendAndUpdate := func(path string) {
		t.Helper()
		appendFile(t, path, msg("2026-01-01T00:00:02Z", "more"))
		if err := ix.Update([]string{path}); err != nil {
			t.Fatal(err)
		}
	}
	// The same projects: the keys are kept, not assigned again.
	appendAndUpdate(a)
	before, p0 := keysOf()
	appendAndUpdate(a)
	after, p1 := keysOf()
	if p0 != p1 || !reflect.DeepEqual(before, after) {
		t.Errorf("a flush of the same projects assigned the keys again: %v (map %x) then %v (map %x)", before, p0, after, p1)
	}
	// A new project whose key collides with one already there ("/p/a/b" is
	// Wave-encoded as "/p/a-b" is): assigned afresh, the later one suffixed.
	c := write(2, "/p/a/b")
	if err := ix.Update([]string{c}); err != nil {
		t.Fatal(err)
	}
	keys, p2 := keysOf()
	if p2 == p1 || len(keys) != 3 {
		t.Fatalf("a new project kept the old keys: %v", keys)
	}
	want := catalogKeys(map[string]bool{"/p/a-b": true, "/p/c": true, "/p/a/b": true}, ProjectKey)
	if !reflect.DeepEqual(keys, want) {
		t.Errorf("keys %v, want %v", keys, want)
	}
	for p, k := range keys {
		if _, err := os.Stat(filepath.Join(CatalogDir(state, "wave"), k, CatalogName)); err != nil {
			t.Errorf("project %q: no catalog under its key %q: %v", p, k, err)
		}
	}
	// The same three projects again, the collision among them: assigned afresh
	// (a kept key must be its project's own base key) and unchanged.
	appendAndUpdate(a)
	again, _ := keysOf()
	if !reflect.DeepEqual(again, want) {
		t.Errorf("keys after another flush %v, want %v", again, want)
	}
}
