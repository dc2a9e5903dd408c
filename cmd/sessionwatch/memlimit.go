package main

import (
	"math"
	"os"
	"runtime"
	"runtime/debug"
	"strconv"
	"sync"
	"time"
)

// The daemon's garbage collector settings (docs/config.md, "Memory").
//
// A long-lived daemon's heap is mostly its index, live for good, while what it
// allocates under load (lines read, catalogs rendered) dies at once. Go's default
// (collect when the heap doubles) would hold twice the index: once start-up is
// done the daemon lets the heap grow past what the last collection left live by
// at most loadMargin (GOGC recomputed after every collection: 50, 1.5x, for a
// small heap, less for a large one, never under minGCPercent), so that its RSS
// under load stays a bounded step above its idle RSS whatever the store's size. For a small store
// even that is more than needed, so the daemon also sets a soft memory limit
// (daemonMemLimit): the collector then runs as the process nears the limit,
// whatever the ratio. A soft limit below what the heap really needs makes the
// collector run without pause (Go caps it at half the CPU): once the live heap
// stays above limitHeadroom of the limit, the limit steps aside (the margin
// alone paces the collector) and comes back when the heap shrinks. GOGC or
// GOMEMLIMIT in the environment replace the daemon's choice of that knob.
const (
	// daemonGCPercent is the daemon's GOGC during start-up and for a heap
	// under 2*loadMargin live, and the most it sets, unless the environment
	// sets one.
	daemonGCPercent = 50
	// loadMargin is how far the heap may grow above what the last collection
	// left live: the garbage of a burst of appends (reads, renders, flushes)
	// between two collections. Smaller means more collections under load
	// (each marks the whole live heap).
	loadMargin = 16 << 20
	// minGCPercent bounds the collections of a very large heap: its margin is
	// at least this share of it (at a 1 GiB live heap, ~100 MiB), so that the
	// collector's share of the CPU does not grow with the heap.
	minGCPercent = 10
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
	// letting the heap grow by a margin above the burst.
	stepAsideAfter = 3
)

// gcPercent is the GOGC that lets a heap with live bytes grow by loadMargin
// before the next collection, within [minGCPercent, daemonGCPercent].
func gcPercent(live uint64) int {
	if live == 0 {
		return daemonGCPercent
	}
	return int(min(max(loadMargin*100/live, minGCPercent), daemonGCPercent))
}

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

// memGovernor keeps the daemon's GOGC and soft memory limit in step with its
// live heap, checked after every garbage collection (a finalizer re-armed each
// cycle: no ticker, so an idle daemon stays idle), and hands a burst's garbage
// back to the OS once the daemon has been quiet for idleRelease.
type memGovernor struct {
	limit   uint64     // the configured soft limit
	over    int        // collections in a row that left the heap above the headroom
	mu      sync.Mutex // orders a finalizer's set against stop's and the idle timer
	stopped bool
	// set is debug.SetMemoryLimit, nil when GOMEMLIMIT is the environment's;
	// percent is debug.SetGCPercent, nil when GOGC is; free is
	// debug.FreeOSMemory, read runtime.ReadMemStats. Tests replace them.
	set       func(int64) int64
	percent   func(int) int
	gcOff     bool // GOGC=off in the environment: the limit is the only pacer
	free      func()
	read      func(*runtime.MemStats)
	idleAfter time.Duration // idleRelease; tests shorten it
	settled   bool          // start-up is done: GOGC follows the live heap
	lastPct   int           // the GOGC last set (0: none yet)
	idle      *time.Timer   // idleAfter after the last collection
	idleGC    uint32        // the collection that armed it
	forced    uint32        // NumForcedGC at the last collection
}

// idleRelease is how long after its last collection the daemon is deemed
// quiet: a collection then hands the garbage of the burst that ran the last one,
// and the free pages, back to the OS (debug.FreeOSMemory), so that its RSS
// falls back to what is live rather than idling at the burst's high-water mark
// (the background scavenger returns pages slowly, and none of a heap below its
// goal). A forced collection (a release, start-up's) arms none: it returned
// the pages itself. Nor does the runtime's own collection of a heap that went
// forceGCPeriod without one: a daemon that allocates little runs only those,
// and a release after each would double them for nothing to hand back. One
// that collects every few seconds is not quiet; in between, a release at most
// doubles the collections.
const idleRelease = 5 * time.Second

// forceGCPeriod is the runtime's: it collects a heap that went two minutes
// without a collection (runtime.forcegcperiod; not counted in NumForcedGC).
const forceGCPeriod = 2 * time.Minute

