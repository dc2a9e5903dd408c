package indexer

import (
	"bytes"
	"io"
	"io/fs"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
)

// A full pass (Reconcile, Verify) that finds many transcripts it has never read
// — a cold reindex, a first start — reads and folds them on every core. Each
// unit's accumulator is independent, so workers read and fold whole units ahead
// of the walk; the walk, under the indexer's lock and in its usual order, installs
// each result as if it had read the unit itself. The catalogs are byte-identical
// to a sequential pass, and consumers are still called under the lock, one unit
// after another, each unit's lines in order (the contract in consumer.go): a
// worker only buffers the lines for them, or, for a consumer that is a Preparer,
// does the pure part of its work on them (decoding, tokenizing), so that only the
// insert is left to the walk.

// prefetchMin is how many new transcripts a full pass must find before it reads
// them on workers; fewer are read by the walk itself. A var: tests lower it.
var prefetchMin = 32

// prefetchWorkers is how many units are read at once (0: GOMAXPROCS).
var prefetchWorkers = 0

// prefetchBufferMax is the largest transcript a worker buffers the lines (or the
// prepared lines) of for the consumers; a larger one is left to the walk, which
// streams it.
const prefetchBufferMax = 4 << 20

// prefetchHeldMax bounds the buffered lines the workers hold for the walk: past
// it they wait, except for the unit the walk needs next. At most this plus one
// transcript per worker is held (a daemon's first start must stay small); the
// units the walk passed on to the consumers' queues are bounded the same way
// (feed.go). A var: tests lower it.
var prefetchHeldMax int64 = 16 << 20

// prefetchAhead is how many units (per worker) the workers may run ahead of the
// walk.
const prefetchAhead = 4

// fetched is one unit read by a worker: what the walk installs.
type fetched struct {
	done      chan struct{}
	ok        bool // false: the walk reads the unit itself (an error, a race, too big)
	tail      Tail
	acc       Accumulator
	skipped   int
	bytesRead int64
	data      []byte        // the lines of the consumers that are no Preparer, back to back
	lines     []fetchedLine // where each line is in data
	prepared  []Prepared    // by consumer: its Preparer's work on the lines (nil: none)
	held      int64         // bytes of data and prepared, counted against prefetchHeldMax
	feedsLeft atomic.Int32  // consumers' goroutines yet to take it (feed.go)
	unit      *unit         // the unit as the walk installs it
	ref       UnitRef       // its UnitRef (unitRef)
	session   *Session      // its session (linesSession)
	file      *unitFile     // opened by the readahead, not yet taken (readahead.go)
}

type fetchedLine struct {
	off        int64
	start, end int
}

// prefetcher hands the units of one walk to the workers in walk order, at most
// window units ahead of the walk.
type prefetcher struct {
	ll        LineLayout
	ix        *Indexer
	consumers []Consumer // the indexer's, fixed before the first pass
	preparers []Preparer // by consumer: the ones that prepare their lines (nil: not)
	items     []string
	lists     listings // the tree as listed for items, for the walk (walkTree)
	at        map[string]int
	results   []*fetched

	mu     sync.Mutex
	cond   *sync.Cond
	next   int // the next item a worker takes
	taken  int // the walk has passed every item before this one
	window int
	held   int64 // bytes of buffered lines in results not yet taken
	stop   bool
	ahead  ahead // the readahead's state (readahead.go)
	wg     sync.WaitGroup

	feeds *feeds // the consumers' queues (feed.go); nil: no consumer
}

