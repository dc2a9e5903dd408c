package usage

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/sessionwatch/sessionwatch/indexer"
)

// A cold build whose new units are pending (filed by each Sync) writes what
// one filing each unit at its Reset writes: the units file, its index and the
// summary, byte for byte, through EndColdBuild and a source read again.
func TestPendingColdBuildWritesWhatEagerWrites(t *testing.T) {
	compactAlways(t)
	_, bySource, sources := coldCorpus(t)
	build := func(eager bool) string {
		state := t.TempDir()
		l, err := Open(state)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { l.resetReader(); l.cold.close() })
		l.eagerFiling = eager
		l.ColdBuild()
		for _, src := range sources {
			if err := l.Sync(feedUnits(l, bySource[src])); err != nil {
				t.Fatal(err)
			}
		}
		if err := l.EndColdBuild(); err != nil {
			t.Fatal(err)
		}
		if err := l.Sync(feedUnits(l, bySource[sources[0]])); err != nil {
			t.Fatal(err)
		}
		return state
	}
	lazy, eager := build(false), build(true)
	for _, name := range []string{UnitsName, UnitsIndexName, SummaryName} {
		a, b := readLedgerFile(t, eager, name), readLedgerFile(t, lazy, name)
		if !bytes.Equal(a, b) {
			t.Errorf("%s: pending filing wrote %d bytes, eager %d (or others)", name, len(b), len(a))
		}
	}
}

// Each path that meets a new unit's record before the Sync that would file it
// (a Document whose total goes down, a Remove with or without usage, a second
// Reset, lines handed over prepared) leaves the ledger writing what one that
// filed the unit at its Reset writes.
func TestPendingMetByOtherPaths(t *testing.T) {
	store := t.TempDir()
	mk := func(src, unit string, ino uint64) indexer.UnitRef {
		path := filepath.Join(store, src, filepath.FromSlash(unit))
		os.MkdirAll(filepath.Dir(path), 0o700)
		if err := os.WriteFile(path, nil, 0o600); err != nil {
			t.Fatal(err)
		}
		return indexer.UnitRef{Source: src, Layout: src, Unit: unit, Path: path, Dev: 7, Ino: ino}
	}
	doc := func(n int) []byte {
		return []byte(fmt.Sprintf(`{"usageMetrics":{"inputTokens":%d,"outputTokens":%d,"lastUpdated":"2026-03-01T10:00:00Z"}}`, n, n/2))
	}
	line := func(i int, q string) []byte {
		return []byte(claudeLine("2026-03-01T"+q+":00Z", fmt.Sprintf("m%d", i), fmt.Sprintf("q%d", i), "opus", 10*i, 2, 3, 4, ""))
	}
	mo := mk("mogzi", "chats/s1/session.json", 1)
	c1, c2, c3 := mk("claude", "-w-p1/s2.jsonl", 2), mk("claude", "-w-p1/s3.jsonl", 3), mk("claude", "-w-p2/s4.jsonl", 4)
	sess := func(u indexer.UnitRef, id string) indexer.SessionRef {
		return indexer.SessionRef{UnitRef: u, ID: id, Type: "main", Project: "/w/p"}
	}
	steps := []func(l *Ledger) []indexer.SessionRef{
		func(l *Ledger) []indexer.SessionRef { // a document's total, then less
			l.Reset(mo)
			l.Document(mo, doc(100), []*indexer.Session{{Model: "gpt-4.1"}})
			l.Document(mo, doc(40), []*indexer.Session{{Model: "gpt-4.1"}})
			return []indexer.SessionRef{sess(mo, "s1")}
		},
		func(l *Ledger) []indexer.SessionRef { // read, then gone
			l.Reset(c1)
			l.Line(c1, 0, line(1, "10:00"))
			l.Remove(c1)
			l.Reset(c2) // nothing read, then gone
			l.Remove(c2)
			return nil
		},
		func(l *Ledger) []indexer.SessionRef { // prepared lines, reset again, read again
			l.Reset(c3)
			p := l.Prepare(c3)
			p.Line(0, line(2, "10:00"))
			p.Line(1, line(3, "11:00"))
			l.LinesPrepared(c3, p)
			l.Done(c3, 2, "fp")
			l.Reset(c3)
			l.Line(c3, 0, line(2, "10:20"))
			l.Done(c3, 1, "fp")
			return []indexer.SessionRef{sess(c3, "s4")}
		},
		func(l *Ledger) []indexer.SessionRef { // the removed one back, refiled
			l.Reset(c1)
			l.Line(c1, 0, line(4, "12:00"))
			l.Line(c1, 1, line(4, "13:00")) // the same message again, in another quarter hour
			l.Done(c1, 2, "fp")
			return []indexer.SessionRef{sess(c1, "s2"), sess(c3, "s5")}
		},
	}
	var dirs [2]string
	var ls [2]*Ledger
	for i := range ls {
		dirs[i] = t.TempDir()
		l, err := Open(dirs[i])
		if err != nil {
			t.Fatal(err)
		}
		l.now = coldModelNow
		l.eagerFiling = i == 1
		t.Cleanup(func() { l.resetReader(); l.cold.close() })
		ls[i] = l
	}
	for n, step := range steps {
		for _, l := range ls {
			if err := l.Sync(step(l)); err != nil {
				t.Fatal(err)
			}
		}
		for _, name := range []string{UnitsName, UnitsIndexName, SummaryName} {
			a, b := readLedgerFile(t, dirs[1], name), readLedgerFile(t, dirs[0], name)
			if !bytes.Equal(a, b) {
				t.Fatalf("step %d: %s: pending filing wrote\n%s\neager\n%s", n, name, b, a)
			}
		}
		for i := range dirs {
			if d := compareSelf(t, dirs[i]); len(d) != 0 {
				t.Errorf("step %d, ledger %d: check: %v", n, i, d)
			}
		}
	}
}
