package search

import (
	"errors"
	"sync"
	"sync/atomic"
	"time"
)

// A background merge that waited busyWaitMax for batches, without running
// busyFree between them, runs busyRun beside them before it waits again. Vars:
// tests lower them.
var (
	busyWaitMax = time.Second
	busyRun     = 50 * time.Millisecond
	busyFree    = 20 * time.Millisecond
)

// A background merge works in the gaps between the daemon's batches. On a
// machine with few cores, a merge running beside a batch (one core, two with a
// split merge, plus the collector's share of what it allocates) takes the CPU
// the batch needs to read the appended lines, commit them and write the
// catalogs: the lines become searchable later (issue 14: append → searchable).
// So the daemon holds the index Busy while it handles a batch, and a background
// merge, at its next step, waits until the batch is done. A step is small (one
// term's postings, one chunk of docs, one unit record), so a batch waits for at
// most that much of a merge, never for a whole one. Under a steady stream of
// appends, where the next batch is held as soon as the last one is released, a
// merge would take one step per batch and never finish, while each batch
// commits one more segment that no merge takes: so a merge that has waited
// busyWaitMax in all with no gap of busyFree to run in runs busyRun beside the
// batches (about 5% of the time of a daemon that is never idle; a daemon with
// gaps between its batches never lets it).

// busyGate counts the holders of Busy; a background merge's steps wait while
// there are any.
type busyGate struct {
	held atomic.Int32 // read by every step of a merge without the lock
	mu   sync.Mutex
	free chan struct{} // closed when held drops to 0; nil while not held
	// parked (tests) is called when a merge step starts waiting for the gate.
	parked func()
}

// Busy holds the index's background merges until the returned func is called
// (once; later calls do nothing). The daemon calls it around each batch of
// changes it hands the indexers; holders may overlap. A commit never waits for
// a large merge either way (it is built off the lock); Busy keeps the merge off
// the CPU too.
func (x *Index) Busy() (done func()) {
	g := &x.busy
	g.mu.Lock()
	if g.held.Add(1) == 1 {
		g.free = make(chan struct{})
	}
	g.mu.Unlock()
	var once sync.Once
	return func() {
		once.Do(func() {
			g.mu.Lock()
			if g.held.Add(-1) == 0 {
				close(g.free)
				g.free = nil
			}
			g.mu.Unlock()
		})
	}
}

// errClosing: a background merge gives up at its next step once Close is
// called (its file is removed; the segments stay as they are).
var errClosing = errors.New("the search index is closing")

// busyShare is what a background merge waited for batches (both goroutines
// of a split merge share it).
type busyShare struct {
	waiting atomic.Bool // waited is not 0: a step without Busy looks at the clock
	mu      sync.Mutex
	waited  time.Duration // since the merge last ran busyFree without Busy, or busyRun beside it
	until   time.Time     // it runs beside Busy until then
	free    time.Time     // since when it runs without Busy (zero: Busy was held at its last step)
}

// yieldBg is called by a background merge between two steps: it waits while
// the index is Busy (unless it has waited too long: busyShare), and returns
// errClosing once the index is closing (Close does not wait for the rest of a
// merge: on a large index that is longer than a daemon may take to stop).
func (x *Index) yieldBg(sh *busyShare) error {
	g := &x.busy
	if g.held.Load() == 0 {
		if sh.waiting.Load() {
			now := time.Now()
			sh.mu.Lock()
			if sh.free.IsZero() {
				sh.free = now
			} else if now.Sub(sh.free) >= busyFree {
				sh.waited = 0 // a gap between batches: the merge ran in it
				sh.waiting.Store(false)
			}
			sh.mu.Unlock()
		}
	} else if sh.wait() {
		g.mu.Lock()
		free := g.free
		g.mu.Unlock()
		if free != nil {
			if g.parked != nil {
				g.parked()
			}
			start := time.Now()
			select {
			case <-free:
			case <-x.stop:
			}
			sh.mu.Lock()
			sh.waited += time.Since(start)
			sh.waiting.Store(true)
			sh.mu.Unlock()
		}
	}
	select {
	case <-x.stop:
		return errClosing
	default:
		return nil
	}
}

// wait reports whether a step of the merge waits for a batch now that Busy is
// held: not while it runs beside the batches (busyRun), after it waited
// busyWaitMax.
func (sh *busyShare) wait() bool {
	now := time.Now()
	sh.mu.Lock()
	defer sh.mu.Unlock()
	sh.free = time.Time{}
	if now.Before(sh.until) {
		return false
	}
	if sh.waited >= busyWaitMax {
		sh.waited = 0
		sh.waiting.Store(false)
		sh.until = now.Add(busyRun)
		return false
	}
	return true
}
