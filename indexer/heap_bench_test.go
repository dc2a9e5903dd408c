package indexer

import (
	"os"
	"runtime"
	"runtime/pprof"
	"syscall"
	"testing"
	"time"

	"github.com/sessionwatch/sessionwatch/config"
)

// BenchmarkGroupLoadHeap measures what the indexers alone keep in memory per
// session after a daemon's start-up steps (Load, then Start; no consumers)
// over an existing store, such as the one `sessionload bench --sections scale
// --keep` leaves: SESSIONWATCH_HEAP_CONFIG names its config file (skipped
// without it); SESSIONWATCH_HEAP_PROFILE, if set, receives a heap profile
// taken after the measurement. cpu-s is the CPU time of Load and Start, GC
// included. cmd/sessionwatch's BenchmarkDaemonStartHeap measures the same with
// the search index and the usage ledger attached.
func BenchmarkGroupLoadHeap(b *testing.B) {
	path := os.Getenv("SESSIONWATCH_HEAP_CONFIG")
	if path == "" {
		b.Skip("SESSIONWATCH_HEAP_CONFIG names no store's config")
	}
	cfg, err := config.Load(path)
	if err != nil {
		b.Fatal(err)
	}
	cpu := func() time.Duration {
		var ru syscall.Rusage
		syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
		return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
	}
	for range b.N {
		runtime.GC()
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		cpu0 := cpu()
		g, err := NewGroup(cfg, nil, false)
		if err != nil {
			b.Fatal(err)
		}
		g.UseWriterLock(NewWriterLock(cfg.StateDir), true)
		if err := g.Load(); err != nil {
			b.Fatal(err)
		}
		if err := g.StartAll(); err != nil {
			b.Fatal(err)
		}
		b.ReportMetric((cpu() - cpu0).Seconds(), "cpu-s")
		runtime.GC()
		runtime.ReadMemStats(&after)
		n := 0
		for _, ix := range g.Indexers() {
			n += ix.Stats().Sessions
		}
		if n == 0 {
			b.Fatal("no sessions loaded")
		}
		heap := float64(after.HeapAlloc - before.HeapAlloc)
		b.ReportMetric(heap/(1<<20), "MiB-heap")
		b.ReportMetric(heap/float64(n), "B/session")
		if p := os.Getenv("SESSIONWATCH_HEAP_PROFILE"); p != "" {
			f, err := os.Create(p)
			if err != nil {
				b.Fatal(err)
			}
			if err := pprof.WriteHeapProfile(f); err != nil {
				b.Fatal(err)
			}
			f.Close()
		}
		runtime.KeepAlive(g)
	}
}
