package indexer

import "sync"

// While a full pass reads new units on workers (prefetch.go), the walk does not
// make the consumers' calls for those units itself: it queues them, in walk
// order, to one goroutine per consumer, which makes them (Reset, the lines,
// Done) as the walk would have. Each consumer sees exactly the calls of a pass
// without feeds, in the same order, each unit's from the walk's position, while
// the walk goes on to the next unit and every consumer inserts beside it, on
// every core.
//
// The queues are drained, and the goroutines stopped, before anything else
// touches a consumer: before any direct call (a unit the walk reads itself, a
// removal, a Resume, a Sync) the walk waits until every queued call is made
// (drainFeedsLocked), and the feeds end with the walk (stopPrefetchLocked),
// before the flush syncs the consumers and writes the catalogs. The calls are
// made while the walk holds the indexer's lock, as the Consumer contract says.

// feedDepth is how many units may wait in one consumer's queue. What they hold
// (their buffered or prepared lines) is bounded too: the walk queues no unit
// while the queued ones hold prefetchHeldMax or more (but one).
const feedDepth = 64

// feeds are the consumers' queues of one pass.
type feeds struct {
	pf      *prefetcher
	queues  []chan feedItem // by consumer
	pending sync.WaitGroup  // queued calls not yet made
	wg      sync.WaitGroup  // the goroutines

	mu   sync.Mutex
	cond *sync.Cond
	held int64 // bytes the queued units hold, until every consumer took them
	peak int64 // the most held at once (for tests)
}

// feedItem is one unit a worker read, to hand to one consumer.
type feedItem struct {
	ref UnitRef
	r   *fetched
}

// startFeeds starts a goroutine per consumer of pf.
func (pf *prefetcher) startFeeds() *feeds {
	fs := &feeds{pf: pf, queues: make([]chan feedItem, len(pf.consumers))}
	fs.cond = sync.NewCond(&fs.mu)
	for i := range pf.consumers {
		q := make(chan feedItem, feedDepth)
		fs.queues[i] = q
		fs.wg.Add(1)
		go fs.run(i, q)
	}
	return fs
}

// run makes consumer i's calls for each unit queued to it, in order.
func (fs *feeds) run(i int, q chan feedItem) {
	defer fs.wg.Done()
	c := fs.pf.consumers[i]
	for it := range q {
		handFetched(c, i, it.ref, it.r)
		if it.r.feedsLeft.Add(-1) == 0 {
			fs.mu.Lock()
			fs.held -= it.r.held
			fs.cond.Broadcast()
			fs.mu.Unlock()
		}
		fs.pending.Done()
	}
}

// handFetched makes consumer i's calls for a unit read from the start by a
// worker: Reset, its lines (prepared, or one Line call each), Done.
func handFetched(c Consumer, i int, ref UnitRef, r *fetched) {
	c.Reset(ref)
	if i < len(r.prepared) && r.prepared[i] != nil {
		c.(Preparer).LinesPrepared(ref, r.prepared[i])
	} else {
		for _, l := range r.lines {
			c.Line(ref, l.off, r.data[l.start:l.end])
		}
	}
	c.Done(ref, r.tail.Offset, r.tail.Fp)
}

// queue hands a unit a worker read to every consumer's goroutine.
func (fs *feeds) queue(ref UnitRef, r *fetched) {
	fs.mu.Lock()
	for fs.held > 0 && fs.held+r.held > prefetchHeldMax {
		fs.cond.Wait()
	}
	fs.held += r.held
	fs.peak = max(fs.peak, fs.held)
	fs.mu.Unlock()
	r.feedsLeft.Store(int32(len(fs.queues)))
	fs.pending.Add(len(fs.queues))
	for _, q := range fs.queues {
		q <- feedItem{ref, r}
	}
}

// drain waits until every queued call is made.
func (fs *feeds) drain() { fs.pending.Wait() }

// stop drains the queues and ends the goroutines.
func (fs *feeds) stop() {
	for _, q := range fs.queues {
		close(q)
	}
	fs.wg.Wait()
}

// drainFeedsLocked waits until the consumers' queued calls are made: called
// before any other call to a consumer during a pass.
func (ix *Indexer) drainFeedsLocked() {
	ix.waitSyncLocked() // a batched flush's syncs (syncbg.go)
	if ix.fetch != nil && ix.fetch.feeds != nil {
		ix.fetch.feeds.drain()
	}
}
