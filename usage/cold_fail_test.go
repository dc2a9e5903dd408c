package usage

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"runtime/debug"
	"testing"

	"github.com/sessionwatch/sessionwatch/indexer"
)

// TestColdIndexDamagedUnderWriterLosesNothing: units.idx truncated in place
// while the writer holds it open (its records unreadable): a compaction of
// the units file, which reads every record from the index, fails rather than
// writing the units file without the records it could not read.
func TestColdIndexDamagedUnderWriterLosesNothing(t *testing.T) {
	o := newIndexedOpenLedger(t)
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

// TestColdStaleIndexOfSameSizeNotTaken: an open whose compaction of the units
// file (a torn batch folded in) could not write the new index (a full disk)
// leaves the index of the old base in place. When the new base has the old
// one's size (the batches folded in changed lines to lines of the same
// length), the open must not take the old index's records back as the new
// base's: their positions are the old ones.
func TestColdStaleIndexOfSameSizeNotTaken(t *testing.T) {
	o := newIndexedOpenLedger(t)
	l := mustOpen(t, o.state)
	t.Cleanup(func() { l.cold.close() })
	if !l.indexed || l.cold == nil {
		t.Fatal("the open did not read the index")
	}
	idx := filepath.Join(o.state, DirName, UnitsIndexName)
	old, err := os.ReadFile(idx)
	if err != nil {
		t.Fatal(err)
	}
	u := o.refs[0]
	off, fp, ok := l.Resume(u)
	if !ok || off < 100 || off%10 == 9 {
		t.Fatalf("Resume(%s) = %d, %v", u.Unit, off, ok)
	}
	// The same number of digits, a fingerprint of the same length: the unit's
	// line keeps its length.
	l.Done(u, off+1, fmt.Sprintf("%016x", off+1))
	if err := l.Sync(nil); err != nil {
		t.Fatal(err)
	}
	// The compaction cannot write the new index: where it would rename it
	// there is a directory (the index the open read is held open, unlinked).
	if err := os.Remove(idx); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(idx, "x"), 0o700); err != nil {
		t.Fatal(err)
	}
	base := l.unitsFile.base
	l.unitsFile.compact = true
	if err := l.Sync(nil); err != nil {
		t.Fatal(err)
	}
	if l.unitsFile.base != base {
		t.Fatalf("the new base is %d bytes, the old %d: the same size wanted", l.unitsFile.base, base)
	}
	if l.cold != nil {
		t.Fatal("the records went back to an index not written")
	}
	// What a full disk would have left there: the index of the old base.
	if err := os.RemoveAll(idx); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(idx, old, 0o600); err != nil {
		t.Fatal(err)
	}
	l.recool(-1, 0) // as open does after its Sync
	if got, gotFp, ok := l.Resume(u); got != off+1 || !ok {
		t.Errorf("Resume(%s) = %d %q %v after the failed index write, want %d (not the old index's %d %q)", u.Unit, got, gotFp, ok, off+1, off, fp)
	}
}

// TestColdIndexFdsStayFew: a writer that compacts the units file again and
// again (each compaction a new units.idx, held open) keeps one handle of the
// index, not one for each index it wrote.
func TestColdIndexFdsStayFew(t *testing.T) {
	compactEverySync(t)
	o := newOpenLedger(t)
	fds := func() int {
		ents, err := os.ReadDir("/proc/self/fd")
		if err != nil {
			t.Skip("no /proc/self/fd")
		}
		return len(ents)
	}
	l := mustOpen(t, o.state)
	t.Cleanup(func() { l.cold.close() })
	// No collection meanwhile: a file dropped unclosed would be closed by its
	// finalizer, hiding the leak.
	defer debug.SetGCPercent(debug.SetGCPercent(-1))
	before := fds()
	for n := 0; n < 40; n++ {
		o.round(l) // lines, a compaction, the records back to the new index
		if l.cold == nil {
			t.Fatalf("round %d: the records did not go back to the index", n)
		}
	}
	// A handle per compaction would be 40 more.
	if after := fds(); after > before+3 {
		t.Errorf("open files grew from %d to %d over 40 compactions", before, after)
	}
}

