package indexer

import (
	"fmt"
	"math/rand/v2"
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
