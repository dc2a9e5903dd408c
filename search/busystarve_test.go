package search

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestBackgroundMergeAdvancesUnderSteadyBatches: a daemon under a steady stream
// of appends holds the index Busy for one batch after another, with hardly a
// gap between them. A background merge still finishes (it is not held off
// until the stream stops, while every batch commits one more segment that no
// merge takes).
func TestBackgroundMergeAdvancesUnderSteadyBatches(t *testing.T) {
	w, r, f := busyWaitMax, busyRun, busyFree
	t.Cleanup(func() { busyWaitMax, busyRun, busyFree = w, r, f })
	busyWaitMax, busyRun = 50*time.Millisecond, 20*time.Millisecond // a quick test
	s := newStore(t)
	x, err := Open(Options{Dir: filepath.Join(s.state, DirName), MergeBudget: 1, MaxSegments: 3})
	if err != nil {
		t.Fatal(err)
	}
	defer x.Close()
	_, g := s.indexWith(x)
	// Four segments of many terms each: the merge they start has many steps.
	var p string
	for i := range 4 {
		var b strings.Builder
		for j := range 20000 {
			fmt.Fprintf(&b, " w%dx%d", i, j)
		}
		p = s.write("wave", "p/"+uuid1+".jsonl", waveMsg("2026-01-01T00:00:00Z", "user", "alpha"+b.String()))
		done := x.Busy()
		err := g.Apply(batch(p))
		done()
		if err != nil {
			t.Fatal(err)
		}
	}
	deadline := time.Now().Add(20 * time.Second)
	i := 0
	for ; x.Stats().Merges == 0; i++ {
		if time.Now().After(deadline) {
			t.Fatalf("no merge done after %d batches handled back to back (%d segments)", i, x.Segments())
		}
		done := x.Busy()
		s.write("wave", "p/"+uuid1+".jsonl", waveMsg("2026-01-01T00:00:00Z", "user", fmt.Sprintf("beta%d", i)))
		err := g.Apply(batch(p))
		done()
		if err != nil {
			t.Fatal(err)
		}
	}
	t.Logf("merged after %d batches, %d segments", i, x.Segments())
}
