package indexer

import (
	"os"
	"path/filepath"
	"testing"
)

// A project directory replaced by a symlink to a directory outside the root:
// its sessions are forgotten, and its native index is neither removed nor
// written through the symlink (the target's own sessions-index.json stays as
// it was), whether an event reports the swap or a rescan finds it.
func TestNativeIndexNotTouchedThroughASymlinkedDir(t *testing.T) {
	for _, by := range []string{"event", "rescan"} {
		t.Run(by, func(t *testing.T) {
			root, state, files := startStore(t, 2)
			ix := newLayoutIndexer(t, "wave", root, state, false)
			if err := ix.Reconcile(); err != nil {
				t.Fatal(err)
			}
			outside := t.TempDir()
			theirs := filepath.Join(outside, CatalogName)
			if err := os.WriteFile(theirs, []byte("not ours\n"), 0o600); err != nil {
				t.Fatal(err)
			}
			p0 := filepath.Join(root, "p0")
			if err := os.RemoveAll(p0); err != nil {
				t.Fatal(err)
			}
			if err := os.Symlink(outside, p0); err != nil {
				t.Fatal(err)
			}
			var err error
			if by == "event" {
				err = ix.Update([]string{p0})
			} else {
				err = ix.Verify()
			}
			if err != nil {
				t.Fatal(err)
			}
			if data, err := os.ReadFile(theirs); err != nil || string(data) != "not ours\n" {
				t.Errorf("the file behind the symlink: %q, %v; want it untouched", data, err)
			}
			for _, s := range ix.Sessions() {
				if s.File == files[0] || s.File == files[1] {
					t.Errorf("a session of the symlinked directory is still indexed: %s", s.File)
				}
			}
			if got := len(ix.Sessions()); got != len(files)-2 {
				t.Errorf("%d sessions, want %d", got, len(files)-2)
			}
		})
	}
}
