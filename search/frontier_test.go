package search

import (
	"slices"
	"sort"
	"testing"
)

// refAddFrontier is addFrontier as first written, with the slices package.
func refAddFrontier(f []sumPair, p sumPair) []sumPair {
	for _, q := range f {
		if q.tf >= p.tf && q.len <= p.len {
			return f
		}
	}
	f = slices.DeleteFunc(f, func(q sumPair) bool { return p.tf >= q.tf && p.len <= q.len })
	i := sort.Search(len(f), func(i int) bool { return f[i].tf > p.tf })
	return slices.Insert(f, i, p)
}

// FuzzAddFrontier: the in-place frontier equals the reference after every pair of
// a sequence (each byte pair of the input is one (tf, length)).
func FuzzAddFrontier(f *testing.F) {
	f.Add([]byte{1, 5, 2, 4, 3, 3, 1, 1, 9, 9, 2, 2})
	f.Add([]byte{5, 1, 4, 2, 3, 3, 2, 4, 1, 5, 6, 0})
	f.Add([]byte{1, 1, 1, 1, 2, 2, 2, 2})
	f.Fuzz(func(t *testing.T, b []byte) {
		var got, want []sumPair
		for i := 0; i+1 < len(b); i += 2 {
			p := sumPair{uint32(b[i] % 16), uint32(b[i+1] % 16)}
			got = addFrontier(got, p)
			want = refAddFrontier(want, p)
			if !slices.Equal(got, want) {
				t.Fatalf("after %v: %v, want %v", p, got, want)
			}
		}
	})
}
