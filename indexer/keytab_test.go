package indexer

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A key is interned once, freed when its last holder lets go, and its id
// reused for the next new key without disturbing the others.
func TestKeyTabHoldDrop(t *testing.T) {
	var kt keyTab
	if k := kt.hold(""); k != 0 || kt.name(0) != "" {
		t.Fatalf("no key interned as %d (%q)", k, kt.name(0))
	}
	a1, a2, b := kt.hold("a"), kt.hold("a"), kt.hold("b")
	if a1 != a2 || a1 == b || a1 == 0 || b == 0 || kt.name(a1) != "a" || kt.name(b) != "b" {
		t.Fatalf("a %d, %d, b %d: names %q, %q", a1, a2, b, kt.name(a1), kt.name(b))
	}
	kt.drop(a1)
	if kt.name(a2) != "a" {
		t.Fatalf("a dropped once of twice: named %q", kt.name(a2))
	}
	kt.drop(a2)
	if _, ok := kt.ids["a"]; ok || kt.name(a1) != "" {
		t.Fatalf("a dropped by its last holder is still interned (%q)", kt.name(a1))
	}
	kt.drop(a2) // one drop too many: nothing changes
	c := kt.hold("c")
	if c != a1 || kt.name(c) != "c" || kt.name(b) != "b" {
		t.Fatalf("c got %d (a's was %d) named %q; b %q", c, a1, kt.name(c), kt.name(b))
	}
	if kt.hold("a") == c {
		t.Fatal("a interned again shares c's id")
	}
	kt.drop(0)
	if kt.name(0) != "" || kt.name(99) != "" {
		t.Fatal("no key has a name")
	}
}

// checkKeyTab checks that every unit's catalog keys name its project's catalog
// and that the key table holds exactly the keys units hold, each as often.
func checkKeyTab(t *testing.T, ix *Indexer) (keys map[string]bool) {
	t.Helper()
	ix.mu.Lock()
	defer ix.mu.Unlock()
	refs := map[ckey]int32{}
	keys = map[string]bool{}
	for u := range ix.units.all() {
		urel := u.rel
		want := ProjectKey("/w/" + strings.Split(urel, "/")[0])
		for _, k := range []ckey{u.skey, u.lazyKey} {
			if k == 0 {
				continue
			}
			refs[k]++
			if got := ix.ktab.name(k); got != want {
				t.Errorf("%s names catalog %q, want %q", urel, got, want)
			}
			keys[ix.ktab.name(k)] = true
		}
	}
	for name, k := range ix.ktab.ids {
		if ix.ktab.names[k] != name || ix.ktab.refs[k] != refs[k] || refs[k] == 0 {
			t.Errorf("key %q: id %d named %q, held %d times, by units %d", name, k, ix.ktab.names[k], ix.ktab.refs[k], refs[k])
		}
	}
	if len(ix.ktab.ids) != len(refs) {
		t.Errorf("%d keys interned, units hold %d", len(ix.ktab.ids), len(refs))
	}
	return keys
}

// A project's removal frees its catalog key, a new project reuses the id, and
// every unit still names its own project's catalog (the parked sessions are
// read back from it).
func TestKeyTabAcrossRemovals(t *testing.T) {
	root, state, files := startStore(t, 3)
	ix := loadedIndexer(t, root, state)
	if err := ix.Start(); err != nil {
		t.Fatal(err)
	}
	if keys := checkKeyTab(t, ix); len(keys) != 3 {
		t.Fatalf("units name %d catalogs after Load, want 3", len(keys))
	}
	if err := os.RemoveAll(filepath.Join(root, "p0")); err != nil {
		t.Fatal(err)
	}
	if err := ix.Reconcile(); err != nil {
		t.Fatal(err)
	}
	keys := checkKeyTab(t, ix)
	if keys[ProjectKey("/w/p0")] {
		t.Errorf("p0's catalog key is still held: %v", keys)
	}
	dir := filepath.Join(root, "p9")
	os.MkdirAll(dir, 0o700)
	for i := 0; i < 2; i++ {
		f := filepath.Join(dir, fmt.Sprintf("bbbbbbbb-0000-4000-8000-%012d.jsonl", i))
		appendFile(t, f, `{"type":"metadata","workdir":"/w/p9","createdAt":"2026-01-01T00:00:00Z"}`+"\n"+msg("2026-01-01T00:00:01Z", "new"))
		files = append(files, f)
	}
	if err := ix.Reconcile(); err != nil {
		t.Fatal(err)
	}
	if keys := checkKeyTab(t, ix); len(keys) != 3 || !keys[ProjectKey("/w/p9")] {
		t.Errorf("units name catalogs %v, want p1, p2 and p9's", keys)
	}
	ss := ix.Sessions()
	if len(ss) != len(files)-2 {
		t.Fatalf("%d sessions, want %d", len(ss), len(files)-2)
	}
	for _, s := range ss {
		if want := "/w/" + filepath.Base(filepath.Dir(s.File)); s.Project != want {
			t.Errorf("%s: project %q, want %q", s.File, s.Project, want)
		}
	}
}

// A daemon that reloads its catalogs (another process wrote them) lets go of
// the keys its forgotten units held: the table holds exactly what the new
// units hold, and a project removed by the other writer leaves no key behind.
func TestKeyTabAcrossReload(t *testing.T) {
	root, state, _ := startStore(t, 3)
	d := daemonIndexer(t, root, state)
	if err := d.Load(); err != nil {
		t.Fatal(err)
	}
	if err := d.Reconcile(); err != nil {
		t.Fatal(err)
	}
	if keys := checkKeyTab(t, d); len(keys) != 3 {
		t.Fatalf("units name %d catalogs after Load, want 3", len(keys))
	}
	// Another writer removes a project and rewrites the catalogs.
	if err := os.RemoveAll(filepath.Join(root, "p0")); err != nil {
		t.Fatal(err)
	}
	rewriteAsWriter(t, root, state)
	// The daemon's next pass reloads, as many times as the other writer writes.
	for i := 0; i < 3; i++ {
		if err := d.Reconcile(); err != nil {
			t.Fatal(err)
		}
		if i < 2 {
			rewriteAsWriter(t, root, state)
		}
	}
	d.mu.Lock()
	_, held := d.ktab.ids[ProjectKey("/w/p0")]
	d.mu.Unlock()
	if held {
		t.Error("the removed project's catalog key is still interned after the reload")
	}
	if keys := checkKeyTab(t, d); len(keys) != 2 {
		t.Errorf("units name %d catalogs after the reload, want 2", len(keys))
	}
}