// periodic reports whether the last collection came forceGCPeriod or more
// after the one before: the runtime's collection of a quiet heap.
func periodic(ms *runtime.MemStats) bool {
	if ms.NumGC < 2 {
		return false
	}
	last, prev := ms.PauseEnd[(ms.NumGC+255)%256], ms.PauseEnd[(ms.NumGC+254)%256]
	return last >= prev+uint64(forceGCPeriod)
}

// setupDaemonMemory applies the daemon's GC settings (unless the environment
// sets them) and starts the governor. Until settle, GOGC stays at
// daemonGCPercent: start-up builds the live heap, and collecting at every
// loadMargin of its growth would only slow it down.
func setupDaemonMemory() *memGovernor {
	g := newMemGovernor(daemonMemLimit, debug.SetMemoryLimit, debug.SetGCPercent, debug.FreeOSMemory)
	if v := os.Getenv("GOGC"); v != "" {
		g.percent = nil
		g.gcOff = envGCOff(v)
	} else {
		debug.SetGCPercent(daemonGCPercent)
	}
	if os.Getenv("GOMEMLIMIT") != "" {
		g.set = nil
	}
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	g.adjust(&ms)
	g.arm()
	return g
}

// envGCOff says whether GOGC's value v turns the collector off, as the runtime
// reads it ("off" or a negative number).
func envGCOff(v string) bool {
	n, err := strconv.Atoi(v)
	return v == "off" || (err == nil && n < 0)
}

// settle ends start-up: from now on GOGC follows the live heap (the caller
// just collected, so the heap is about what is live). Nil-safe.
func (g *memGovernor) settle() {
	if g == nil {
		return
	}
	var ms runtime.MemStats
	g.read(&ms)
	g.mu.Lock()
	defer g.mu.Unlock()
	g.settled = true
	if !g.stopped && g.percent != nil {
		g.lastPct = gcPercent(ms.HeapAlloc)
		g.percent(g.lastPct)
	}
}

// unsettle begins a start-up again (a config reload's): GOGC goes back to
// daemonGCPercent until the next settle, as at the daemon's first start,
// rather than collecting every loadMargin of the reload's growth. Nil-safe.
func (g *memGovernor) unsettle() {
	if g == nil {
		return
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if !g.settled {
		return
	}
	g.settled = false
	if !g.stopped && g.percent != nil {
		g.lastPct = daemonGCPercent
		g.percent(daemonGCPercent)
	}
}

// stop lifts the limit for good: a finalizer or timer running meanwhile
// cannot set it again.
func (g *memGovernor) stop() {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.stopped = true
	if g.idle != nil {
		g.idle.Stop()
	}
	if g.set != nil {
		g.set(math.MaxInt64)
	}
}

func newMemGovernor(limit uint64, set func(int64) int64, percent func(int) int, free func()) *memGovernor {
	return &memGovernor{limit: limit, set: set, percent: percent, free: free, read: runtime.ReadMemStats, idleAfter: idleRelease}
}

// adjust sets GOGC and the soft limit for the heap just after a collection
// (what it allocated since adds a little), and arms the idle release. Only the
// finalizer goroutine calls it once armed. (runtime.ReadMemStats rather than
// runtime/metrics, whose package init every command would pay for.)
func (g *memGovernor) adjust(ms *runtime.MemStats) {
	if float64(ms.HeapAlloc) > limitHeadroom*float64(g.limit) {
		g.over++
	} else {
		g.over = 0
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.stopped {
		return
	}
	if g.percent != nil && g.settled {
		if p := gcPercent(ms.HeapAlloc); p != g.lastPct {
			g.percent(p)
			g.lastPct = p
		}
	}
	if g.set != nil {
		lim := softLimit(g.limit, ms.HeapAlloc, g.over)
		if lim == math.MaxInt64 && g.gcOff {
			// No GOGC paces the collector once the limit steps aside: it
			// steps to where the step above the live heap would put the goal.
			lim = int64(ms.HeapAlloc + ms.HeapAlloc*uint64(gcPercent(ms.HeapAlloc))/100)
		}
		g.set(lim)
	}
	forced := ms.NumForcedGC != g.forced
	g.forced = ms.NumForcedGC
	if g.free != nil && !forced && !periodic(ms) {
		g.idleGC = ms.NumGC
		if g.idle == nil {
			g.idle = time.AfterFunc(g.idleAfter, g.quiet)
		} else {
			g.idle.Reset(g.idleAfter)
		}
	}
}

// quiet runs idleAfter after a collection: if none ran since, the daemon went
// quiet after a burst.
func (g *memGovernor) quiet() {
	var ms runtime.MemStats
	g.read(&ms)
	g.mu.Lock()
	release := !g.stopped && ms.NumGC == g.idleGC
	g.mu.Unlock()
	if release {
		g.free()
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
		var ms runtime.MemStats
		g.read(&ms)
		g.adjust(&ms)
		g.arm()
	})
}
