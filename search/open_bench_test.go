package search

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"syscall"
	"testing"
	"time"

	"github.com/sessionwatch/sessionwatch/indexer"
)

// BenchmarkOpenHeap measures what the writer's Open keeps in memory per unit and
// what it costs: the live heap after Open and a GC (MiB-heap, B/unit), the bytes
// it allocated on the way (MiB-alloc) and its CPU time (cpu-ms). The index is a
// copy of SESSIONWATCH_SEARCH_INDEX (a state dir's search/, such as the one
// `sessionload bench --sections scale --keep` leaves) or, without it, a
// generated one of 100,000 units in 5,000 projects (one message each, committed
// in batches and compacted, then 30 small commits on top).
func BenchmarkOpenHeap(b *testing.B) {
	src := os.Getenv("SESSIONWATCH_SEARCH_INDEX")
	if src == "" {
		src = genIndex(b, 100000)
	}
	// The units as the indexer names them, in strings it holds: made before the
	// baseline, so that B/unit-named is what the index holds of its own once
	// every unit has been named by a call (as the daemon's start-up does).
	var refs []indexer.UnitRef
	if r, err := OpenReader(src); err == nil {
		us, err := r.allUnits()
		if err != nil {
			b.Fatal(err)
		}
		for _, u := range us {
			if u.State == unitLive {
				refs = append(refs, indexer.UnitRef{Source: u.Source, Layout: u.Layout, Unit: u.Rel, Path: u.Path, Dev: u.Dev, Ino: u.Ino})
			}
		}
		r.Close()
	}
	for range b.N {
		dir := filepath.Join(b.TempDir(), DirName)
		copyDir(b, src, dir)
		runtime.GC()
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		cpu0 := cpuNow()
		x, err := Open(Options{Dir: dir})
		if err != nil {
			b.Fatal(err)
		}
		cpu := cpuNow() - cpu0
		runtime.ReadMemStats(&after)
		alloc := after.TotalAlloc - before.TotalAlloc
		runtime.GC()
		runtime.ReadMemStats(&after)
		n := x.liveUnits()
		heap := float64(after.HeapAlloc) - float64(before.HeapAlloc)
		b.ReportMetric(heap/(1<<20), "MiB-heap")
		b.ReportMetric(heap/float64(max(n, 1)), "B/unit")
		b.ReportMetric(float64(alloc)/(1<<20), "MiB-alloc")
		b.ReportMetric(float64(cpu.Microseconds())/1000, "cpu-ms")
		b.ReportMetric(float64(n), "units")
		for _, u := range refs {
			if _, _, ok := x.Resume(u); !ok {
				b.Fatalf("Resume(%s) found nothing", u.Unit)
			}
		}
		runtime.GC()
		runtime.ReadMemStats(&after)
		b.ReportMetric((float64(after.HeapAlloc)-float64(before.HeapAlloc))/float64(max(n, 1)), "B/unit-named")
		runtime.KeepAlive(x)
		runtime.KeepAlive(refs)
		x.Close()
	}
}

