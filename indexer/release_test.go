package indexer

import (
	"path/filepath"
	"testing"
)

// TestReleaseForgetsUnitsNotCatalogs: after a pass, Release lets the units go (a
// reindex does not hold every source's accumulators to the end); the catalogs on
// disk stay, and a later pass from nothing finds them current and writes none.
func TestReleaseForgetsUnitsNotCatalogs(t *testing.T) {
	root, state := filepath.Join(t.TempDir(), "store"), t.TempDir()
	manyWaveSessions(t, root, 40)
	ix := newLayoutIndexer(t, "wave", root, state, false)
	if err := ix.Reconcile(); err != nil {
		t.Fatal(err)
	}
	if len(ix.Sessions()) == 0 {
		t.Fatal("no sessions indexed")
	}
	before := treeFiles(t, filepath.Join(state, "index"), "")
	writes := ix.Stats().CatalogWrites
	ix.Release()
	if n := len(ix.Sessions()); n != 0 {
		t.Fatalf("after Release the indexer holds %d sessions, want 0", n)
	}
	if err := ix.Reconcile(); err != nil {
		t.Fatal(err)
	}
	if got := ix.Stats().CatalogWrites; got != writes {
		t.Errorf("a pass after Release wrote %d catalog files, want 0", got-writes)
	}
	after := treeFiles(t, filepath.Join(state, "index"), "")
	if len(after) != len(before) {
		t.Errorf("%d catalog files after, %d before", len(after), len(before))
	}
	for p, want := range before {
		if after[p] != want {
			t.Errorf("%s changed:\n%s", p, lineDiff(after[p], want))
		}
	}
	if n := len(ix.Sessions()); n == 0 {
		t.Error("the pass after Release found no sessions")
	}
}
