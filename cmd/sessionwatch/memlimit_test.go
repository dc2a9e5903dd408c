package main

import (
	"math"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

func TestSoftLimit(t *testing.T) {
	const limit = 50 << 20
	tests := []struct {
		name string
		live uint64
		over int
		want int64
	}{
		{"empty heap", 0, 0, limit},
		{"small heap", 20 << 20, 0, limit},
		{"at the headroom", 40 << 20, 0, limit},
		{"past the headroom once: a burst, the limit holds", 40<<20 + 1, 1, limit},
		{"past the headroom twice", 200 << 20, stepAsideAfter - 1, limit},
		{"past the headroom for good: the limit steps aside", 40<<20 + 1, stepAsideAfter, math.MaxInt64},
		{"heap far above the limit", 200 << 20, stepAsideAfter + 5, math.MaxInt64},
	}
	for _, tt := range tests {
		if got := softLimit(limit, tt.live, tt.over); got != tt.want {
			t.Errorf("%s: softLimit(%d, %d, %d) = %d, want %d", tt.name, limit, tt.live, tt.over, got, tt.want)
		}
	}
}

// The governor sets the limit after every collection until stopped, and never
// after.
func TestMemGovernorFollowsCollections(t *testing.T) {
	var calls atomic.Int64
	var last atomic.Int64
	var pct atomic.Int64
	g := newMemGovernor(1<<40, func(v int64) int64 {
		calls.Add(1)
		last.Store(v)
		return 0
	}, func(p int) int { pct.Store(int64(p)); return 0 }, nil)
	g.settle()
	g.arm()
	deadline := time.Now().Add(10 * time.Second)
	for calls.Load() < 3 {
		if time.Now().After(deadline) {
			t.Fatalf("governor called %d times after collections, want at least 3", calls.Load())
		}
		runtime.GC()
		time.Sleep(time.Millisecond)
	}
	if got := last.Load(); got != 1<<40 {
		t.Errorf("limit set = %d, want the configured %d (the test's heap is far below it)", got, int64(1<<40))
	}
	if got := pct.Load(); got != daemonGCPercent {
		t.Errorf("GOGC set = %d, want %d (the test's heap is far below loadMargin)", got, daemonGCPercent)
	}
	g.stop()
	runtime.GC() // runs a finalizer armed before the stop, which must not re-arm
	runtime.GC()
	time.Sleep(50 * time.Millisecond)
	n := calls.Load()
	for range 3 {
		runtime.GC()
	}
	time.Sleep(50 * time.Millisecond)
	if got := calls.Load(); got != n {
		t.Errorf("governor called %d times after stop, want 0", got-n)
	}
	if got := last.Load(); got != math.MaxInt64 {
		t.Errorf("limit after stop = %d, want none (%d)", got, int64(math.MaxInt64))
	}
}

// GOGC lets the heap grow by loadMargin above what is live: 1.5x a small heap,
// less a large one (at 64 MiB live the old fixed 50 let it grow by 32 MiB
// under load), never under minGCPercent.
func TestGCPercent(t *testing.T) {
	tests := []struct {
		live uint64
		want int
	}{
		{0, daemonGCPercent},
		{10 << 20, daemonGCPercent},
		{2 * loadMargin, daemonGCPercent},
		{4 * loadMargin, 25},
		{64<<20 + 1<<19, 24},
		{10 * loadMargin, minGCPercent},
		{1 << 30, minGCPercent},
	}
	for _, tt := range tests {
		got := gcPercent(tt.live)
		if got != tt.want {
			t.Errorf("gcPercent(%d MiB) = %d, want %d", tt.live>>20, got, tt.want)
		}
		if tt.live >= 2*loadMargin && tt.live < 10*loadMargin {
			if grow := tt.live * uint64(got) / 100; grow > loadMargin || grow < loadMargin*9/10 {
				t.Errorf("live %d MiB: the heap may grow by %d MiB, want ~%d", tt.live>>20, grow>>20, loadMargin>>20)
			}
		}
	}
}

// A large heap: once start-up is done the governor sets GOGC for a
// loadMargin step after each collection (only when it changes), and the soft
// limit steps aside. During start-up GOGC is left alone.
func TestMemGovernorPacesLargeHeap(t *testing.T) {
	var pcts []int
	var limits []int64
	g := newMemGovernor(52<<20, func(v int64) int64 { limits = append(limits, v); return 0 },
		func(p int) int { pcts = append(pcts, p); return 0 }, nil)
	g.read = func(ms *runtime.MemStats) { *ms = runtime.MemStats{HeapAlloc: 40 << 20} }
	g.adjust(&runtime.MemStats{HeapAlloc: 30 << 20}) // start-up
	g.adjust(&runtime.MemStats{HeapAlloc: 40 << 20})
	if len(pcts) != 0 {
		t.Errorf("GOGC set to %v during start-up, want it left alone", pcts)
	}
	g.settle() // at 40 MiB live: 40%
	for _, live := range []uint64{64 << 20, 64 << 20, 64 << 20, 80 << 20, 20 << 20} {
		g.adjust(&runtime.MemStats{HeapAlloc: live})
	}
	if want := []int{40, 25, 20, 50}; !slices.Equal(pcts, want) {
		t.Errorf("GOGC set to %v, want %v", pcts, want)
	}
	if want := []int64{52 << 20, 52 << 20, 52 << 20, 52 << 20, math.MaxInt64, math.MaxInt64, 52 << 20}; !slices.Equal(limits, want) {
		t.Errorf("limits %v, want %v", limits, want)
	}
	// GOGC and GOMEMLIMIT from the environment: neither is touched.
	g = newMemGovernor(52<<20, nil, nil, nil)
	g.adjust(&runtime.MemStats{HeapAlloc: 64 << 20})
	g.stop()
}

// After a burst the governor hands the garbage back once the daemon is quiet:
// one release when no collection ran for idleAfter after one that was not
// forced (a release's own, start-up's); none otherwise.
func TestMemGovernorReleasesWhenQuiet(t *testing.T) {
	var mu sync.Mutex
	var numGC, numForced uint32 = 7, 0
	var frees atomic.Int64
	setGC := func(n uint32) { mu.Lock(); numGC = n; mu.Unlock() }
	force := func() { mu.Lock(); numGC++; numForced++; mu.Unlock() }
	newG := func(after time.Duration) *memGovernor {
		g := newMemGovernor(52<<20, nil, nil, func() {
			frees.Add(1)
			force() // the release's own collection
		})
		g.idleAfter = after
		g.read = func(ms *runtime.MemStats) { mu.Lock(); ms.NumGC, ms.NumForcedGC = numGC, numForced; mu.Unlock() }
		return g
	}
	collect := func(g *memGovernor) {
		var ms runtime.MemStats
		g.read(&ms)
		g.adjust(&ms)
	}

	// The timer: collection 7, then quiet.
	g := newG(10 * time.Millisecond)
	setGC(7)
	collect(g)
	deadline := time.Now().Add(10 * time.Second)
	for frees.Load() == 0 {
		if time.Now().After(deadline) {
			t.Fatal("no release after a collection and idleAfter of quiet")
		}
		time.Sleep(time.Millisecond)
	}
	g.stop()

	// Called directly: a collection since, the release's own, a stop.
	frees.Store(0)
	g = newG(time.Hour)
	setGC(7)
	collect(g)
	setGC(8)
	g.quiet()
	if n := frees.Load(); n != 0 {
		t.Errorf("a collection ran since: %d releases, want none", n)
	}
	collect(g) // collection 8, then quiet
	g.quiet()
	if n := frees.Load(); n != 1 {
		t.Fatalf("quiet after a collection: %d releases, want 1", n)
	}
	collect(g) // the release's own collection (9), then quiet
	g.quiet()
	if n := frees.Load(); n != 1 {
		t.Errorf("quiet after the release's own collection: %d releases, want still 1", n)
	}
	force() // start-up's (debug.FreeOSMemory), then quiet
	collect(g)
	g.quiet()
	if n := frees.Load(); n != 1 {
		t.Errorf("quiet after a forced collection: %d releases, want still 1", n)
	}
	setGC(20)
	collect(g)
	g.stop()
	g.quiet()
	if n := frees.Load(); n != 1 {
		t.Errorf("after stop: %d releases, want still 1", n)
	}
}

// An idle daemon stays idle: the runtime collects a heap that went two
// minutes without a collection (not counted as forced), and that collection
// of a quiet daemon arms no release (which would be a second full collection
// every two minutes, with nothing to hand back). A collection sooner after
// the one before does.
func TestMemGovernorPeriodicCollectionArmsNoRelease(t *testing.T) {
	var frees atomic.Int64
	g := newMemGovernor(52<<20, nil, nil, func() { frees.Add(1) })
	g.idleAfter = time.Hour // quiet is called by hand
	at := uint64(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC).UnixNano())
	var ms runtime.MemStats
	g.read = func(m *runtime.MemStats) { *m = ms }
	collect := func(after time.Duration) {
		ms.NumGC++
		at += uint64(after)
		ms.PauseEnd[(ms.NumGC+255)%256] = at
		g.adjust(&ms)
	}
	collect(time.Second)
	collect(time.Second) // a burst's
	g.quiet()
	if n := frees.Load(); n != 1 {
		t.Fatalf("quiet after a burst's collection: %d releases, want 1", n)
	}
	ms.NumForcedGC++
	collect(idleRelease)                         // the release's own
	collect(2*time.Minute + 10*time.Millisecond) // the runtime's periodic one
	g.quiet()
	if n := frees.Load(); n != 1 {
		t.Errorf("quiet after the runtime's periodic collection: %d releases, want still 1", n)
	}
	collect(3 * time.Second) // a burst again
	g.quiet()
	if n := frees.Load(); n != 2 {
		t.Errorf("quiet after a burst's collection: %d releases, want 2", n)
	}
	g.stop()
}

