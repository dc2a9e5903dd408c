package indexer

import (
	"fmt"
	"path/filepath"
	"runtime"
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

// TestReleaseFreesOutputs: Release lets go of the record of the files the
// indexer wrote, its memory too (a map emptied by clear keeps its buckets).
func TestReleaseFreesOutputs(t *testing.T) {
	state := t.TempDir()
	ix, err := New(Options{Source: "wave", Layout: "wave", Root: t.TempDir(), StateDir: state})
	if err != nil {
		t.Fatal(err)
	}
	heap := func() uint64 {
		var m runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&m)
		return m.HeapAlloc
	}
	before := heap()
	catDir, root := CatalogDir(state, "wave"), t.TempDir()
	for i := range 50_000 {
		dir := filepath.Join(catDir, fmt.Sprint("-w-p", i))
		ix.outputs.set(filepath.Join(dir, CatalogName), output{sum: 1})
		ix.outputs.set(filepath.Join(dir, ResumeName), output{sum: 2})
		ix.outputs.set(filepath.Join(root, fmt.Sprint("p", i), CatalogName), output{sum: 3}) // a native index's
	}
	held := heap()
	ix.Release()
	after := heap()
	if ix.outputs.len() != 0 {
		t.Fatalf("%d outputs kept after Release", ix.outputs.len())
	}
	if held < before || after > before+(held-before)/4 {
		t.Errorf("heap %d B before the outputs, %d B with them, %d B after Release: their memory is kept", before, held, after)
	}
	runtime.KeepAlive(ix)
}

// TestWillReleaseParksNothing: a pass that Release follows (reindex) leaves
// what it read unparked, and writes the same catalogs, byte for byte, as a pass
// that parks; Release ends it (the next pass parks again).
func TestWillReleaseParksNothing(t *testing.T) {
	root := filepath.Join(t.TempDir(), "store")
	manyWaveSessions(t, root, 40)
	parked := func(ix *Indexer) (n, all int) {
		ix.mu.Lock()
		defer ix.mu.Unlock()
		for u := range ix.units.all() {
			all++
			if u.parked {
				n++
			}
		}
		return n, all
	}
	plainState, releaseState := t.TempDir(), t.TempDir()
	plain := newLayoutIndexer(t, "wave", root, plainState, false)
	if err := plain.Reconcile(); err != nil {
		t.Fatal(err)
	}
	if n, all := parked(plain); n == 0 || all == 0 {
		t.Fatalf("a plain pass parked %d of %d units: the test proves nothing", n, all)
	}
	rel := newLayoutIndexer(t, "wave", root, releaseState, false)
	rel.BatchFullPasses()
	rel.WillRelease()
	if err := rel.Reconcile(); err != nil {
		t.Fatal(err)
	}
	if n, all := parked(rel); n != 0 || all == 0 {
		t.Fatalf("a pass before Release parked %d of %d units, want none", n, all)
	}
	want := treeFiles(t, filepath.Join(plainState, "index"), "")
	got := treeFiles(t, filepath.Join(releaseState, "index"), "")
	if len(got) != len(want) || len(want) == 0 {
		t.Fatalf("%d catalog files, want %d", len(got), len(want))
	}
	for p, w := range want {
		if got[p] != w {
			t.Errorf("%s differs:\n%s", p, lineDiff(got[p], w))
		}
	}
	rel.Release()
	rel.mu.Lock()
	after := rel.releaseAfter
	rel.mu.Unlock()
	if after {
		t.Error("WillRelease outlived the Release that followed its pass")
	}
}
