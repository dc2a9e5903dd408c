package usage

import (
	"bytes"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/sessionwatch/sessionwatch/indexer"
)

// A cold build (reindex: ColdBuild, one Sync per source) appends each source's
// records and rows to the ledger's files and never rewrites them, and what it
// leaves reads back as what a ledger built the ordinary way holds: the same
// summary, and units equal to an in-memory rebuild (Compare, reindex --check's).
// Built the ordinary way the same feed compacts the files along the way.
func TestColdBuildAppendsWithoutCompaction(t *testing.T) {
	// Compactions as often as a store of real size has them.
	compactAlways(t)
	units, bySource, sources := coldCorpus(t)
	build := func(cold bool) (state string, rewrites int, sum *Summary) {
		state = t.TempDir()
		l, err := Open(state)
		if err != nil {
			t.Fatal(err)
		}
		if cold {
			l.ColdBuild()
		}
		var prev [2][]byte
		for _, src := range sources {
			if err := l.Sync(feedUnits(l, bySource[src])); err != nil {
				t.Fatal(err)
			}
			for i, name := range []string{UnitsName, SummaryName} {
				data, err := os.ReadFile(filepath.Join(state, DirName, name))
				if err != nil {
					t.Fatal(err)
				}
				if !bytes.HasPrefix(data, prev[i]) {
					rewrites++ // not appended to: written again
				}
				prev[i] = data
			}
		}
		sum = readSummary(t, state)
		return state, rewrites, sum
	}
	_, plainRewrites, want := build(false)
	state, coldRewrites, got := build(true)
	if plainRewrites == 0 {
		t.Fatal("the ordinary build compacted nothing: the corpus does not exercise compactions")
	}
	if coldRewrites != 0 {
		t.Errorf("the cold build rewrote its files %d times, want 0 (appends only)", coldRewrites)
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("summary of the cold build differs: %d sessions, %d rows; want %d, %d", len(got.Sessions), len(got.Rows), len(want.Sessions), len(want.Rows))
	}
	rebuilt, err := NewRebuild(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	set := map[string]bool{}
	for _, src := range sources {
		set[src] = true
		if err := rebuilt.Sync(feedUnits(rebuilt, bySource[src])); err != nil {
			t.Fatal(err)
		}
	}
	diffs, err := Compare(state, rebuilt, set)
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range diffs {
		t.Error(d)
	}
	// Ended (reindex's last step), the cold build leaves both files compacted:
	// the units index covers the whole units file and the summary holds no
	// batch, so the next open reads neither the long way.
	ended, err := Open(state)
	if err != nil {
		t.Fatal(err)
	}
	if err := ended.EndColdBuild(); err != nil {
		t.Fatal(err)
	}
	unitsData := readLedgerFile(t, state, UnitsName)
	base, _, recs, err := decodeIndex(readLedgerFile(t, state, UnitsIndexName), func(s string) string { return s })
	if err != nil || base > int64(len(unitsData)) || len(recs) != len(units) {
		t.Fatalf("after EndColdBuild the units index covers %d of %d bytes and %d of %d units (err %v)", base, len(unitsData), len(recs), len(units), err)
	}
	// Past the index's base only the summary's stamps (commit lines), no unit.
	for _, line := range bytes.SplitAfter(unitsData[base:], []byte("\n")) {
		if len(line) > 0 && !bytes.HasPrefix(line, []byte(`{"commit":true`)) {
			t.Errorf("after EndColdBuild the units file has a batch past its index: %.200q", line)
		}
	}
	sumData := readLedgerFile(t, state, SummaryName)
	hd, start, err := parseSummaryHeader(sumData)
	if err != nil || start+hd.Days+hd.Sessions+hd.Rows != int64(len(sumData)) {
		t.Errorf("after EndColdBuild the summary has %d bytes of batches (err %v)", int64(len(sumData))-(start+hd.Days+hd.Sessions+hd.Rows), err)
	}
	if again := readSummary(t, state); !reflect.DeepEqual(again, want) {
		t.Errorf("after EndColdBuild: %d sessions, %d rows; want %d, %d (or other values)", len(again.Sessions), len(again.Rows), len(want.Sessions), len(want.Rows))
	}
	if diffs, err := Compare(state, rebuilt, set); err != nil || len(diffs) > 0 {
		t.Errorf("after EndColdBuild: %v %v", err, diffs)
	}
	// Opened again (the daemon after a reindex), it reads the same totals and
	// compacts at its next write as ever.
	l, err := Open(state)
	if err != nil {
		t.Fatal(err)
	}
	if err := l.Sync(nil); err != nil {
		t.Fatal(err)
	}
	if again := readSummary(t, state); !reflect.DeepEqual(again, want) {
		t.Errorf("reopened: %d sessions, %d rows; want %d, %d (or other values)", len(again.Sessions), len(again.Rows), len(want.Sessions), len(want.Rows))
	}
}

// readSummary reads the summary of state whole, in sortedSummary's order; it
// must carry usage.
func readSummary(t *testing.T, state string) *Summary {
	t.Helper()
	sum, err := ReadSummary(state, Want{})
	if err != nil || len(sum.Sessions) == 0 {
		t.Fatalf("summary: err %v: the corpus must carry usage", err)
	}
	return sortedSummary(sum)
}

// coldCorpus is genLineUnits' units, and by source, the sources in the order
// met.
func coldCorpus(t *testing.T) (units []unitLines, bySource map[string][]unitLines, sources []string) {
	units = genLineUnits(t)
	bySource = map[string][]unitLines{}
	for _, u := range units {
		if bySource[u.Ref.Source] == nil {
			sources = append(sources, u.Ref.Source)
		}
		bySource[u.Ref.Source] = append(bySource[u.Ref.Source], u)
	}
	return units, bySource, sources
}

// feedUnits hands each unit to l whole, read from offset 0 as a cold build
// reads it, and returns their sessions (one a unit, a project a source).
func feedUnits(l *Ledger, us []unitLines) []indexer.SessionRef {
	var refs []indexer.SessionRef
	for _, u := range us {
		l.Reset(u.Ref)
		for j, line := range u.Lines {
			l.Line(u.Ref, u.Offs[j], line)
		}
		l.Done(u.Ref, int64(len(u.Lines)), "fp")
		refs = append(refs, indexer.SessionRef{UnitRef: u.Ref, ID: u.Ref.Unit, Type: "main", Project: "/p/" + u.Ref.Source})
	}
	return refs
}

// compactAlways makes the files' compactions due as in a store of real size
// (the test's corpus is small), until the test ends.
func compactAlways(t *testing.T) {
	a, b := unitsMin, summaryMin
	t.Cleanup(func() { unitsMin, summaryMin = a, b })
	unitsMin, summaryMin = 0, 0
}
