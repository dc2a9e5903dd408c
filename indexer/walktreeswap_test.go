package indexer

import (
	"os"
	"path/filepath"
	"testing"
	"time"
)

// TestWalkFromListingsFollowsNoSwappedDir: a directory listed by the
// prefetcher and replaced by a symlink before the walk gets to it is not
// walked through the symlink from the old listing: nothing behind it is read
// as a unit of the store, and no stale temp file is removed there (the walk
// must never delete through a symlink), as a walk that lists afresh
// (filepath.WalkDir) would not either.
func TestWalkFromListingsFollowsNoSwappedDir(t *testing.T) {
	root := filepath.Join(t.TempDir(), "store")
	manyWaveSessions(t, root, 40)
	setReadahead(t, 0, 1, 1000, 1, false)
	name := "ffffffff-0000-4000-8000-000000000000.jsonl"
	temp := TempPrefix + "left"
	old := time.Now().Add(-time.Hour)
	dir := filepath.Join(root, "home-u-zz")
	outside := filepath.Join(t.TempDir(), "outside")
	for _, d := range []string{dir, outside} {
		os.MkdirAll(d, 0o700)
		data := `{"type":"metadata","workdir":"/home/u/zz","createdAt":"2026-01-01T00:00:00Z"}` + "\n" + msg("2026-01-01T00:00:00Z", "in "+filepath.Base(d))
		if err := os.WriteFile(filepath.Join(d, name), []byte(data), 0o600); err != nil {
			t.Fatal(err)
		}
		p := filepath.Join(d, temp)
		if err := os.WriteFile(p, []byte("x"), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Chtimes(p, old, old); err != nil {
			t.Fatal(err)
		}
	}
	ix := newLayoutIndexer(t, "wave", root, t.TempDir(), false)
	ix.opt.CleanTemps = true
	ix.mu.Lock()
	defer ix.mu.Unlock()
	ix.startPrefetchLocked()
	if ix.fetch == nil {
		t.Fatal("no prefetch started")
	}
	// The workers run a few units ahead of the walk, which has not started:
	// the last directory's unit is not read yet.
	if err := os.Rename(dir, filepath.Join(t.TempDir(), "moved")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, dir); err != nil {
		t.Fatal(err)
	}
	_, err := ix.walkLocked(".")
	ix.stopPrefetchLocked()
	if err != nil {
		t.Fatal(err)
	}
	if u := ix.units.get("home-u-zz/" + name); u != nil {
		t.Errorf("a unit was read through the symlink that replaced its directory")
	}
	if _, err := os.Lstat(filepath.Join(outside, temp)); err != nil {
		t.Errorf("a temp file was removed through the symlink that replaced its directory: %v", err)
	}
	if ix.units.get("home-u-p0/"+"00000000-0000-4000-8000-000000000000.jsonl") == nil {
		t.Errorf("the rest of the store was not read")
	}
}
