package indexer

import (
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestOutputTabLikeMap records, replaces and forgets outputs at random, catalog
// and resume files of a few keys and other paths alike (a native index, a
// file beside the catalog, one in a catalog directory's subdirectory, the
// catalog directory itself), and compares the table with a map by path after
// every step.
func TestOutputTabLikeMap(t *testing.T) {
	catDir := filepath.Join(t.TempDir(), "index", "wave")
	var tab outputTab
	tab.init(catDir)
	paths := []string{catDir, filepath.Join(catDir, CatalogName), filepath.Join(t.TempDir(), "p", CatalogName)}
	for k := range 6 {
		key := fmt.Sprint("-w-proj-", k)
		paths = append(paths,
			filepath.Join(catDir, key, CatalogName),
			filepath.Join(catDir, key, ResumeName),
			filepath.Join(catDir, key, "other.json"),
			filepath.Join(catDir, key, "sub", CatalogName))
	}
	want := map[string]output{}
	rng := rand.New(rand.NewPCG(1, 2))
	for step := range 5000 {
		p := paths[rng.IntN(len(paths))]
		switch rng.IntN(3) {
		case 0, 1:
			o := output{sum: rng.Uint64(), size: rng.Int64(), mtime: int64(step), ino: rng.Uint64()}
			// The path as a writer holds it: a string of its own.
			tab.set(strings.Clone(p), o)
			want[p] = o
		default:
			tab.del(p)
			delete(want, p)
		}
		if step%500 == 0 {
			tab.clear()
			clear(want)
		}
		for _, q := range paths {
			got, ok := tab.get(q)
			w, wok := want[q]
			if ok != wok || got != w {
				t.Fatalf("step %d: get(%s) = %+v, %v; want %+v, %v", step, q, got, ok, w, wok)
			}
		}
		if tab.len() != len(want) {
			t.Fatalf("step %d: %d outputs, want %d", step, tab.len(), len(want))
		}
	}
	// A catalog and its resume file are one entry, under their key.
	tab.clear()
	tab.set(filepath.Join(catDir, "k", CatalogName), output{sum: 1})
	tab.set(filepath.Join(catDir, "k", ResumeName), output{sum: 2})
	if len(tab.cats) != 1 || len(tab.other) != 0 {
		t.Errorf("a catalog and its resume file kept as %d catalog entries and %d others, want 1 and 0", len(tab.cats), len(tab.other))
	}
}

// TestOutputsEditedByHand: catalogs and resume files changed by hand while a
// daemon runs (one removed, one renamed to a key no project owns, one
// catalog directory removed whole) are all found by a check and set right by
// VerifyOutputs and the next pass, which also removes the stray directory;
// one edited in place while no daemon ran (its size and mtime kept) is set
// right by the next daemon's VerifyOutputs. The record of what was written
// (one entry a catalog key) never passes a changed file for ours.
func TestOutputsEditedByHand(t *testing.T) {
	root, state := t.TempDir(), t.TempDir()
	manyWaveSessions(t, root, 21)
	ix := newLayoutIndexer(t, "wave", root, state, false)
	if err := ix.Reconcile(); err != nil {
		t.Fatal(err)
	}
	catDir := CatalogDir(state, "wave")
	key := func(i int) string { return ProjectKey(fmt.Sprintf("/home/u/p%d", i)) }
	if err := os.Remove(filepath.Join(catDir, key(0), ResumeName)); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(filepath.Join(catDir, key(1)), filepath.Join(catDir, "-stray")); err != nil {
		t.Fatal(err)
	}
	if err := os.RemoveAll(filepath.Join(catDir, key(3))); err != nil {
		t.Fatal(err)
	}
	chk := newLayoutIndexer(t, "wave", root, state, true)
	chk.Reconcile()
	seen := map[string]bool{}
	for _, d := range chk.Differences() {
		seen[filepath.Base(filepath.Dir(d.Path))+"/"+filepath.Base(d.Path)] = true
	}
	for _, want := range []string{key(0) + "/" + ResumeName, key(1) + "/" + CatalogName, key(1) + "/" + ResumeName,
		"-stray/" + CatalogName, key(3) + "/" + CatalogName, key(3) + "/" + ResumeName} {
		if !seen[want] {
			t.Errorf("check: no difference for %s (%v)", want, seen)
		}
	}
	if err := ix.VerifyOutputs(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(catDir, "-stray")); !os.IsNotExist(err) {
		t.Errorf("the stray catalog directory is still there after VerifyOutputs (%v)", err)
	}
	assertLayoutConverged(t, "wave", root, state)

	// An edit in place while no daemon runs: the next one's VerifyOutputs
	// sets it right although its stat is what was written.
	cat2 := filepath.Join(catDir, key(2), CatalogName)
	fi, err := os.Stat(cat2)
	if err != nil {
		t.Fatal(err)
	}
	want, _ := os.ReadFile(cat2)
	data := []byte(string(want))
	data[len(data)-2] ^= 1
	if err := os.WriteFile(cat2, data, 0o600); err != nil {
		t.Fatal(err)
	}
	os.Chtimes(cat2, fi.ModTime(), fi.ModTime())
	ix2 := newLayoutIndexer(t, "wave", root, state, false)
	if err := ix2.Load(); err != nil {
		t.Fatal(err)
	}
	if err := ix2.Start(); err != nil {
		t.Fatal(err)
	}
	if err := ix2.VerifyOutputs(); err != nil {
		t.Fatal(err)
	}
	if got, _ := os.ReadFile(cat2); string(got) != string(want) {
		t.Errorf("VerifyOutputs after a restart left the catalog edited in place")
	}
	assertLayoutConverged(t, "wave", root, state)
}
