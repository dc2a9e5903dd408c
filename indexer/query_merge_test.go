package indexer

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
)

// mergeCatalogs gives what sorting every entry gives, for any number of
// catalogs, sorted (as Encode writes them) or not, with equal timestamps and ids
// across catalogs.
func TestMergeCatalogsIsSortEntries(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for _, k := range []int{0, 1, 2, 3, 7, 64} {
		var cats []*Catalog
		var all []Entry
		for c := range k {
			cat := &Catalog{Source: []string{"a", "b"}[r.IntN(2)], Layout: "wave", Project: fmt.Sprintf("/p%d", r.IntN(4))}
			for range r.IntN(40) {
				cat.Sessions = append(cat.Sessions, &Session{ID: fmt.Sprintf("id%d", r.IntN(30)), File: fmt.Sprintf("f%d", r.IntN(3)),
					LastActiveAt: fmt.Sprintf("2026-01-%02dT00:00:00Z", 1+r.IntN(5))})
			}
			if c%3 != 0 {
				SortSessions(cat.Sessions)
			}
			for _, s := range cat.Sessions {
				all = append(all, Entry{Session: s, Source: cat.Source, Layout: cat.Layout, Project: cat.Project})
			}
			cats = append(cats, cat)
		}
		SortEntries(all)
		got := mergeCatalogs(cats)
		if len(got) != len(all) {
			t.Fatalf("%d catalogs: %d entries, want %d", k, len(got), len(all))
		}
		for i := range all {
			if compareEntries(got[i], all[i]) != 0 {
				t.Fatalf("%d catalogs: entry %d is %+v, want %+v", k, i, got[i], all[i])
			}
		}
		if !slices.IsSortedFunc(got, compareEntries) {
			t.Fatalf("%d catalogs: not sorted", k)
		}
	}
}
