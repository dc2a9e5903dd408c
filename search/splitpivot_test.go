package search

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// TestSplitMergeAtBlockBoundaries: a merge cut at the first term of any
// dictionary block of any input (where splitTerm cuts, and where
// newDictIterFrom starts a block), just before it or just after it, writes the
// same segment as the merge in one piece.
func TestSplitMergeAtBlockBoundaries(t *testing.T) {
	defer func(d uint32) { sumMinDF = d }(sumMinDF)
	sumMinDF = 8
	units := genUnits(t)
	dir := filepath.Join(t.TempDir(), DirName)
	x, err := Open(Options{Dir: dir, SpillBytes: 64 << 10, MaxSegments: 100, Now: func() time.Time { return time.Unix(1_800_000_000, 0) }})
	if err != nil {
		t.Fatal(err)
	}
	x.ColdBuild()
	handAll(t, x, units, 12)
	x.Remove(units[4].Ref)
	if err := x.Sync(nil); err != nil {
		t.Fatal(err)
	}
	x.mu.Lock()
	defer x.mu.Unlock()
	x.cold = false
	defer func() { x.cold = false }()
	merge := func(pivot string) []byte {
		job := x.planMergeLocked(0, false)
		job.pivot = &pivot
		s, err := job.build()
		if err != nil {
			t.Fatalf("pivot %q: %v", pivot, err)
		}
		s.close()
		data, err := os.ReadFile(s.name)
		os.Remove(s.name)
		if err != nil {
			t.Fatal(err)
		}
		return data
	}
	want := merge("")
	tried := 0
	for _, s := range x.segs {
		for i := uint64(0); i < s.ft.nblocks; i += 4 {
			bt, err := s.blockTerm(i)
			if err != nil {
				t.Fatal(err)
			}
			for _, p := range []string{bt, bt + "\x00", bt[:len(bt)-1] + string(rune(bt[len(bt)-1]-1)) + "\xff"} {
				if got := merge(p); !bytes.Equal(got, want) {
					t.Fatalf("split at %q (block %d of %s): %d bytes, the whole %d", p, i, s.name, len(got), len(want))
				}
				tried++
			}
		}
	}
	if tried < 10 {
		t.Fatalf("only %d pivots tried", tried)
	}
}
