package usage

import (
	"os"
	"path/filepath"
	"testing"
)

// TestColdIndexDamagedUnderWriterLosesNothing: units.idx truncated in place
// while the writer holds it open (its records unreadable): a compaction of
// the units file, which reads every record from the index, fails rather than
// writing the units file without the records it could not read.
func TestColdIndexDamagedUnderWriterLosesNothing(t *testing.T) {
	defer func(a, b int64) { unitsRatio, unitsMin = a, b }(unitsRatio, unitsMin)
	unitsRatio, unitsMin = 1<<40, 0 // every Sync rewrites the units file and its index
	o := newOpenLedger(t)
	unitsMin = 1 << 40
	want := longWay(t, o.state).heldCount()
	l := mustOpen(t, o.state)
	t.Cleanup(func() { l.cold.close() })
	if l.cold == nil || l.heldCount() != 0 {
		t.Fatal("the open did not leave the records in the index")
	}
	p := filepath.Join(o.state, DirName, UnitsIndexName)
	fi, err := os.Stat(p)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(p, fi.Size()/2); err != nil {
		t.Fatal(err)
	}
	l.unitsFile.compact = true
	if err := l.Sync(nil); err == nil {
		t.Error("a compaction that could not read the index reported no error")
	}
	if got := longWay(t, o.state).heldCount(); got != want {
		t.Fatalf("the units file holds %d records after the failed compaction, want %d", got, want)
	}
}
