package search

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/sessionwatch/sessionwatch/indexer"
)

// busyStore is an index of one wave session whose every Apply commits a segment
// and whose merges all run in the background (MergeBudget 1, MaxSegments 3).
func busyStore(t *testing.T) (*store, *Index, *indexer.Group, string) {
	t.Helper()
	s := newStore(t)
	p := s.write("wave", "p/"+uuid1+".jsonl", waveMsg("2026-01-01T00:00:00Z", "user", "alpha0"))
	x, err := Open(Options{Dir: filepath.Join(s.state, DirName), MergeBudget: 1, MaxSegments: 3})
	if err != nil {
		t.Fatal(err)
	}
	g, err := indexer.NewGroup(s.cfg, nil, false)
	if err != nil {
		t.Fatal(err)
	}
	g.AddConsumer(x)
	if err := g.Load(); err != nil {
		t.Fatal(err)
	}
	if err := g.ReconcileAll(); err != nil {
		t.Fatal(err)
	}
	return s, x, g, p
}

// waitMerges polls until the index counts n merges.
func waitMerges(t *testing.T, x *Index, n int) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for x.Stats().Merges < n {
		if time.Now().After(deadline) {
			t.Fatalf("merges = %d after 10s, want %d", x.Stats().Merges, n)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// TestBackgroundMergeWaitsWhileBusy: a background merge does no work while the
// index is held Busy (as the daemon holds it while it handles a batch): it stops
// at its next step, commits go on meanwhile and do not wait for it, and once the
// batch is done it finishes; the index then equals a rebuild.
func TestBackgroundMergeWaitsWhileBusy(t *testing.T) {
	s, x, g, p := busyStore(t)
	parked := make(chan struct{}, 1)
	x.busy.parked = func() {
		select {
		case parked <- struct{}{}:
		default:
		}
	}
	done := x.Busy()
	for i := 1; i <= 4; i++ { // the fourth commit leaves 4 segments: a merge starts
		s.write("wave", "p/"+uuid1+".jsonl", waveMsg("2026-01-01T00:00:00Z", "user", fmt.Sprintf("alpha%d", i)))
		if err := g.Apply(batch(p)); err != nil {
			t.Fatal(err)
		}
	}
	select {
	case <-parked:
	case <-time.After(10 * time.Second):
		t.Fatal("no background merge stopped for the busy index")
	}
	// Commits go on while the merge waits (none of them waits for it).
	for i := 5; i <= 7; i++ {
		s.write("wave", "p/"+uuid1+".jsonl", waveMsg("2026-01-01T00:00:00Z", "user", fmt.Sprintf("alpha%d", i)))
		if err := g.Apply(batch(p)); err != nil {
			t.Fatal(err)
		}
	}
	if m := x.Stats().Merges; m != 0 {
		t.Fatalf("merges while busy = %d, want 0 (the merge went on beside the batch)", m)
	}
	if n := x.Segments(); n <= 3 {
		t.Fatalf("segments while the merge waits = %d, want more than 3", n)
	}
	done()
	done() // a second call does nothing
	waitMerges(t, x, 1)
	for i := 0; i <= 7; i++ {
		if got := hitNames(s.search(fmt.Sprintf("alpha%d", i), Filter{})); got != uuid1+".jsonl" {
			t.Errorf("search alpha%d = %q, want %s.jsonl", i, got, uuid1)
		}
	}
	x.Close()
	if diffs, err := CheckAgainstRebuild(s.cfg); err != nil || len(diffs) > 0 {
		t.Fatalf("CheckAgainstRebuild = %v, %v; want no differences", diffs, err)
	}
}

// segNames is the index's committed segments, by file name.
func segNames(x *Index) []string {
	x.mu.Lock()
	defer x.mu.Unlock()
	var names []string
	for _, sg := range x.segs {
		names = append(names, filepath.Base(sg.name))
	}
	return names
}

// checkClosedClean: after Close, the manifest names the segments want, no other
// file is in the index's directory, and the index equals a rebuild.
func checkClosedClean(t *testing.T, s *store, want []string) {
	t.Helper()
	dir := filepath.Join(s.state, DirName)
	data, err := os.ReadFile(filepath.Join(dir, ManifestName))
	if err != nil {
		t.Fatal(err)
	}
	var man manifest
	if err := json.Unmarshal(data, &man); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(man.Segments, want) {
		t.Errorf("manifest after Close names %v, want the segments before it, %v", man.Segments, want)
	}
	ents, _ := os.ReadDir(dir)
	for _, e := range ents {
		if e.Name() != ManifestName && !slices.Contains(man.Segments, e.Name()) {
			t.Errorf("file %s left beside the manifest's segments", e.Name())
		}
	}
	if diffs, err := CheckAgainstRebuild(s.cfg); err != nil || len(diffs) > 0 {
		t.Fatalf("CheckAgainstRebuild = %v, %v; want no differences", diffs, err)
	}
}

// TestCloseAbandonsWaitingMerge: Close does not hang on a background merge held
// by a busy index, nor finish it (on a large index that takes longer than a
// daemon may take to stop): the merge gives up, its file is removed, the
// segments are those before it, and the index equals a rebuild.
func TestCloseAbandonsWaitingMerge(t *testing.T) {
	s, x, g, p := busyStore(t)
	parked := make(chan struct{}, 1)
	x.busy.parked = func() {
		select {
		case parked <- struct{}{}:
		default:
		}
	}
	done := x.Busy()
	defer done()
	for i := 1; i <= 4; i++ {
		s.write("wave", "p/"+uuid1+".jsonl", waveMsg("2026-01-01T00:00:00Z", "user", fmt.Sprintf("alpha%d", i)))
		if err := g.Apply(batch(p)); err != nil {
			t.Fatal(err)
		}
	}
	select {
	case <-parked:
	case <-time.After(10 * time.Second):
		t.Fatal("no background merge stopped for the busy index")
	}
	before := segNames(x)
	closed := make(chan struct{})
	go func() {
		x.Close()
		close(closed)
	}()
	select {
	case <-closed:
	case <-time.After(10 * time.Second):
		t.Fatal("Close hung on a merge held by Busy")
	}
	if m := x.Stats().Merges; m != 0 {
		t.Fatalf("merges = %d, want 0 (the merge gave up once Close came)", m)
	}
	checkClosedClean(t, s, before)
}

// TestCloseAbandonsRunningMerge: a background merge that is not held by Busy
// gives up at its next step too once Close is called.
func TestCloseAbandonsRunningMerge(t *testing.T) {
	s, x, g, p := busyStore(t)
	gate := make(chan struct{})
	x.mergeGate = gate // the merge starts its steps when the gate opens
	for i := 1; i <= 4; i++ {
		s.write("wave", "p/"+uuid1+".jsonl", waveMsg("2026-01-01T00:00:00Z", "user", fmt.Sprintf("alpha%d", i)))
		if err := g.Apply(batch(p)); err != nil {
			t.Fatal(err)
		}
	}
	x.mu.Lock()
	merging := x.merging
	x.mu.Unlock()
	if merging != 1 {
		t.Fatalf("merging = %d, want a background merge", merging)
	}
	before := segNames(x)
	closed := make(chan struct{})
	go func() {
		x.Close()
		close(closed)
	}()
	deadline := time.Now().Add(10 * time.Second)
	for {
		x.mu.Lock()
		c := x.closed
		x.mu.Unlock()
		if c {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("Close did not start")
		}
		time.Sleep(time.Millisecond)
	}
	close(gate)
	select {
	case <-closed:
	case <-time.After(10 * time.Second):
		t.Fatal("Close hung on a running merge")
	}
	if m := x.Stats().Merges; m != 0 {
		t.Fatalf("merges = %d, want 0 (the merge gave up once Close came)", m)
	}
	checkClosedClean(t, s, before)
}

// TestSettleMergesStartupSegments: the segments a start-up pass committed are
// merged into one when the daemon says start-up is done (Settle), not left for
// the first appends to tip over MaxSegments; an index of few segments is left
// alone.
func TestSettleMergesStartupSegments(t *testing.T) {
	s := newStore(t)
	dir := filepath.Join(s.state, DirName)
	x, err := Open(Options{Dir: dir, MaxSegments: 100}) // no merge by count
	if err != nil {
		t.Fatal(err)
	}
	g, err := indexer.NewGroup(s.cfg, nil, false)
	if err != nil {
		t.Fatal(err)
	}
	g.AddConsumer(x)
	if err := g.Load(); err != nil {
		t.Fatal(err)
	}
	// Segments of tiers 1, 0, 1, 0...: every trailing run of one tier is shorter
	// than mergeFanIn, so no merge runs before Settle.
	for i := range mergeFanIn {
		text := fmt.Sprintf("word%d", i)
		if i%2 == 0 {
			var b strings.Builder
			for j := range 40000 { // distinct terms: a segment above 256 KiB
				fmt.Fprintf(&b, " t%dx%d", i, j)
			}
			text += b.String()
		}
		p := s.write("wave", fmt.Sprintf("p%d/%s.jsonl", i, uuid1), waveMsg("2026-01-01T00:00:00Z", "user", text))
		if err := g.Apply(batch(p)); err != nil {
			t.Fatal(err)
		}
	}
	if n, m := x.Segments(), x.Stats().Merges; n != mergeFanIn || m != 0 {
		t.Fatalf("after the first pass: %d segments, %d merges; want %d, 0", n, m, mergeFanIn)
	}
	x.Settle()
	waitMerges(t, x, 1)
	if n := x.Segments(); n != 1 {
		t.Fatalf("segments after Settle = %d, want 1", n)
	}
	x.Settle() // one segment: nothing to do
	for i := range mergeFanIn {
		if got := hitNames(s.search(fmt.Sprintf("word%d", i), Filter{})); got != uuid1+".jsonl" {
			t.Errorf("search word%d = %q, want %s.jsonl", i, got, uuid1)
		}
	}
	if m := x.Stats().Merges; m != 1 {
		t.Fatalf("merges after a second Settle = %d, want 1", m)
	}
	x.Close()
	if diffs, err := CheckAgainstRebuild(s.cfg); err != nil || len(diffs) > 0 {
		t.Fatalf("CheckAgainstRebuild = %v, %v; want no differences", diffs, err)
	}
}

// TestTooManySegmentsKeepsLargeLeader: when commits leave more than MaxSegments
// segments, the small newest ones are merged, not the large segment before them
// (the whole index after a start-up's merge), which would be rewritten whole for
// a few appended lines.
func TestTooManySegmentsKeepsLargeLeader(t *testing.T) {
	s := newStore(t)
	x, err := Open(Options{Dir: filepath.Join(s.state, DirName), MaxSegments: 3})
	if err != nil {
		t.Fatal(err)
	}
	g, err := indexer.NewGroup(s.cfg, nil, false)
	if err != nil {
		t.Fatal(err)
	}
	g.AddConsumer(x)
	if err := g.Load(); err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	for j := range 40000 {
		fmt.Fprintf(&b, " t%d", j)
	}
	p := s.write("wave", "p/"+uuid1+".jsonl", waveMsg("2026-01-01T00:00:00Z", "user", "big"+b.String()))
	if err := g.Apply(batch(p)); err != nil {
		t.Fatal(err)
	}
	x.mu.Lock()
	leader := x.segs[0].name
	x.mu.Unlock()
	for i := range 3 { // 4 segments > MaxSegments
		p := s.write("wave", fmt.Sprintf("q%d/%s.jsonl", i, uuid2), waveMsg("2026-01-01T00:00:00Z", "user", fmt.Sprintf("small%d", i)))
		if err := g.Apply(batch(p)); err != nil {
			t.Fatal(err)
		}
	}
	x.mu.Lock()
	n, first := len(x.segs), x.segs[0].name
	x.mu.Unlock()
	if m := x.Stats().Merges; m != 1 || n != 2 || first != leader {
		t.Fatalf("after 4 commits: %d merges, %d segments, first %s; want 1, 2 and the large one (%s) kept", m, n, filepath.Base(first), filepath.Base(leader))
	}
	for _, w := range []string{"big", "t39999", "small0", "small2"} {
		if got := s.search(w, Filter{}); len(got) != 1 {
			t.Errorf("search %s: %d hits, want 1", w, len(got))
		}
	}
	x.Close()
	if diffs, err := CheckAgainstRebuild(s.cfg); err != nil || len(diffs) > 0 {
		t.Fatalf("CheckAgainstRebuild = %v, %v; want no differences", diffs, err)
	}
}
