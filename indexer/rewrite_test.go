package indexer

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// rewriteStore makes a Wave store with one session whose first prompt is "alpha"
// and whose file is longer than the head window; it returns root, state and file.
func rewriteStore(t *testing.T) (root, state, file string) {
	t.Helper()
	root, state = t.TempDir(), t.TempDir()
	dir := filepath.Join(root, "p")
	os.MkdirAll(dir, 0o700)
	file = filepath.Join(dir, uuidA+".jsonl")
	header := `{"type":"metadata","workdir":"/w/p","createdAt":"2026-01-01T00:00:00Z"}` + "\n"
	body := msg("2026-01-01T00:00:01Z", "alpha") + strings.Repeat(msg("2026-01-01T00:00:02Z", strings.Repeat("y", 200)), 20)
	appendFile(t, file, header+body)
	old := time.Now().Add(-time.Hour)
	os.Chtimes(file, old, old)
	return root, state, file
}

// rewriteInPlace replaces old with new (same length) in the file, keeping its inode.
func rewriteInPlace(t *testing.T, file, old, new string) {
	t.Helper()
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	i := strings.Index(string(data), old)
	if i < 0 || len(old) != len(new) {
		t.Fatalf("rewriteInPlace: %q not in file or lengths differ", old)
	}
	f, err := os.OpenFile(file, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteAt([]byte(new), int64(i)); err != nil {
		t.Fatal(err)
	}
}

func firstPromptOf(t *testing.T, state string) string {
	t.Helper()
	c := layoutCatalog(t, state, "wave", "/w/p")
	if c == nil || len(c.Sessions) != 1 {
		t.Fatalf("catalog of /w/p: %+v", c)
	}
	return c.Sessions[0].FirstPrompt
}

// An in-place rewrite of an earlier line with the same length (same inode, newer
// mtime) is re-read in full, by a running indexer and across a restart.
func TestRewriteSameSizeNewerMtime(t *testing.T) {
	for _, restart := range []bool{false, true} {
		root, state, file := rewriteStore(t)
		ix := newLayoutIndexer(t, "wave", root, state, false)
		if err := ix.Reconcile(); err != nil {
			t.Fatal(err)
		}
		rewriteInPlace(t, file, "alpha", "omega")
		if restart {
			ix = newLayoutIndexer(t, "wave", root, state, false)
			if err := ix.Load(); err != nil {
				t.Fatal(err)
			}
			if err := ix.Reconcile(); err != nil {
				t.Fatal(err)
			}
		} else if err := ix.Update([]string{file}); err != nil {
			t.Fatal(err)
		}
		if got := firstPromptOf(t, state); got != "omega" {
			t.Errorf("restart=%v: first prompt after a same-size rewrite = %q, want %q", restart, got, "omega")
		}
		assertLayoutConverged(t, "wave", root, state)
	}
}

// Growth whose head was rewritten is re-read in full; a plain append is not.
func TestRewriteHeadThenGrow(t *testing.T) {
	root, state, file := rewriteStore(t)
	ix := newLayoutIndexer(t, "wave", root, state, false)
	if err := ix.Reconcile(); err != nil {
		t.Fatal(err)
	}
	rewriteInPlace(t, file, "alpha", "omega")
	appendFile(t, file, msg("2026-01-02T00:00:00Z", "more"))
	if err := ix.Update([]string{file}); err != nil {
		t.Fatal(err)
	}
	if got := firstPromptOf(t, state); got != "omega" {
		t.Errorf("first prompt after head rewrite + append = %q, want %q", got, "omega")
	}
	assertLayoutConverged(t, "wave", root, state)
}

// A rewrite that keeps size and mtime escapes the stat-only reconcile but not the
// periodic verification.
func TestVerifyCatchesRewriteWithSameStat(t *testing.T) {
	root, state, file := rewriteStore(t)
	ix := newLayoutIndexer(t, "wave", root, state, false)
	if err := ix.Reconcile(); err != nil {
		t.Fatal(err)
	}
	fi, _ := os.Stat(file)
	rewriteInPlace(t, file, "alpha", "omega")
	os.Chtimes(file, fi.ModTime(), fi.ModTime())
	if err := ix.Reconcile(); err != nil {
		t.Fatal(err)
	}
	if got := firstPromptOf(t, state); got != "alpha" {
		t.Fatalf("stat-only reconcile re-read an unchanged-looking file: %q", got)
	}
	if err := ix.Verify(); err != nil {
		t.Fatal(err)
	}
	if got := firstPromptOf(t, state); got != "omega" {
		t.Errorf("first prompt after Verify = %q, want %q", got, "omega")
	}
	// Verifying an unchanged file costs its two fingerprint windows, no more.
	before := ix.Stats().BytesRead
	if err := ix.Verify(); err != nil {
		t.Fatal(err)
	}
	if got, want := ix.Stats().BytesRead-before, int64(fpWindow+headWindow); got != want {
		t.Errorf("verifying an unchanged file read %d bytes, want %d", got, want)
	}
}
