package search

import (
	"errors"
	"sync"
	"sync/atomic"
)

// A background merge works in the gaps between the daemon's batches. On a
// machine with few cores, a merge running beside a batch (one core, two with a
// split merge, plus the collector's share of what it allocates) takes the CPU
// the batch needs to read the appended lines, commit them and write the
// catalogs: the lines become searchable later (issue 14: append → searchable).
// So the daemon holds the index Busy while it handles a batch, and a background
// merge, at its next step, waits until the batch is done. A step is small (one
// term's postings, one chunk of docs, one unit record), so a batch waits for at
// most that much of a merge, never for a whole one; a merge under a steady
// stream of appends still advances between batches.

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

// yieldBg is called by a background merge between two steps: it waits while
// the index is Busy, and returns errClosing once the index is closing (Close
// does not wait for the rest of a merge: on a large index that is longer than
// a daemon may take to stop).
func (x *Index) yieldBg() error {
	g := &x.busy
	if g.held.Load() != 0 {
		g.mu.Lock()
		free := g.free
		g.mu.Unlock()
		if free != nil {
			if g.parked != nil {
				g.parked()
			}
			select {
			case <-free:
			case <-x.stop:
			}
		}
	}
	select {
	case <-x.stop:
		return errClosing
	default:
		return nil
	}
}