// startPrefetchLocked lists the transcripts under the root that the indexer holds
// nothing of and, if there are enough of them, starts reading them on workers
// until stopPrefetchLocked.
func (ix *Indexer) startPrefetchLocked() {
	ll, ok := ix.layout.(LineLayout)
	if !ok || ix.rootRel != "" || ix.fetch != nil {
		return
	}
	// Start over the catalogs Load read: the look for new transcripts is a
	// second walk of every directory (6% of a 100k store's start-up), for files
	// that arrived while no daemon ran: few, as a rule. The walk reads what it
	// finds itself; a start without catalogs (the first) still reads on workers.
	if ix.quick && ix.units.len() > 0 {
		return
	}
	var items []string
	seen := map[string]bool{}
	lists := listings{} // for the walk's own (walkLocked), which follows
	walkTree(ix.rootDir, ix.rootPlain, nil, lists, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			if d != nil && d.IsDir() && p != ix.rootDir {
				return filepath.SkipDir
			}
			return nil
		}
		if d.Type()&fs.ModeSymlink != 0 {
			return nil
		}
		r, _ := ix.relOf(p)
		if d.IsDir() {
			if r != "." && ix.layout.SkipDir(r) {
				return filepath.SkipDir
			}
			return nil
		}
		if d.Name() == CatalogName || strings.HasPrefix(d.Name(), TempPrefix) {
			return nil
		}
		urel, kind := ix.layout.Classify(r)
		if kind == UnitLines && !seen[urel] && ix.units.get(urel) == nil {
			seen[urel] = true
			items = append(items, urel)
		}
		return nil
	})
	if len(items) < prefetchMin {
		return
	}
	workers := prefetchWorkers
	if workers <= 0 {
		workers = runtime.GOMAXPROCS(0)
	}
	pf := &prefetcher{ll: ll, ix: ix, consumers: ix.consumers, preparers: make([]Preparer, len(ix.consumers)), items: items,
		at: make(map[string]int, len(items)), results: make([]*fetched, len(items)), window: workers * prefetchAhead, lists: lists}
	for i, c := range ix.consumers {
		pf.preparers[i], _ = c.(Preparer)
	}
	pf.cond = sync.NewCond(&pf.mu)
	for i, urel := range items {
		pf.at[urel] = i
		pf.results[i] = &fetched{done: make(chan struct{})}
	}
	for range workers {
		pf.wg.Add(1)
		go pf.work()
	}
	if readaheadWorkers > 0 {
		pf.startReadahead(readaheadWorkers)
	}
	if len(pf.consumers) > 0 {
		pf.feeds = pf.startFeeds()
	}
	ix.fetch = pf
}

// stopPrefetchLocked stops the workers and drops what the walk did not take.
func (ix *Indexer) stopPrefetchLocked() {
	pf := ix.fetch
	if pf == nil {
		return
	}
	if pf.feeds != nil {
		pf.feeds.stop() // every queued call made: the flush may sync the consumers
		ix.feedPeak = max(ix.feedPeak, pf.feeds.peak)
	}
	pf.mu.Lock()
	pf.stop = true
	pf.cond.Broadcast()
	if pf.ahead.cond != nil {
		pf.ahead.cond.Broadcast()
	}
	pf.mu.Unlock()
	pf.wg.Wait()
	pf.mu.Lock()
	for i := pf.next; i < len(pf.items); i++ {
		pf.dropFile(i) // opened ahead of workers that stopped first
	}
	ix.aheadRead, ix.aheadSkipped, ix.aheadHanded = pf.ahead.read, pf.ahead.skipped, pf.ahead.handed
	ix.aheadOpen, ix.aheadOpenPeak = pf.ahead.open, pf.ahead.openPeak
	pf.mu.Unlock()
	ix.fetch = nil
}

func (pf *prefetcher) work() {
	defer pf.wg.Done()
	for {
		pf.mu.Lock()
		// Run at most window units ahead of the walk and, beyond the unit the
		// walk needs next, hold at most prefetchHeldMax of buffered lines.
		for !pf.stop && pf.next < len(pf.items) &&
			(pf.next >= pf.taken+pf.window || (pf.next > pf.taken && pf.held >= prefetchHeldMax)) {
			pf.cond.Wait()
		}
		if pf.stop || pf.next >= len(pf.items) {
			pf.mu.Unlock()
			return
		}
		i := pf.next
		pf.next++
		pf.nextMoved()
		r := pf.results[i]
		f := pf.takeFile(i)
		pf.mu.Unlock()
		pf.read(pf.items[i], r, f)
		pf.mu.Lock()
		pf.held += r.held
		pf.ix.prefetchPeak = max(pf.ix.prefetchPeak, pf.held) // for tests
		pf.mu.Unlock()
		close(r.done)
	}
}