// TestColdKeyLiveAndRetiredWarmedWhole: a Mogzi session whose total went down
// holds a live record and a retired one under one key, one after the other in
// units.idx (places -1 and 0). Made resident (a new total handed over) and
// compacted (every record read back from the index), the key keeps both: the
// spend before the reset stays counted.
func TestColdKeyLiveAndRetiredWarmedWhole(t *testing.T) {
	compactEverySync(t)
	state, store := t.TempDir(), t.TempDir()
	path := filepath.Join(store, "chats", sid(1), "session.json")
	os.MkdirAll(filepath.Dir(path), 0o700)
	if err := os.WriteFile(path, []byte("{}"), 0o600); err != nil {
		t.Fatal(err)
	}
	u := indexer.UnitRef{Source: "mogzi", Layout: "mogzi", Unit: "chats/" + sid(1) + "/session.json", Path: path, Dev: 7, Ino: 9}
	sess := []indexer.SessionRef{{UnitRef: u, ID: sid(1), Type: "main", Project: "/w/p"}}
	doc := func(l *Ledger, in int, hour int) {
		l.Document(u, []byte(fmt.Sprintf(`{"usageMetrics":{"inputTokens":%d,"outputTokens":1,"lastUpdated":"2026-03-01T%02d:00:00Z"}}`, in, hour)),
			[]*indexer.Session{{Model: "gpt-4.1"}})
		if err := l.Sync(sess); err != nil {
			t.Fatal(err)
		}
	}
	l := mustOpen(t, state)
	doc(l, 100, 9)
	doc(l, 5, 10) // the total went down: 100 retired, 5 live
	want := Tokens{Input: 105, Output: 2}
	total := func(l *Ledger) (t Tokens) {
		for _, v := range totalsOf(l) {
			t.Add(v)
		}
		return t
	}
	if got := total(l); got != want {
		t.Fatalf("before: %+v, want %+v", got, want)
	}
	unitsMin = 1 << 40
	l = mustOpen(t, state)
	t.Cleanup(func() { l.cold.close() })
	if l.cold == nil || l.heldCount() != 0 {
		t.Fatal("the open did not leave the records in the index")
	}
	doc(l, 7, 11) // made resident: +2
	want.Input += 2
	if n := len(l.retired[ukey{u.Source, u.Unit}]); n != 1 {
		t.Errorf("made resident with %d retired records, want 1", n)
	}
	l.unitsFile.compact = true
	if err := l.Sync(nil); err != nil {
		t.Fatal(err)
	}
	if d := compareSelf(t, state); len(d) != 0 {
		t.Errorf("check: %v", d)
	}
	again, err := open(state, false) // every account added up from the units file
	if err != nil {
		t.Fatal(err)
	}
	if got := total(again); got != want {
		t.Errorf("the units file adds up to %+v, want %+v", got, want)
	}
}

// TestColdDroppedKeyStaysDropped: a unit in the base (and so in units.idx)
// reset and then removed with nothing counted since is dropped by a batch's
// line. An open that reads the accounts the long way (a summary its stamp
// does not name) lets the index's records back; the dropped unit must not come
// back with them, with its old position and usage.
func TestColdDroppedKeyStaysDropped(t *testing.T) {
	o := newIndexedOpenLedger(t)
	l := mustOpen(t, o.state)
	u := o.refs[0]
	if _, _, ok := l.Resume(u); !ok {
		t.Fatal("no record of the unit")
	}
	l.Reset(u)
	l.Remove(u) // nothing counted since the reset: dropped
	os.Remove(u.Path)
	if err := l.Sync(nil); err != nil {
		t.Fatal(err)
	}
	l.cold.close()
	unstampSummary(t, o.state)
	l = mustOpen(t, o.state)
	t.Cleanup(func() { l.cold.close() })
	if l.trusted || l.cold == nil {
		t.Fatalf("trusted %v, index held %v: a long-way open that leaves the records in the index wanted", l.trusted, l.cold != nil)
	}
	if off, fp, ok := l.Resume(u); ok {
		t.Errorf("the dropped unit came back from the index: Resume = %d %q", off, fp)
	}
	l.unitsFile.compact = true
	if err := l.Sync(nil); err != nil {
		t.Fatal(err)
	}
	if r := longWay(t, o.state).units.get(u.Source, u.Unit); r != nil {
		t.Error("the dropped unit is in the units file again")
	}
	if d := compareSelf(t, o.state); len(d) != 0 {
		t.Errorf("check: %v", d)
	}
}

