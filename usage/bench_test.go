package usage

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"syscall"
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
		l.Done(refs[i], off, fmt.Sprintf("%016x", uint64(i)<<32|uint64(off))) // as the indexer's fingerprints
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
					l.Done(refs[i], off, fmt.Sprintf("%016x", off))
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

// BenchmarkLedgerOpen opens a ledger of SESSIONWATCH_BENCH_UNITS units (default
// benchUnits; 4 lines each, their files present), as a daemon's start-up or a
// command without a daemon does: lazily (the units' headers, the totals from the
// summary the stamp vouches for) and eagerly (every account read, the totals
// added up and compared with the summary). It reports the live heap the opened
// ledger holds and the process's CPU time per open (GC included).
func BenchmarkLedgerOpen(b *testing.B) {
	n := benchUnits
	if s := os.Getenv("SESSIONWATCH_BENCH_UNITS"); s != "" {
		n, _ = strconv.Atoi(s)
	}
	l, refs := benchLedger(b, n, 4)
	for _, u := range refs {
		os.MkdirAll(filepath.Dir(u.Path), 0o700)
		if err := os.WriteFile(u.Path, nil, 0o600); err != nil {
			b.Fatal(err)
		}
	}
	state := filepath.Dir(l.dir)
	for _, lazy := range []bool{true, false} {
		b.Run(fmt.Sprintf("units=%d/lazy=%v", n, lazy), func(b *testing.B) {
			var live float64
			var cpu time.Duration
			for it := 0; it < b.N; it++ {
				var before, after runtime.MemStats
				b.StopTimer()
				runtime.GC()
				runtime.ReadMemStats(&before)
				b.StartTimer()
				c0 := cpuTime()
				o, err := open(state, lazy)
				if err != nil {
					b.Fatal(err)
				}
				cpu += cpuTime() - c0
				b.StopTimer()
				if o.trusted != lazy {
					b.Fatalf("trusted %v", o.trusted)
				}
				runtime.GC()
				runtime.ReadMemStats(&after)
				live = float64(after.HeapAlloc-before.HeapAlloc) / (1 << 20)
				runtime.KeepAlive(o)
				o.resetReader()
				b.StartTimer()
			}
			b.ReportMetric(live, "MiB-live")
			b.ReportMetric(float64(cpu.Milliseconds())/float64(b.N), "ms-cpu/op")
		})
	}
}

// cpuTime is the process's user and system time.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkLedgerNewUnits is the ledger's work for each unit new to it, on a
// ledger of 10,000 units: Reset, its 30 lines, Done, and its part of a Sync of
// 1,000 such units (each a session of its own, under one of 100 projects):
// a cold build's per-unit work on the indexer's walk, and the daemon's for
// new files. An op is a unit.
func BenchmarkLedgerNewUnits(b *testing.B) {
	l, _ := benchLedger(b, benchUnits, 30)
	var lines [][]byte
	for k := 0; k < 30; k++ {
		ts := time.Date(2026, 3, 3, 9, 0, 0, 0, time.UTC).Add(time.Duration(k*11) * time.Minute).Format(time.RFC3339)
		lines = append(lines, []byte(claudeLine(ts, fmt.Sprintf("m%d", k), fmt.Sprintf("r%d", k), []string{"opus", "sonnet"}[k%2], 100+k, 20, 300, 4000, "")))
	}
	state := b.TempDir()
	var sessions []indexer.SessionRef
	b.ResetTimer()
	c0 := cpuTime()
	for it := 0; it < b.N; it++ {
		i := benchUnits + it
		unit := fmt.Sprintf("-w-p%d/%s.jsonl", i%100, sid(i))
		u := indexer.UnitRef{Source: "claude", Layout: "claude", Unit: unit, Path: filepath.Join(state, "store", unit), Dev: 1, Ino: uint64(i + 1)}
		l.Reset(u)
		off := int64(0)
		for _, line := range lines {
			l.Line(u, off, line)
			off += int64(len(line)) + 1
		}
		l.Done(u, off, fmt.Sprintf("%016x", uint64(i)<<32|uint64(off)))
		sessions = append(sessions, indexer.SessionRef{UnitRef: u, ID: sid(i), Type: "main", Project: fmt.Sprintf("/w/p%d", i%100)})
		if len(sessions) == 1000 || it == b.N-1 {
			if err := l.Sync(sessions); err != nil {
				b.Fatal(err)
			}
			sessions = sessions[:0]
		}
	}
	// The process's CPU time (GC included): the machine may be busy.
	b.ReportMetric(float64((cpuTime()-c0).Microseconds())/float64(b.N), "µs-cpu/op")
}