// take returns the worker's reading of urel, waiting for it, or nil when the walk
// must read the unit itself. The walk calls it in walk order.
func (pf *prefetcher) take(urel string) *fetched {
	i, ok := pf.at[urel]
	if !ok {
		return nil
	}
	pf.mu.Lock()
	if i < pf.taken {
		pf.mu.Unlock()
		return nil // taken already (a unit visited twice)
	}
	var passed []*fetched // started, but the walk went past them (gone meanwhile)
	for j := pf.taken; j < i && j < pf.next; j++ {
		passed = append(passed, pf.results[j])
	}
	started := i < pf.next
	r := pf.results[i]
	var f *unitFile
	if !started {
		f = pf.takeFile(i)
	}
	for j := max(pf.taken, pf.next); j < i; j++ {
		pf.dropFile(j) // opened ahead, but no worker will read it now
	}
	for j := pf.taken; j <= i; j++ {
		pf.results[j] = nil // the walk is past them: let their buffers go
	}
	pf.taken = i + 1
	pf.next = max(pf.next, pf.taken) // no worker starts what the walk is past
	pf.cond.Broadcast()
	pf.nextMoved()
	pf.mu.Unlock()
	for _, p := range passed {
		<-p.done
		pf.release(p)
	}
	if !started {
		// The walk caught up with the workers: it reads the unit here, as a
		// worker would (no other goroutine has it), so that its consumers are
		// handed the lines prepared too, without a locked call per line.
		pf.read(urel, r, f)
		if !r.ok {
			return nil
		}
		return r
	}
	<-r.done
	pf.release(r)
	if !r.ok {
		return nil
	}
	return r
}

// release stops counting a result's buffer against prefetchHeldMax.
func (pf *prefetcher) release(r *fetched) {
	pf.mu.Lock()
	pf.held -= r.held
	pf.cond.Broadcast()
	pf.mu.Unlock()
}

// membersPool keeps the line scans of the units read on workers for the next
// units (their records grow to the longest lines' once, not once a unit).
var membersPool = sync.Pool{New: func() any { return new(Members) }}

// headBufs keeps the buffers of the head fingerprints of the units read on
// workers (headCollector keeps at most headWindow bytes).
var headBufs = sync.Pool{New: func() any { b := make([]byte, 0, headWindow); return &b }}

// release forgets the last line scanned (nothing of it is kept) and puts m back
// in membersPool.
func (m *Members) release() {
	clear(m.mem)
	clear(m.keys)
	m.line, m.mem, m.objs, m.sub, m.keys, m.err = nil, m.mem[:0], m.objs[:0], m.sub[:0], m.keys[:0], nil
	membersPool.Put(m)
}

