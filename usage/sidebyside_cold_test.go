package usage

import (
	"bytes"
	"fmt"
	"reflect"
	"testing"

	"github.com/sessionwatch/sessionwatch/indexer"
)

// A reindex over a ledger whose idle records are in units.idx: each Sync's
// summary batch, worked out beside the units file's append, adds up sessions
// whose units are partly in the index (read from it and from the units file
// meanwhile), and the files end as the serial order leaves them (the race
// detector watches the two goroutines).
func TestColdBuildSideBySideOverIndexedLedger(t *testing.T) {
	compactAlways(t)
	_, bySource, sources := coldCorpus(t)
	// Sessions of several units each, so that a session's other units stay
	// in the index while one is read again.
	ref := func(i int, u unitLines) indexer.SessionRef {
		return indexer.SessionRef{UnitRef: u.Ref, ID: fmt.Sprintf("s%d", i%4), Type: "main", Project: "/p/" + u.Ref.Source}
	}
	feed := func(l *Ledger, us []unitLines, every int) []indexer.SessionRef {
		var refs []indexer.SessionRef
		for i, u := range us {
			if i%every != 0 {
				continue
			}
			l.Reset(u.Ref)
			for j, line := range u.Lines {
				l.Line(u.Ref, u.Offs[j], line)
			}
			l.Done(u.Ref, int64(len(u.Lines)), "fp")
			refs = append(refs, ref(i, u))
		}
		return refs
	}
	build := func(side bool) string {
		defer func(v bool) { sideBySideWrites = v }(sideBySideWrites)
		sideBySideWrites = side
		state := t.TempDir()
		l, err := Open(state)
		if err != nil {
			t.Fatal(err)
		}
		for _, src := range sources {
			if err := l.Sync(feed(l, bySource[src], 1)); err != nil {
				t.Fatal(err)
			}
		}
		for _, src := range sources {
			if err := l.Sync(feed(l, bySource[src], 1)); err != nil { // a compaction: units.idx
				t.Fatal(err)
			}
		}
		l.resetReader()
		if l.cold != nil {
			l.cold.close()
		}
		// The reindex: opened from the index, every other unit read again.
		l, err = Open(state)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(l.resetReader)
		if l.cold == nil {
			t.Fatal("the ledger opened with no record in units.idx")
		}
		l.ColdBuild()
		for _, src := range sources {
			if err := l.Sync(feed(l, bySource[src], 2)); err != nil {
				t.Fatal(err)
			}
		}
		if err := l.EndColdBuild(); err != nil {
			t.Fatal(err)
		}
		if l.cold != nil {
			l.cold.close()
		}
		return state
	}
	serial, together := build(false), build(true)
	for _, name := range []string{UnitsName, SummaryName} {
		a, b := readLedgerFile(t, serial, name), readLedgerFile(t, together, name)
		if !bytes.Equal(a, b) {
			t.Errorf("%s: the side-by-side build wrote %d bytes, the serial one %d (or others)", name, len(b), len(a))
		}
	}
	if a, b := readSummary(t, serial), readSummary(t, together); !reflect.DeepEqual(a, b) {
		t.Error("the summaries differ")
	}
}
