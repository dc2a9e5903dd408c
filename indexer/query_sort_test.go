package indexer

import (
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// SortEntries (keys of lastActiveAt's first 16 bytes, entries on a tie, the
// permutation applied in place) orders entries as sorting them by
// compareEntries does: timestamps of different shapes and lengths, shorter
// than 16 bytes, with NUL bytes, equal ones with ties broken by id, source,
// file and project.
func TestSortEntriesIsCompareOrder(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	stamps := []string{"", "2", "2026", "2026-01-01", "2026-01-01\x00", "2026-01-01\x00\x01", "2026-01-01T00:00",
		"2026-01-01T00:00Z", "2026-01-01T00:00:00Z", "2026-01-01T00:00:00.5Z", "2026-01-01T00:00:00.123Z", "2026-01-01T00:00:01Z",
		"2026-01-02T00:00:00Z", "2026-01-01T00:00:00+02:00", "garbage", "\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff"}
	for _, n := range []int{0, 1, 2, 3, 50, 2000} {
		var cats []*Catalog
		var want []Entry
		for len(want) < n {
			cat := &Catalog{Source: []string{"a", "b"}[r.IntN(2)], Layout: "wave", Project: fmt.Sprintf("/p%d", r.IntN(4))}
			for range min(1+r.IntN(40), n-len(want)) {
				s := &Session{ID: fmt.Sprintf("id%d", r.IntN(30)), File: fmt.Sprintf("f%d", r.IntN(3)), LastActiveAt: stamps[r.IntN(len(stamps))]}
				cat.Sessions = append(cat.Sessions, s)
				want = append(want, Entry{Session: s, Source: cat.Source, Layout: cat.Layout, Project: cat.Project})
			}
			cats = append(cats, cat)
		}
		slices.SortStableFunc(want, compareEntries)
		got := mergeCatalogs(cats)
		if len(got) != len(want) {
			t.Fatalf("%d entries: got %d", n, len(got))
		}
		for i := range want {
			if compareEntries(got[i], want[i]) != 0 {
				t.Fatalf("%d entries: entry %d is %+v %+v, want %+v %+v", n, i, got[i], *got[i].Session, want[i], *want[i].Session)
			}
		}
		seen := map[*Session]int{}
		for _, e := range got {
			seen[e.Session]++
		}
		for _, e := range want {
			if seen[e.Session] != 1 {
				t.Fatalf("%d entries: session %+v appears %d times", n, *e.Session, seen[e.Session])
			}
		}
	}
}

// A stray file beside the project directories of a source's index is no
// catalog and no error (catalogFiles does not stat what it names).
func TestReadCatalogsSkipsStrayFiles(t *testing.T) {
	state := t.TempDir()
	dir := filepath.Join(state, "index", "src")
	if err := os.MkdirAll(filepath.Join(dir, "empty-project"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "stray"), []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	es, err := ReadCatalogs(state, nil, nil)
	if err != nil || len(es) != 0 {
		t.Fatalf("ReadCatalogs = %d entries, %v; want none, no error", len(es), err)
	}
}
