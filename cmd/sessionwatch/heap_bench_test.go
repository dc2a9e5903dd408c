package main

import (
	"log/slog"
	"os"
	"runtime"
	"runtime/pprof"
	"syscall"
	"testing"
	"time"

	"github.com/sessionwatch/sessionwatch/config"
	"github.com/sessionwatch/sessionwatch/indexer"
)

// cpuTime is the process's user and system time so far.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkDaemonStartHeap measures what the daemon keeps in memory per session
// after its start-up steps (Load with the consumers attached, then Start) over
// an existing store, such as the one `sessionload bench --sections scale --keep`
// leaves: SESSIONWATCH_HEAP_CONFIG names its config file (the benchmark is
// skipped without it). SESSIONWATCH_HEAP_PROFILE, if set, receives a heap
// profile taken after the measurement. cpu-s is the CPU time of the start-up
// steps (the daemon's to READY=1, but for the watches), GC included. Over an unchanged store nothing is written.
func BenchmarkDaemonStartHeap(b *testing.B) {
	path := os.Getenv("SESSIONWATCH_HEAP_CONFIG")
	if path == "" {
		b.Skip("SESSIONWATCH_HEAP_CONFIG names no store's config")
	}
	cfg, err := config.Load(path)
	if err != nil {
		b.Fatal(err)
	}
	for range b.N {
		runtime.GC()
		var before runtime.MemStats
		runtime.ReadMemStats(&before)
		cpu0 := cpuTime()
		g, err := indexer.NewGroup(cfg, nil, false)
		if err != nil {
			b.Fatal(err)
		}
		g.UseWriterLock(indexer.NewWriterLock(cfg.StateDir), true)
		cs, closeAll, err := openConsumers(cfg, slog.New(slog.DiscardHandler))
		if err != nil {
			b.Fatal(err)
		}
		if err := g.Load(); err != nil {
			b.Fatal(err)
		}
		for _, c := range cs {
			g.AddConsumer(c)
		}
		if err := g.StartAll(); err != nil {
			b.Fatal(err)
		}
		b.ReportMetric((cpuTime() - cpu0).Seconds(), "cpu-s")
		runtime.GC()
		var after runtime.MemStats
		runtime.ReadMemStats(&after)
		n := totalSessions(g)
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
		closeAll()
	}
}
