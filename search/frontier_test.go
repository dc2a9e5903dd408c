package search

import (
	"math/rand/v2"
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
	// A pair of higher tf and equal length beats the one before it.
	f.Add([]byte{1, 5, 2, 5, 0, 8, 1, 8, 3, 2, 3, 1})
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

// TestRunAfter: the galloping search finds the run a binary search over all runs
// finds, from any earlier run.
func TestRunAfter(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 11))
	for range 200 {
		var w sumWriter
		first := uint32(0)
		for i := range 1 + rng.IntN(300) {
			if i > 0 {
				first += 1 + uint32(rng.IntN(5))
			}
			w.runs = append(w.runs, sumRun{first: first, ord: uint32(i)})
		}
		for range 50 {
			d := uint32(rng.IntN(int(first) + 5))
			want := sort.Search(len(w.runs), func(i int) bool { return w.runs[i].first > d }) - 1
			for from := -1; from < want; from++ {
				if got := w.runAfter(from, d); got != want {
					t.Fatalf("runAfter(%d, %d) = %d, want %d (runs %v)", from, d, got, want, w.runs)
				}
			}
		}
	}
}
