package usage

import (
	"bytes"
	"testing"
)

// A cold build writes its two files side by side (each Sync after the first,
// and EndColdBuild's compactions when both are due, at a reindex's end), and
// must leave exactly the bytes the serial order leaves: the units file
// compacted, the stamp of the summary as its batches left it, the summary
// compacted, its stamp; the index alike.
func TestEndColdBuildTogetherWritesWhatSerialWrites(t *testing.T) {
	// Compactions due as in a store of real size.
	compactAlways(t)
	_, bySource, sources := coldCorpus(t)
	if len(sources) < 2 {
		t.Fatalf("the corpus has %d sources: a cold build of one appends nothing to compact", len(sources))
	}
	build := func(together bool) string {
		// The serial build's Syncs write one file after the other too.
		defer func(v bool) { sideBySideWrites = v }(sideBySideWrites)
		sideBySideWrites = together
		state := t.TempDir()
		l, err := Open(state)
		if err != nil {
			t.Fatal(err)
		}
		l.ColdBuild()
		for _, src := range sources {
			if err := l.Sync(feedUnits(l, bySource[src])); err != nil {
				t.Fatal(err)
			}
		}
		l.mu.Lock()
		l.bulk = false
		due := l.bothCompactionsDue()
		l.mu.Unlock()
		if !due {
			t.Fatal("after a cold build of several sources both compactions must be due")
		}
		if together {
			err = l.EndColdBuild()
		} else {
			err = l.endColdBuildSerial()
		}
		if err != nil {
			t.Fatal(err)
		}
		return state
	}
	serial, together := build(false), build(true)
	for _, name := range []string{UnitsName, UnitsIndexName, SummaryName} {
		a, b := readLedgerFile(t, serial, name), readLedgerFile(t, together, name)
		if !bytes.Equal(a, b) {
			t.Errorf("%s: the side-by-side end wrote %d bytes, the serial one %d (or others)", name, len(b), len(a))
		}
	}
	// The last two lines of the units file: the two stamps.
	lines := bytes.Split(bytes.TrimSuffix(readLedgerFile(t, together, UnitsName), []byte("\n")), []byte("\n"))
	if n := len(lines); n < 3 || !bytes.HasPrefix(lines[n-1], []byte(`{"commit":true,"summary":`)) || !bytes.HasPrefix(lines[n-2], []byte(`{"commit":true,"summary":`)) {
		t.Errorf("the units file does not end with the two stamps: %q", lines[max(0, len(lines)-2):])
	}
	if !Stamped(together) {
		t.Error("after EndColdBuild the ledger is not settled (Stamped)")
	}
}

// EndColdBuild leaves the records in memory (a reindex ends there: nothing
// reads them back from the index it wrote); a ledger used on goes on from
// them, and its next compaction lets them go to the index as ever.
func TestEndColdBuildLeavesRecordsResident(t *testing.T) {
	compactAlways(t)
	units, bySource, sources := coldCorpus(t)
	state := t.TempDir()
	l, err := Open(state)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.resetReader(); l.cold.close() })
	l.ColdBuild()
	for _, src := range sources {
		if err := l.Sync(feedUnits(l, bySource[src])); err != nil {
			t.Fatal(err)
		}
	}
	if err := l.EndColdBuild(); err != nil {
		t.Fatal(err)
	}
	if l.cold != nil || l.units.len() != len(units) {
		t.Fatalf("after EndColdBuild: %d records in memory (of %d), index held: %v", l.units.len(), len(units), l.cold != nil)
	}
	// Used on: a source read again, then a compaction.
	if err := l.Sync(feedUnits(l, bySource[sources[0]])); err != nil {
		t.Fatal(err)
	}
	l.mu.Lock()
	l.unitsFile.compact = true
	l.mu.Unlock()
	if err := l.Sync(nil); err != nil {
		t.Fatal(err)
	}
	if l.cold == nil || l.units.len() != 0 {
		t.Fatalf("after a compaction: %d records in memory, index held: %v", l.units.len(), l.cold != nil)
	}
	if d := compareSelf(t, state); len(d) != 0 {
		t.Errorf("check: %v", d)
	}
}