// A config reload starts up again: GOGC goes back to daemonGCPercent until the
// reload's start-up settles, then follows the live heap again; a governor never
// settled (the first start) or stopped is left alone.
func TestMemGovernorUnsettleOnReload(t *testing.T) {
	var pcts []int
	g := newMemGovernor(52<<20, nil, func(p int) int { pcts = append(pcts, p); return 0 }, nil)
	g.read = func(ms *runtime.MemStats) { *ms = runtime.MemStats{HeapAlloc: 64 << 20} }
	g.unsettle() // the first start: nothing to undo
	if len(pcts) != 0 {
		t.Fatalf("GOGC set to %v before any settle", pcts)
	}
	g.settle() // 64 MiB live: 25%
	g.unsettle()
	g.adjust(&runtime.MemStats{HeapAlloc: 80 << 20}) // the reload's start-up grows the heap
	g.settle()
	if want := []int{25, daemonGCPercent, 25}; !slices.Equal(pcts, want) {
		t.Errorf("GOGC set to %v, want %v (settled, reloading, settled again)", pcts, want)
	}
	g.stop()
	g.unsettle()
	if len(pcts) != 3 {
		t.Errorf("a stopped governor set GOGC: %v", pcts)
	}
}

// TestMemGovernorKeepsABoundUnderGOGCOff: with GOGC=off from the environment no
// GOGC paces the collector, so a large heap does not make the limit step aside
// to none (the daemon would then never collect again): it steps to the goal the
// step above the live heap would set, which follows the heap down again too.
func TestMemGovernorKeepsABoundUnderGOGCOff(t *testing.T) {
	for v, want := range map[string]bool{"off": true, "-1": true, "100": false, "50": false, "0": false} {
		if got := envGCOff(v); got != want {
			t.Errorf("envGCOff(%q) = %v, want %v", v, got, want)
		}
	}
	var limits []int64
	g := newMemGovernor(52<<20, func(v int64) int64 { limits = append(limits, v); return 0 }, nil, nil)
	g.gcOff = true
	g.settle()
	for _, live := range []uint64{64 << 20, 64 << 20, 64 << 20, 80 << 20, 20 << 20} {
		g.adjust(&runtime.MemStats{HeapAlloc: live})
	}
	defer g.stop()
	step := func(live int64) int64 { return live + live*int64(gcPercent(uint64(live)))/100 }
	if want := []int64{52 << 20, 52 << 20, step(64 << 20), step(80 << 20), 52 << 20}; !slices.Equal(limits, want) {
		t.Errorf("limits %v, want %v", limits, want)
	}
}