// read does what updateLinesLocked does for a unit read from the start, on a
// worker: it touches nothing of the indexer's but the layout. f is the file the
// readahead opened (nil: none).
func (pf *prefetcher) read(urel string, r *fetched, f *unitFile) {
	var fi unitStat
	var err error
	path := pf.ix.unitPath(urel)
	if f != nil {
		// Opened a window ahead: if the name has gone since (removed, or
		// replaced by a rename), the file is read by its name as it is now.
		if fi, err = f.stat(); err != nil || fi.unlinked {
			f.Close()
			f = nil
		}
	}
	if f == nil {
		if f, err = openUnitFile(path); err != nil { // never blocks on a FIFO
			return
		}
		fi, err = f.stat()
	}
	defer f.Close()
	if err != nil || !fi.regular || (len(pf.consumers) > 0 && fi.size > prefetchBufferMax) {
		return
	}
	dev, ino := fi.dev, fi.ino
	r.tail = Tail{Dev: dev, Ino: ino}
	r.acc = pf.ll.NewAccumulator(urel)
	// What the walk's unitRef will be once it installs the unit.
	ref := UnitRef{Source: pf.ix.opt.Source, Layout: pf.ix.layout.Name(), Unit: urel, Path: path, Dev: dev, Ino: ino}
	r.ref = ref
	buffer := false // a consumer takes the raw lines
	var prepared []Prepared
	for i := range pf.consumers {
		var p Prepared
		if pf.preparers[i] != nil {
			p = pf.preparers[i].Prepare(ref)
		}
		if p != nil {
			if prepared == nil {
				prepared = make([]Prepared, len(pf.consumers))
			}
			prepared[i] = p
			continue
		}
		buffer = true
	}
	r.prepared = prepared
	if buffer {
		r.data = make([]byte, 0, fi.size)
	}
	acc := r.acc
	// Each line is scanned once for the fold and the Prepareds that take its
	// members (Members), when two or more of them do.
	accM, _ := acc.(MembersLiner)
	prepM := make([]MembersPrepared, len(prepared))
	users := 0
	if accM != nil {
		users++
	}
	for i, p := range prepared {
		if prepM[i], _ = p.(MembersPrepared); prepM[i] != nil {
			users++
		}
	}
	var mem *Members
	if users >= 2 {
		mem = membersPool.Get().(*Members)
		defer mem.release()
	}
	hb := headBufs.Get().(*[]byte)
	defer headBufs.Put(hb)
	head := headCollector{buf: (*hb)[:0]} // the unit's head fingerprint is made from it below
	var tail tailCollector                // and its fingerprint
	st, err := readLinesSized(f, &r.tail, fi.size, func(off int64, line []byte) {
		head.line(line)
		tail.line(line)
		line = bytes.TrimSpace(line)
		if len(line) == 0 {
			return
		}
		if line[0] != '{' {
			r.skipped++
			return
		}
		if mem != nil {
			mem.Scan(line)
		}
		var err error
		if mem != nil && accM != nil {
			err = accM.LineMembers(mem)
		} else {
			err = acc.Line(line)
		}
		if err != nil {
			r.skipped++
		}
		for i, p := range prepared {
			switch {
			case p == nil:
			case mem != nil && prepM[i] != nil:
				prepM[i].LineMembers(off, mem)
			default:
				p.Line(off, line)
			}
		}
		if buffer {
			start := len(r.data)
			r.data = append(r.data, line...)
			r.lines = append(r.lines, fetchedLine{off, start, len(r.data)})
		}
	})
	r.bytesRead += st.BytesRead
	r.skipped += st.Long
	if err != nil {
		return
	}
	r.tail.Size = max(fi.size, r.tail.Offset)
	r.tail.Mtime = f.mtimeAt(fi, r.tail.Offset)
	whole := st.Long == 0 && !r.tail.LongLine // every line handed out
	// Each fingerprint from the lines read when every line was handed out, else
	// read from the file.
	fingerprint := func(collected func(int64) (string, bool), read func(io.ReaderAt, int64) (string, int64, error)) (string, error) {
		if whole {
			if fp, ok := collected(r.tail.Offset); ok {
				return fp, nil
			}
		}
		fp, n, err := read(f, r.tail.Offset)
		r.bytesRead += n
		return fp, err
	}
	if r.tail.Fp, err = fingerprint(tail.fingerprint, Fingerprint); err != nil {
		return
	}
	if r.tail.Hfp, err = fingerprint(head.fingerprint, HeadFingerprint); err != nil {
		return
	}
	r.held = int64(cap(r.data))
	for _, p := range prepared {
		if p != nil {
			r.held += p.Size()
		}
	}
	// The unit as fetchedLocked installs it, and its session, made here: only
	// the filing is left to the walk.
	u := &unit{rel: urel, kind: UnitLines, live: &unitLive{acc: r.acc}, tail: newUnitTail(dev, ino)}
	u.tail.set(&r.tail)
	u.setSkipped(r.skipped)
	r.unit, r.session = u, pf.ix.linesSession(u, path)
	r.ok = true
}

// fetchedLocked installs a worker's reading of a unit the indexer held nothing of,
// exactly as updateLinesLocked would have read it; false means there is none and
// the caller reads the unit itself.
func (ix *Indexer) fetchedLocked(urel string) bool {
	if ix.fetch == nil || ix.units.get(urel) != nil {
		return false
	}
	r := ix.fetch.take(urel)
	if r == nil {
		return false
	}
	u := r.unit
	ix.units.put(u)
	if len(ix.consumers) > 0 {
		// A unit read from the start: every consumer is reset and handed every
		// line, as the prepared lines of a Preparer or one Line call each, then
		// Done, on its own goroutine (feed.go).
		ix.fetch.feeds.queue(r.ref, r) // ix.unitRef(u), as the worker made it
	}
	ix.stats.BytesRead += r.bytesRead
	ix.setLinesSessionLocked(u, r.session)
	ix.prefetched++
	return true
}
