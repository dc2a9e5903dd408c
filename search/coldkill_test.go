package search

import (
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"testing"
	"time"

	"github.com/sessionwatch/sessionwatch/indexer"
)

// TestKilledColdBuildThenDaemon: a cold build that never reaches its end (a
// reindex killed: its committed segments have no summaries) is opened by an
// ordinary writer (the daemon), which goes on indexing: every query (ranked,
// filtered by time or role, with removed units archived or not) gives the same
// hits, scores and matches before and after a Compact that writes the
// summaries, and the index equals a rebuild.
func TestKilledColdBuildThenDaemon(t *testing.T) {
	defer func(d uint32) { sumMinDF = d }(sumMinDF)
	sumMinDF = 4
	s := newStore(t)
	var paths []string
	for f := range 6 {
		var text string
		for m := range 12 {
			w := []string{"deploy", "kernel", "café"}[m%3]
			text += waveMsg(fmt.Sprintf("2026-01-0%dT00:%02d:00Z", 1+f%5, m), []string{"user", "assistant"}[m%2],
				fmt.Sprintf("parser %s note%d deploy parser", w, f))
		}
		paths = append(paths, s.write("wave", fmt.Sprintf("p/%08d-1111-4111-8111-111111111111.jsonl", f), text))
	}
	dir := filepath.Join(s.state, DirName)
	x, err := Open(Options{Dir: dir, SpillBytes: 1 << 10})
	if err != nil {
		t.Fatal(err)
	}
	x.ColdBuild()
	cold, g := s.indexWith(x)
	_ = g
	if err := cold.Sync(nil); err != nil {
		t.Fatal(err)
	}
	if n := summaries(t, cold); n != 0 || cold.Segments() < 2 {
		t.Fatalf("cold build: %d summaries in %d segments; want none in several", n, cold.Segments())
	}
	// Killed here: no Close. The daemon opens the index and catches up.
	s.write("wave", "p/00000000-1111-4111-8111-111111111111.jsonl", waveMsg("2026-01-07T00:00:00Z", "user", "parser late deploy"))
	if err := os.Remove(paths[5]); err != nil { // archived: kept for --archived
		t.Fatal(err)
	}
	x2, err := Open(Options{Dir: dir, KeepRemoved: func(string, string, time.Time) bool { return true }})
	if err != nil {
		t.Fatal(err)
	}
	defer x2.Close()
	_, g2 := s.indexWith(x2)
	if err := x2.Sync(nil); err != nil {
		t.Fatal(err)
	}
	type query struct {
		q string
		f Filter
	}
	qs := []query{{"parser", Filter{}}, {"parser deploy", Filter{}}, {"kernel", Filter{}}, {"café parser", Filter{}},
		{"parser", Filter{Since: time.Date(2026, 1, 3, 0, 0, 0, 0, time.UTC)}},
		{"deploy", Filter{Until: time.Date(2026, 1, 2, 0, 0, 0, 0, time.UTC)}},
		{"parser", Filter{Role: RoleAssistant}}, {"parser", Filter{Archived: true}}, {"parser -kernel", Filter{}}}
	run := func() [][]Hit {
		var out [][]Hit
		for _, q := range qs {
			out = append(out, s.search(q.q, q.f))
		}
		return out
	}
	before := run()
	if len(before[0]) != 5 || len(before[7]) != 6 {
		t.Fatalf("parser: %d hits, %d with archived; want 5, 6", len(before[0]), len(before[7]))
	}
	if summaries(t, x2) != 0 {
		t.Fatal("the daemon's catch-up wrote summaries for the cold segments already; the test needs some without")
	}
	if err := x2.Compact(); err != nil {
		t.Fatal(err)
	}
	if summaries(t, x2) == 0 {
		t.Fatal("no summaries after the daemon's Compact")
	}
	after := run()
	for i := range qs {
		if !reflect.DeepEqual(before[i], after[i]) {
			t.Errorf("%q %+v: without summaries %+v, with %+v", qs[i].q, qs[i].f, before[i], after[i])
		}
	}
	_ = g2
	diffs, err := CheckAgainstRebuild(s.cfg)
	if err != nil {
		t.Fatal(err)
	}
	if len(diffs) > 0 {
		t.Fatalf("differs from a rebuild: %v", diffs)
	}
	cold.mu.Lock()
	for _, sg := range cold.segs {
		sg.close()
	}
	cold.mu.Unlock()
}

// indexWith runs one indexing pass with x attached.
func (s *store) indexWith(x *Index) (*Index, *indexer.Group) {
	s.t.Helper()
	g, err := indexer.NewGroup(s.cfg, nil, false)
	if err != nil {
		s.t.Fatal(err)
	}
	g.AddConsumer(x)
	if err := g.Load(); err != nil {
		s.t.Fatal(err)
	}
	if err := g.ReconcileAll(); err != nil {
		s.t.Fatal(err)
	}
	return x, g
}

// TestSplitMergePartFailureKeepsInputs: a split merge whose part file cannot be
// written fails whole: no segment file of it is left, and the index keeps its
// inputs, which a later merge merges.
func TestSplitMergePartFailureKeepsInputs(t *testing.T) {
	units := genUnits(t)
	dir := filepath.Join(t.TempDir(), DirName)
	x, err := Open(Options{Dir: dir, SpillBytes: 64 << 10, MaxSegments: 100})
	if err != nil {
		t.Fatal(err)
	}
	defer x.Close()
	x.ColdBuild() // no merges along the way
	handAll(t, x, units, 10)
	x.mergeWG.Wait()
	x.mu.Lock()
	defer x.mu.Unlock()
	x.cold = false
	n := len(x.segs)
	if n < 2 {
		t.Fatalf("%d segments; the test needs several", n)
	}
	before, _ := os.ReadDir(dir)
	job := x.planMergeLocked(0, false)
	pivot := "m"
	job.pivot = &pivot
	if err := os.Mkdir(job.path+".part", 0o700); err != nil { // the part cannot be created
		t.Fatal(err)
	}
	if s, err := job.build(); err == nil {
		s.close()
		t.Fatal("the merge succeeded without its part")
	}
	os.Remove(job.path + ".part")
	after, _ := os.ReadDir(dir)
	if len(after) != len(before) {
		t.Fatalf("files before the failed merge %v, after %v", before, after)
	}
	if len(x.segs) != n {
		t.Fatalf("%d segments after the failed merge, want %d", len(x.segs), n)
	}
	if err := x.mergeLocked(0); err != nil {
		t.Fatal(err)
	}
	if len(x.segs) != 1 {
		t.Fatalf("%d segments after a merge, want 1", len(x.segs))
	}
}
