package usage

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/sessionwatch/sessionwatch/indexer"
)

// held counts the records the ledger holds in memory, live and retired.
func (l *Ledger) heldCount() int {
	n := l.units.len()
	for _, rs := range l.retired {
		n += len(rs)
	}
	return n
}

// TestIdleUnitsLeftInIndex: an Open from the index holds no unit's record in
// memory, yet Resume answers for each as the eager open does; a unit handed
// lines is the only one made resident, the summary stays what the units add up
// to, and after a compaction of the units file the records go back to the
// index, with the same answers.
func TestIdleUnitsLeftInIndex(t *testing.T) {
	o := newIndexedOpenLedger(t)
	l := mustOpen(t, o.state)
	if !l.fromIndex {
		t.Fatal("the open did not read the index")
	}
	if n := l.heldCount(); n != 0 {
		t.Fatalf("an open from the index holds %d records in memory, want 0", n)
	}
	eager := longWay(t, o.state)
	answers := func(l *Ledger) []string {
		var out []string
		for _, u := range o.refs {
			off, fp, ok := l.Resume(u)
			out = append(out, fmt.Sprint(u.Unit, off, fp, ok))
		}
		return out
	}
	want := answers(eager)
	if got := answers(l); !slices.Equal(got, want) {
		t.Fatalf("Resume from the index:\n%v\nwant\n%v", got, want)
	}
	if n := l.heldCount(); n != 0 {
		t.Fatalf("Resume made %d records resident", n)
	}
	u := o.refs[0]
	line := claudeLine(time.Date(2026, 3, 2, 9, 0, 0, 0, time.UTC).Format(time.RFC3339), "late-m", "late-q", "opus", 5, 6, 7, 8, "")
	l.Line(u, o.offs[0], []byte(line))
	l.Done(u, o.offs[0]+int64(len(line))+1, "fp-late")
	if err := l.Sync(nil); err != nil {
		t.Fatal(err)
	}
	if n := l.heldCount(); n != 1 {
		t.Errorf("a unit handed a line made %d records resident, want 1", n)
	}
	if d := compareSelf(t, o.state); len(d) != 0 {
		t.Errorf("check after a line: %v", d)
	}
	eager = longWay(t, o.state)
	eager.fileAll()
	want = answers(eager)
	l.unitsFile.compact = true // rewrite the units file and its index
	if err := l.Sync(nil); err != nil {
		t.Fatal(err)
	}
	if l.cold == nil || l.heldCount() != 0 {
		t.Errorf("after a compaction: %d records resident, index held %v", l.heldCount(), l.cold != nil)
	}
	if got := answers(l); !slices.Equal(got, want) {
		t.Errorf("Resume after the compaction:\n%v\nwant\n%v", got, want)
	}
	if !reflect.DeepEqual(totalsOf(l), totalsOf(eager)) {
		t.Error("totals differ from the eager open's")
	}
	if d := compareSelf(t, o.state); len(d) != 0 {
		t.Errorf("check after the compaction: %v", d)
	}
}

// TestSessionAcrossIndexAndMemory: a session of two units, one handed lines
// (resident) and one idle (in the index), has its S rows added up from both.
func TestSessionAcrossIndexAndMemory(t *testing.T) {
	compactEverySync(t)
	state, store := t.TempDir(), t.TempDir()
	var refs []indexer.UnitRef
	for i, unit := range []string{"-w-p/s1.jsonl", "-w-p/s1/subagents/a.jsonl", "-w-p/s2.jsonl"} {
		path := filepath.Join(store, filepath.FromSlash(unit))
		os.MkdirAll(filepath.Dir(path), 0o700)
		if err := os.WriteFile(path, nil, 0o600); err != nil {
			t.Fatal(err)
		}
		refs = append(refs, indexer.UnitRef{Source: "claude", Layout: "claude", Unit: unit, Path: path, Dev: 7, Ino: uint64(10 + i)})
	}
	offs := make([]int64, len(refs))
	feed := func(l *Ledger, i int, msg string, hour int) {
		line := claudeLine(time.Date(2026, 3, 1, hour, 0, 0, 0, time.UTC).Format(time.RFC3339), msg, msg+"q", "opus", 10+i, 2, 3, 4, "")
		l.Line(refs[i], offs[i], []byte(line))
		offs[i] += int64(len(line)) + 1
		l.Done(refs[i], offs[i], fmt.Sprintf("%016x", offs[i]))
	}
	sessions := []indexer.SessionRef{
		{UnitRef: refs[0], ID: "s1", Type: "main", Project: "/w/p"},
		{UnitRef: refs[1], ID: "s1", Type: "main", Project: "/w/p"},
		{UnitRef: refs[2], ID: "s2", Type: "main", Project: "/w/p"},
	}
	l := mustOpen(t, state)
	for i := range refs {
		feed(l, i, fmt.Sprintf("m%d", i), 9)
	}
	if err := l.Sync(sessions); err != nil {
		t.Fatal(err)
	}
	unitsMin = 1 << 40 // the next Sync appends a batch
	l = mustOpen(t, state)
	if l.heldCount() != 0 {
		t.Fatalf("%d records resident after the open", l.heldCount())
	}
	feed(l, 1, "late", 11) // the subagent's unit: the main one stays in the index
	if err := l.Sync(sessions[1:2]); err != nil {
		t.Fatal(err)
	}
	if l.heldCount() != 1 {
		t.Fatalf("%d records resident, want the one handed a line", l.heldCount())
	}
	s, err := ReadSummary(state, Want{})
	if err != nil {
		t.Fatal(err)
	}
	var in int64
	for _, r := range s.Sessions {
		if r.Session == "s1" {
			in += r.T.Input
			if r.First != Quarter(time.Date(2026, 3, 1, 9, 0, 0, 0, time.UTC).UnixMilli()) {
				t.Errorf("s1's first quarter %d lost the idle unit's", r.First)
			}
		}
	}
	if in != 10+11+11 {
		t.Errorf("s1's input %d, want 32 (both units)", in)
	}
	if d := compareSelf(t, state); len(d) != 0 {
		t.Errorf("check: %v", d)
	}
}

