package main

import (
	"context"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/sessionwatch/sessionwatch/config"
	"github.com/sessionwatch/sessionwatch/indexer"
)

// A daemon's serve, reloaded by SIGHUP, starts up at daemonGCPercent again and
// settles again: the governor sees settle (GOGC by the live heap), then, on
// the reload, daemonGCPercent, then settle again. The first serve changes
// nothing before its settle.
func TestServeReloadUnsettlesAndSettles(t *testing.T) {
	e := newEnv(t)
	dir := e.project("/mem/a")
	appendTo(t, filepath.Join(dir, idA+".jsonl"), header("/mem/a")+message(time.Now(), "a"))
	cfg := config.Default()
	cfg.StateDir = e.state
	cfg.ArchiveDir = filepath.Join(e.home, "archive")
	cfg.Janitor.RunAtStart, cfg.Janitor.Schedule = false, config.ScheduleOff
	src := config.SourceDefaults("wave")
	src.Root = e.root
	cfg.Sources = []config.Source{src}

	var mu sync.Mutex
	var pcts []int
	got := func() []int {
		mu.Lock()
		defer mu.Unlock()
		return slices.Clone(pcts)
	}
	mem := newMemGovernor(daemonMemLimit, nil, func(p int) int {
		mu.Lock()
		pcts = append(pcts, p)
		mu.Unlock()
		return 0
	}, nil)
	mem.read = func(ms *runtime.MemStats) { *ms = runtime.MemStats{HeapAlloc: 160 << 20} } // 10%
	t.Cleanup(mem.stop)
	d := &daemon{log: slog.New(slog.NewTextHandler(io.Discard, nil)), started: time.Now(), statePath: filepath.Join(e.state, "status.json"),
		notify: &notifier{}, writer: indexer.NewWriterLock(e.state), mem: mem}

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	hup := make(chan os.Signal, 1)
	type result struct {
		reload bool
		err    error
	}
	serve := func() chan result {
		c := make(chan result, 1)
		go func() {
			r, err := d.serve(ctx, cfg, false, hup)
			c <- result{r, err}
		}()
		return c
	}
	wait := func(what string, want []int) {
		t.Helper()
		deadline := time.Now().Add(20 * time.Second)
		for !slices.Equal(got(), want) {
			if time.Now().After(deadline) {
				t.Fatalf("%s: GOGC set to %v, want %v", what, got(), want)
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	first := serve()
	wait("first start-up settled", []int{10})
	hup <- os.Interrupt
	if r := <-first; !r.reload || r.err != nil {
		t.Fatalf("first serve ended with reload %v, err %v; want a reload", r.reload, r.err)
	}
	second := serve()
	wait("the reload settled", []int{10, daemonGCPercent, 10})
	cancel()
	if r := <-second; r.reload || r.err != nil {
		t.Fatalf("second serve ended with reload %v, err %v", r.reload, r.err)
	}
}
