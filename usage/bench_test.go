package usage

import (
	"fmt"
	"path/filepath"
	"runtime"
	"testing"
	"time"

	"github.com/sessionwatch/sessionwatch/indexer"
)

// benchLedger opens a ledger in a temp state dir holding n Claude units of lines
// assistant lines each (spread over 5 hours of a day, two models; 1,000 sessions a
// day over 100 projects), synced, as a daemon holds
// it after its start-up pass. It returns the ledger and the units' refs.
func benchLedger(tb testing.TB, n, lines int) (*Ledger, []indexer.UnitRef) {
	tb.Helper()
	state := tb.TempDir()
	l, err := Open(state)
	if err != nil {
		tb.Fatal(err)
	}
	refs := make([]indexer.UnitRef, n)
	var sessions []indexer.SessionRef
	for i := range refs {
		proj := fmt.Sprintf("/w/p%d", i%100)
		unit := fmt.Sprintf("-w-p%d/%s.jsonl", i%100, sid(i))
		refs[i] = indexer.UnitRef{Source: "claude", Layout: "claude", Unit: unit, Path: filepath.Join(state, "store", unit), Dev: 1, Ino: uint64(i + 1)}
		l.Reset(refs[i])
		off := int64(0)
		for k := 0; k < lines; k++ {
			// Sessions of a project on a day overlap in time, as they do in use.
			ts := time.Date(2026, 3, 1+i/1000, 9, 0, 0, 0, time.UTC).Add(time.Duration(i%13+k*11) * time.Minute).Format(time.RFC3339)
			line := claudeLine(ts, fmt.Sprintf("m%d-%d", i, k), fmt.Sprintf("r%d-%d", i, k), []string{"opus", "sonnet"}[k%2], 100+k, 20, 300, 4000, "")
			l.Line(refs[i], off, []byte(line))
			off += int64(len(line)) + 1
		}
		l.Done(refs[i], off, fmt.Sprintf("fp%d-%d", i, off))
		sessions = append(sessions, indexer.SessionRef{UnitRef: refs[i], ID: sid(i), Type: "main", Project: proj})
	}
	if err := l.Sync(sessions); err != nil {
		tb.Fatal(err)
	}
	return l, refs
}

// BenchmarkLedgerFlush is one daemon flush on a ledger of 10,000 units: touched
// units each get one new line, then Sync. Its cost should follow what changed,
// not the size of the ledger.
func BenchmarkLedgerFlush(b *testing.B) {
	for _, touched := range []int{1, 10} {
		b.Run(fmt.Sprintf("units=%d/touched=%d", benchUnits, touched), func(b *testing.B) {
			l, refs := benchLedger(b, benchUnits, 30)
			offs := make(map[int]int64)
			b.ResetTimer()
			for it := 0; it < b.N; it++ {
				var sessions []indexer.SessionRef
				for j := 0; j < touched; j++ {
					i := (it*touched + j*997) % len(refs)
					off, _, _ := l.Resume(refs[i])
					if o, ok := offs[i]; ok {
						off = o
					}
					ts := time.Date(2026, 3, 2, 0, 0, 0, 0, time.UTC).Add(time.Duration(it) * time.Second).Format(time.RFC3339)
					line := claudeLine(ts, fmt.Sprintf("n%d-%d", it, j), "r", "opus", 1, 2, 3, 4, "")
					l.Line(refs[i], off, []byte(line))
					off += int64(len(line)) + 1
					offs[i] = off
					l.Done(refs[i], off, fmt.Sprintf("fp%d", off))
					sessions = append(sessions, indexer.SessionRef{UnitRef: refs[i], ID: sid(i), Type: "main", Project: fmt.Sprintf("/w/p%d", i%100)})
				}
				if err := l.Sync(sessions); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkLedgerHeap reports the live heap of a ledger of 10,000 units (after a
// GC), the memory the daemon holds for it.
func BenchmarkLedgerHeap(b *testing.B) {
	for it := 0; it < b.N; it++ {
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		l, _ := benchLedger(b, benchUnits, 30)
		runtime.GC()
		runtime.ReadMemStats(&after)
		b.ReportMetric(float64(after.HeapAlloc-before.HeapAlloc)/(1<<20), "MiB-live")
		runtime.KeepAlive(l)
	}
}

var benchUnits = 10000