// TestColdSummaryRewriteLetsRecordsBack: a summary rewritten whole from the
// units (its last append failed, or it could not be trusted) reads every
// record from the index; they go back to it after, not left in memory until
// the next compaction of the units file (an idle store may have none for
// days).
func TestColdSummaryRewriteLetsRecordsBack(t *testing.T) {
	o := newIndexedOpenLedger(t)
	l := mustOpen(t, o.state)
	t.Cleanup(func() { l.cold.close() })
	if l.cold == nil || l.heldCount() != 0 {
		t.Fatal("the open did not leave the records in the index")
	}
	want, err := ReadSummary(o.state, Want{})
	if err != nil {
		t.Fatal(err)
	}
	l.summaryFile.compact = true // as a failed append leaves it
	if err := l.Sync(nil); err != nil {
		t.Fatal(err)
	}
	if n := l.heldCount(); n != 0 || l.cold == nil {
		t.Errorf("after the summary's rewrite %d records are in memory (index held %v), want 0", n, l.cold != nil)
	}
	got, err := ReadSummary(o.state, Want{})
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(sortedSummary(got), sortedSummary(want)) {
		t.Error("the summary rewritten differs")
	}
	if d := compareSelf(t, o.state); len(d) != 0 {
		t.Errorf("check: %v", d)
	}
}

// TestRewriteNotDurableFailsUntilDurable: a compaction of the units file whose
// rename could not be made durable (the directory's fsync failed) fails its
// Sync, and so does every Sync after it until a rewrite is durable: a crash
// may bring the old file back, so no batch may be appended to the new one and
// reported durable (the catalogs would move past what the old file holds).
// Before, with a read in progress and the file's size owing no compaction, the
// next Sync appended to the new file and reported success.
func TestRewriteNotDurableFailsUntilDurable(t *testing.T) {
	o := newIndexedOpenLedger(t)
	l := mustOpen(t, o.state)
	t.Cleanup(func() { l.cold.close() })
	u0, u1 := o.refs[0], o.refs[1]
	off1, _, _ := l.Resume(u1)
	done := func(off int64) {
		l.Done(u1, off, fmt.Sprintf("%016x", off))
	}
	// A batch appended, then a compaction owed by the file's size.
	unitsMin = 0
	done(off1 + 1)
	if err := l.Sync(nil); err != nil {
		t.Fatal(err)
	}
	if l.unitsFile.tail == 0 || !l.compactionDue(&l.unitsFile, unitsRatio, unitsMin) {
		t.Fatal("no compaction due")
	}
	fail := errors.New("injected: fsync of the directory failed")
	syncDir = func(string) error { return fail }
	t.Cleanup(func() { syncDir = indexer.SyncDir })
	done(off1 + 2)
	if err := l.Sync(nil); !errors.Is(err, fail) {
		t.Fatalf("Sync after a rewrite not made durable: %v, want the fsync's error", err)
	}
	// Now a read of u0 in progress, and no compaction owed by size: a Sync
	// appends rather than compacts, unless the file is marked for one.
	unitsMin = 1 << 40
	off0, _, _ := l.Resume(u0)
	l.Line(u0, off0, []byte(`{}`))
	if l.reading == 0 {
		t.Fatal("no read in progress")
	}
	done(off1 + 3)
	if err := l.Sync(nil); !errors.Is(err, fail) {
		t.Fatalf("the Sync after it, the directory still failing: %v, want the fsync's error", err)
	}
	syncDir = indexer.SyncDir
	done(off1 + 4)
	if err := l.Sync(nil); err != nil {
		t.Fatal(err)
	}
	if l.unitsFile.compact {
		t.Error("the durable rewrite left the units file to be compacted again")
	}
	re := longWay(t, o.state)
	if got, _, ok := re.Resume(u1); !ok || got != off1+4 {
		t.Errorf("reopened: Resume(%s) = %d, %v, want %d", u1.Unit, got, ok, off1+4)
	}
	for _, u := range o.refs {
		wo, wfp, wok := l.Resume(u)
		if go_, gfp, gok := re.Resume(u); go_ != wo || gfp != wfp || gok != wok {
			t.Errorf("reopened: Resume(%s) = %d %q %v, the writer holds %d %q %v", u.Unit, go_, gfp, gok, wo, wfp, wok)
		}
	}
}