// FuzzColdIndex: any bytes read as an index where its records stay (openCold)
// are read as decodeIndex reads them: both refuse them, or both give the same
// records, each found by its key and by its session id.
func FuzzColdIndex(f *testing.F) {
	for _, s := range indexSeeds() {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		same := func(s string) string { return s }
		base, crc, recs, err := decodeIndex(data, same)
		p := filepath.Join(t.TempDir(), UnitsIndexName)
		if err := os.WriteFile(p, data, 0o600); err != nil {
			t.Fatal(err)
		}
		c, cerr := openCold(p, -1, 0, same, nil)
		if cerr != nil {
			if err == nil && bytes.IndexByte(data[:min(len(data), 4<<10)], '\n') >= 0 {
				t.Fatalf("decodeIndex reads it, openCold refuses it: %v", cerr)
			}
			return
		}
		defer c.close()
		if err != nil {
			t.Fatalf("openCold reads it, decodeIndex refuses it: %v", err)
		}
		if c.base != base || c.crc != crc {
			t.Fatalf("base %d, crc %d; decodeIndex: %d, %d", c.base, c.crc, base, crc)
		}
		pos := c.start
		for i, want := range recs {
			r, n, err := c.read(pos, i%2 == 0)
			if err != nil {
				t.Fatalf("record %d: %v", i, err)
			}
			got := r.rec(string(r.unit))
			if got.headerLine() != want.headerLine() {
				t.Fatalf("record %d: %s, want %s", i, got.headerLine(), want.headerLine())
			}
			first, at, _, err := c.find(want.source(), want.Unit)
			if err != nil || at == 0 || first.idx > int64(want.idx) || string(first.unit) != want.Unit {
				t.Fatalf("record %d not found by its key (%d, %v)", i, at, err)
			}
			found := false
			c.sess.each(hashPair("", want.sid()), func(s *coldSlot) bool {
				found = int64(s.off) == pos
				return !found
			})
			if !found {
				t.Fatalf("record %d not found by its session id", i)
			}
			pos += int64(n)
		}
		if pos != c.end {
			t.Fatalf("records end at %d, the index at %d", pos, c.end)
		}
	})
}

// TestLongWayOpenLeavesRecordsInIndex: an open that cannot trust the summary
// (here: a byte more than its stamp names) reads every account the long way,
// rewrites the summary, then lets the records the index holds as they are go
// back to it.
func TestLongWayOpenLeavesRecordsInIndex(t *testing.T) {
	o := newIndexedOpenLedger(t)
	unstampSummary(t, o.state)
	l := mustOpen(t, o.state)
	if l.trusted {
		t.Fatal("a summary its stamp does not name was trusted")
	}
	if l.cold == nil || l.heldCount() != 0 {
		t.Errorf("after a long-way open: %d records resident, index held %v", l.heldCount(), l.cold != nil)
	}
	eager := longWay(t, o.state)
	for _, u := range o.refs {
		a1, b1, c1 := l.Resume(u)
		a2, b2, c2 := eager.Resume(u)
		if a1 != a2 || b1 != b2 || c1 != c2 {
			t.Errorf("Resume(%s) = %d %q %v, want %d %q %v", u.Unit, a1, b1, c1, a2, b2, c2)
		}
	}
	if d := compareSelf(t, o.state); len(d) != 0 {
		t.Errorf("check: %v", d)
	}
}

// compactEverySync makes every Sync of the test rewrite the units file and its
// index (the thresholds restored when the test ends).
func compactEverySync(t *testing.T) {
	a, b := unitsRatio, unitsMin
	t.Cleanup(func() { unitsRatio, unitsMin = a, b })
	unitsRatio, unitsMin = 1<<40, 0
}

// newIndexedOpenLedger is newOpenLedger's store, its units file and index
// rewritten by every Sync while it was made, by none after.
func newIndexedOpenLedger(t *testing.T) *openLedger {
	compactEverySync(t)
	o := newOpenLedger(t)
	unitsMin = 1 << 40
	return o
}

// unstampSummary appends a line to the summary of the ledger in state that its
// stamp does not name, so that the next open reads the accounts the long way.
func unstampSummary(t testing.TB, state string) {
	t.Helper()
	f, err := os.OpenFile(filepath.Join(state, DirName, SummaryName), os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Write([]byte("C\n")); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
}