func cpuNow() time.Duration {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// genIndex builds an index of n line units (paths and projects shaped like a
// Claude store's) in a temp dir and returns its path.
func genIndex(b testing.TB, n int) string {
	b.Helper()
	dir := filepath.Join(b.TempDir(), DirName)
	x, err := Open(Options{Dir: dir})
	if err != nil {
		b.Fatal(err)
	}
	defer x.Close()
	srcs := []string{"wave", "claude", "codex", "gemini", "llxprt"}
	var refs []indexer.SessionRef
	commit := func() {
		if err := x.Sync(refs); err != nil {
			b.Fatal(err)
		}
		refs = refs[:0]
	}
	for i := range n {
		proj := fmt.Sprintf("/home/user/code/%s-project-%04d", srcs[i%5], i/20%1000)
		rel := fmt.Sprintf("-home-user-code-%s-project-%04d/%08x-6c79-4f2a-b6f7-%012x.jsonl", srcs[i%5], i/20%1000, i, i*7919)
		u := indexer.UnitRef{Source: srcs[i%5], Layout: "wave", Unit: rel, Path: "/home/user/.sessions/" + srcs[i%5] + "/" + rel, Dev: 2049, Ino: uint64(1000000 + i)}
		line := fmt.Sprintf(`{"timestamp":"2026-01-01T00:00:00Z","id":"m%d","role":"user","blocks":[{"type":"text","content":"fix the parser of unit %d in %s"}]}`, i, i, proj)
		x.Line(u, 0, []byte(line))
		x.Done(u, int64(len(line)+1), fmt.Sprintf("%016x", i*104729))
		refs = append(refs, indexer.SessionRef{UnitRef: u, ID: fmt.Sprint(i), Project: proj})
		if i%5000 == 4999 {
			commit()
		}
	}
	commit()
	if err := x.Compact(); err != nil {
		b.Fatal(err)
	}
	for i := range 30 {
		for j := range 10 {
			k := (i*37 + j*101) % n
			rel := fmt.Sprintf("-home-user-code-%s-project-%04d/%08x-6c79-4f2a-b6f7-%012x.jsonl", srcs[k%5], k/20%1000, k, k*7919)
			u := indexer.UnitRef{Source: srcs[k%5], Layout: "wave", Unit: rel, Path: "/home/user/.sessions/" + srcs[k%5] + "/" + rel, Dev: 2049, Ino: uint64(1000000 + k)}
			off, _, _ := x.Resume(u)
			line := fmt.Sprintf(`{"timestamp":"2026-01-01T00:00:00Z","id":"n%d","role":"assistant","blocks":[{"type":"text","content":"appended %d"}]}`, i, j)
			x.Line(u, off, []byte(line))
			x.Done(u, off+int64(len(line)+1), fmt.Sprintf("%016x", off))
		}
		commit()
	}
	return dir
}

func copyDir(b *testing.B, from, to string) {
	b.Helper()
	if err := os.MkdirAll(to, 0o700); err != nil {
		b.Fatal(err)
	}
	ents, err := os.ReadDir(from)
	if err != nil {
		b.Fatal(err)
	}
	for _, e := range ents {
		src, err := os.Open(filepath.Join(from, e.Name()))
		if err != nil {
			b.Fatal(err)
		}
		dst, err := os.Create(filepath.Join(to, e.Name()))
		if err != nil {
			b.Fatal(err)
		}
		if _, err := io.Copy(dst, src); err != nil {
			b.Fatal(err)
		}
		src.Close()
		dst.Close()
	}
}

// BenchmarkMergeHeap measures a full merge of the index of BenchmarkOpenHeap
// (Compact after Open): the most heap it holds beyond what the open index holds
// (MiB-peak, sampled every millisecond with the collector at GOGC 5, so that
// the heap stays close to what is live), what it allocates (MiB-alloc) and its
// CPU time.
func BenchmarkMergeHeap(b *testing.B) {
	src := os.Getenv("SESSIONWATCH_SEARCH_INDEX")
	if src == "" {
		src = genIndex(b, 100000)
	}
	for range b.N {
		dir := filepath.Join(b.TempDir(), DirName)
		copyDir(b, src, dir)
		x, err := Open(Options{Dir: dir})
		if err != nil {
			b.Fatal(err)
		}
		old := debug.SetGCPercent(5)
		runtime.GC()
		sample := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
		metrics.Read(sample)
		base := sample[0].Value.Uint64()
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		stop, done := make(chan struct{}), make(chan uint64)
		go func() {
			peak := base
			tick := time.NewTicker(time.Millisecond)
			defer tick.Stop()
			for {
				select {
				case <-stop:
					done <- peak
					return
				case <-tick.C:
					metrics.Read(sample)
					peak = max(peak, sample[0].Value.Uint64())
				}
			}
		}()
		cpu0 := cpuNow()
		if err := x.Compact(); err != nil {
			b.Fatal(err)
		}
		cpu := cpuNow() - cpu0
		close(stop)
		peak := <-done
		runtime.ReadMemStats(&after)
		debug.SetGCPercent(old)
		b.ReportMetric(float64(peak-base)/(1<<20), "MiB-peak")
		b.ReportMetric(float64(after.TotalAlloc-before.TotalAlloc)/(1<<20), "MiB-alloc")
		b.ReportMetric(float64(cpu.Microseconds())/1000, "cpu-ms")
		x.Close()
	}
}
