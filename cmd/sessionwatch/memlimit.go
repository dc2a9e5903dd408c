package main

import (
	"math"
	"os"
	"runtime"
	"runtime/debug"
	"sync"
)

// The daemon's garbage collector settings (docs/config.md, "Memory").
//
// A long-lived daemon's heap is mostly its index, live for good, while what it
// allocates under load (lines read, catalogs rendered) dies at once. Go's default
// (collect when the heap doubles) would hold twice the index; daemonGCPercent
// collects at 1.5x. For a small store even 1.5x is more than needed, so the
// daemon also sets a soft memory limit (daemonMemLimit): the collector then runs
// as the process nears the limit, whatever the ratio. A soft limit below what the
// heap really needs makes the collector run without pause (Go caps it at half
// the CPU): once the live heap stays above limitHeadroom of the limit, the limit
// steps aside (GOGC alone paces the collector) and comes back when the heap
// shrinks. GOGC or GOMEMLIMIT in the environment replace the daemon's
// choice of that knob.
const (
	// daemonGCPercent is the daemon's GOGC unless the environment sets one.
	daemonGCPercent = 50
	// daemonMemLimit is the daemon's soft memory limit (Go's heap, stacks and
	// runtime structures; RSS adds the binary's mapped pages, ~7 MiB, and the
	// search segments' pages a query touched). At 10k sessions the live heap
	// is ~35 MiB: the limit keeps the daemon's RSS under 64 MiB under load.
	daemonMemLimit = 52 << 20
	// limitHeadroom: the limit applies while the live heap is under this
	// fraction of it.
	limitHeadroom = 0.8
	// stepAsideAfter is how many collections in a row must find the heap above
	// the headroom before the limit steps aside: a flush or merge that holds a
	// burst of memory for a moment is collected against the limit rather than
	// letting GOGC grow the heap to 1.5x the burst.
	stepAsideAfter = 3
)

// softLimit is the memory limit after a collection that left live bytes, the
// over'th in a row (counting this one) to leave more than the headroom: the
// configured limit while the heap leaves it room or only briefly fails to,
// else none (GOGC alone paces the collector, as without a limit).
func softLimit(limit, live uint64, over int) int64 {
	if float64(live) <= limitHeadroom*float64(limit) || over < stepAsideAfter {
		return int64(limit)
	}
	return math.MaxInt64
}

// memGovernor keeps the daemon's soft memory limit in step with its live heap,
// checked after every garbage collection (a finalizer re-armed each cycle: no
// timer, so an idle daemon stays idle).
type memGovernor struct {
	limit   uint64     // the configured soft limit
	over    int        // collections in a row that left the heap above the headroom
	mu      sync.Mutex // orders a finalizer's set against stop's
	stopped bool
	set     func(int64) int64 // debug.SetMemoryLimit; tests replace it
}

// setupDaemonMemory applies the daemon's GC settings (unless the environment
// sets them) and returns a func that stops the governor.
func setupDaemonMemory() (stop func()) {
	if os.Getenv("GOGC") == "" {
		debug.SetGCPercent(daemonGCPercent)
	}
	if os.Getenv("GOMEMLIMIT") != "" {
		return func() {}
	}
	g := newMemGovernor(daemonMemLimit, debug.SetMemoryLimit)
	g.adjust()
	g.arm()
	return g.stop
}

// stop lifts the limit for good: a finalizer running meanwhile cannot set it
// again.
func (g *memGovernor) stop() {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.stopped = true
	g.set(math.MaxInt64)
}

func newMemGovernor(limit uint64, set func(int64) int64) *memGovernor {
	return &memGovernor{limit: limit, set: set}
}

// adjust sets the soft limit for the heap just after a collection (what it
// allocated since adds a little). Only the finalizer goroutine calls it once
// armed. (runtime.ReadMemStats rather than runtime/metrics, whose package init
// every command would pay for.)
func (g *memGovernor) adjust() {
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	if float64(ms.HeapAlloc) > limitHeadroom*float64(g.limit) {
		g.over++
	} else {
		g.over = 0
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if !g.stopped {
		g.set(softLimit(g.limit, ms.HeapAlloc, g.over))
	}
}

// gcSentinel is dropped at once so that the next collection finds it dead and
// runs its finalizer; it is larger than 16 bytes so that it is not packed into a
// tiny block with objects that live on.
type gcSentinel struct{ _ [32]byte }

// arm makes the next garbage collection call adjust (and arm again).
func (g *memGovernor) arm() {
	runtime.SetFinalizer(new(gcSentinel), func(*gcSentinel) {
		g.mu.Lock()
		stopped := g.stopped
		g.mu.Unlock()
		if stopped {
			return
		}
		g.adjust()
		g.arm()
	})
}
