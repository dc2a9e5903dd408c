package search

import (
	"bytes"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"testing"
	"time"
)

// TestColdBuildEqualsOrdinaryBuild: a cold build (ColdBuild, then Close) writes
// its segments without summaries and merges none of them along the way, then
// leaves one segment, byte for byte the one an ordinary build of the same feed
// leaves after Compact (tier merges along the way, summaries in every segment),
// with units removed after their commit dropped in both. The cold build's final
// merge is cut in two term ranges merged at once (parallelMergeMin 0), the
// ordinary build's merges are not: the split writes the same bytes.
func TestColdBuildEqualsOrdinaryBuild(t *testing.T) {
	defer func(d uint32, p uint64) { sumMinDF, parallelMergeMin = d, p }(sumMinDF, parallelMergeMin)
	sumMinDF = 8 // summaries on the small corpus's common terms
	// Two procs at least: the final merge splits.
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(max(2, runtime.GOMAXPROCS(0))))
	units := genUnits(t)
	build := func(cold bool) (final []byte, mid int) {
		parallelMergeMin = math.MaxUint64
		if cold {
			parallelMergeMin = 0
		}
		dir := filepath.Join(t.TempDir(), DirName)
		x, err := Open(Options{Dir: dir, SpillBytes: 64 << 10, MaxSegments: 40, Now: func() time.Time { return time.Unix(1_800_000_000, 0) }})
		if err != nil {
			t.Fatal(err)
		}
		if cold {
			x.ColdBuild()
		}
		for i, u := range units {
			u.Hand(x, true, true)
			x.Done(u.Ref, int64(1000+i), "fp")
			if i%10 == 9 {
				if err := x.Sync(nil); err != nil {
					t.Fatal(err)
				}
			}
			if i%10 == 9 && i < 40 {
				x.Remove(units[i-3].Ref) // its docs are dropped by a merge after this commit
			}
		}
		if err := x.Sync(nil); err != nil {
			t.Fatal(err)
		}
		x.mergeWG.Wait()
		mid = x.Segments()
		if cold {
			if m := x.Stats().Merges; m != 0 {
				t.Errorf("cold build: %d merges before its end, want 0", m)
			}
			if n := summaries(t, x); n != 0 {
				t.Errorf("cold build: %d summaries before its end, want 0", n)
			}
			if err := x.Close(); err != nil {
				t.Fatal(err)
			}
		} else {
			if x.Stats().Merges == 0 || summaries(t, x) == 0 {
				t.Fatalf("ordinary build: stats %+v, %d summaries; want merges and summaries", x.Stats(), summaries(t, x))
			}
			if err := x.Compact(); err != nil {
				t.Fatal(err)
			}
			if n := summaries(t, x); n == 0 {
				t.Fatal("no summaries after Compact")
			}
			x.Close()
		}
		segs, _ := filepath.Glob(filepath.Join(dir, "seg-*"))
		if len(segs) != 1 {
			t.Fatalf("cold=%v: %d segment files at the end, want 1", cold, len(segs))
		}
		if parts, _ := filepath.Glob(filepath.Join(dir, "*.part")); len(parts) > 0 {
			t.Fatalf("cold=%v: merge parts left: %v", cold, parts)
		}
		data, err := os.ReadFile(segs[0])
		if err != nil {
			t.Fatal(err)
		}
		x, err = Open(Options{Dir: dir})
		if err != nil {
			t.Fatal(err)
		}
		defer x.Close()
		if n := summaries(t, x); n == 0 {
			t.Fatalf("cold=%v: the final segment has no summaries", cold)
		}
		return data, mid
	}
	want, _ := build(false)
	splits := mergeSplits.Load()
	got, mid := build(true)
	if mergeSplits.Load() == splits {
		t.Error("the cold build's final merge was not split")
	}
	if mid < 5 {
		t.Fatalf("the cold build committed %d segments before its end; the test needs several", mid)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("the cold build's segment (%d bytes) differs from the ordinary build's (%d bytes)", len(got), len(want))
	}
}

// summaries counts the terms with a summary in the index's committed segments.
func summaries(t *testing.T, x *Index) int {
	t.Helper()
	x.mu.Lock()
	defer x.mu.Unlock()
	n := 0
	for _, s := range x.segs {
		if err := s.dictScan("", func(e dictEntry) bool {
			if e.slen > 0 {
				n++
			}
			return true
		}); err != nil {
			t.Fatal(err)
		}
	}
	return n
}

// TestSplitMergeEqualsWhole: a merge cut at each of several pivots (all terms
// before it merged on the caller, the rest on a goroutine into a part) writes
// the same segment as the merge in one piece, with drops (remapped postings) and
// without (spliced).
func TestSplitMergeEqualsWhole(t *testing.T) {
	defer func(d uint32) { sumMinDF = d }(sumMinDF)
	sumMinDF = 8
	units := genUnits(t)
	dir := filepath.Join(t.TempDir(), DirName)
	x, err := Open(Options{Dir: dir, SpillBytes: 64 << 10, MaxSegments: 100, Now: func() time.Time { return time.Unix(1_800_000_000, 0) }})
	if err != nil {
		t.Fatal(err)
	}
	x.ColdBuild() // no merges along the way
	handAll(t, x, units, 10)
	x.Remove(units[2].Ref)
	if err := x.Sync(nil); err != nil {
		t.Fatal(err)
	}
	x.cold = false
	defer x.Close()
	var terms []string
	for _, s := range x.segs {
		s.dictScan("", func(e dictEntry) bool {
			terms = append(terms, e.term)
			return true
		})
	}
	pivots := []string{"", terms[len(terms)/3], terms[len(terms)/2] + "\x00", "zzzzzzzz", terms[0]}
	var want []byte
	for _, from := range []int{0, 1} {
		for _, pivot := range pivots {
			t.Run(fmt.Sprintf("from=%d/pivot=%q", from, pivot), func(t *testing.T) {
				x.mu.Lock()
				job := x.planMergeLocked(from, false)
				x.mu.Unlock()
				job.pivot = &pivot
				s, err := job.build()
				if err != nil {
					t.Fatal(err)
				}
				s.close()
				data, err := os.ReadFile(s.name)
				os.Remove(s.name)
				if err != nil {
					t.Fatal(err)
				}
				if pivot == "" {
					want = data
					return
				}
				if !bytes.Equal(data, want) {
					t.Fatalf("merge split at %q (%d bytes) differs from the whole (%d bytes)", pivot, len(data), len(want))
				}
			})
		}
	}
}
