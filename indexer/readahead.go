package indexer

import "sync"

// A cold build from a cold page cache waits on the device, one file at a time
// per read worker: with two workers the device sees two requests at once and is
// idle most of the time. Readahead goroutines open the transcripts the workers
// will read next, a window ahead of them, and ask for their bytes without
// waiting for them: on Linux posix_fadvise(WILLNEED), which queues the reads and
// returns, so one goroutine keeps the device's queue deep (a 100k-transcript
// store: `cat` of them one after another 11 s, read behind such advice 2.5 s);
// elsewhere (advise_other.go) several goroutines read the bytes into a scratch
// buffer they throw away. The file stays open and is handed to the worker that
// reads it, which then neither opens nor looks it up again. Files that answer
// at once (a warm cache: on Linux their first byte is cached) make the
// readahead skip a stretch, looking again now and then.

// readaheadWorkers is how many files are read ahead at once (0: none). A var:
// tests change it.
var readaheadWorkers = adviseWorkers

// readaheadWindow is how many units ahead of the read workers the readahead
// may run; a file opened ahead stays open until a worker takes it, so it is
// also a bound on the files held open (plus one per readahead goroutine). A
// var: tests lower it.
var readaheadWindow = 256

// readaheadWarmRun is how many fast reads in a row make the readahead skip
// readaheadSkip units, after which it reads again to see. Vars: tests lower
// them.
var (
	readaheadWarmRun = 64
	readaheadSkip    = 4096
)

// readaheadMax is how much of a file is read ahead: a larger transcript is left
// to the walk, which streams it (prefetchBufferMax).
const readaheadMax = prefetchBufferMax

// ahead is the readahead state of a prefetcher, under its mu.
type ahead struct {
	cond     *sync.Cond // signalled when the workers take a unit (next moves)
	waiting  int        // readahead goroutines waiting on cond
	next     int        // the next item to read ahead
	fastRun  int        // fast reads in a row
	open     int        // files opened ahead and not yet taken or closed
	read     int        // items read ahead (for tests)
	skipped  int        // items skipped as warm (for tests)
	handed   int        // files handed to a worker or the walk (for tests)
	openPeak int        // most files open at once (for tests)
}

// startReadahead starts the readahead goroutines of a prefetcher whose mu is
// not held; they stop with the workers (stop).
func (pf *prefetcher) startReadahead(n int) {
	pf.ahead.cond = sync.NewCond(&pf.mu)
	for range n {
		pf.wg.Add(1)
		go pf.readahead()
	}
}

// nextMoved wakes the readahead goroutines waiting for the workers to move on
// once a quarter of the window is free, so that a wake-up advises a batch
// rather than a file; pf.mu is held.
func (pf *prefetcher) nextMoved() {
	if pf.ahead.waiting > 0 && pf.next+readaheadWindow-pf.ahead.next >= max(readaheadWindow/4, 1) {
		pf.ahead.cond.Broadcast()
	}
}

func (pf *prefetcher) readahead() {
	defer pf.wg.Done()
	var buf []byte // the scratch of a blocking readahead (advise_other.go)
	for {
		pf.mu.Lock()
		for !pf.stop && pf.ahead.next < len(pf.items) && pf.ahead.next >= pf.next+readaheadWindow {
			pf.ahead.waiting++
			pf.ahead.cond.Wait()
			pf.ahead.waiting--
		}
		if pf.stop || pf.ahead.next >= len(pf.items) {
			pf.mu.Unlock()
			return
		}
		// What a worker started already needs no readahead.
		i := max(pf.ahead.next, pf.next)
		if i >= len(pf.items) {
			pf.mu.Unlock()
			return
		}
		if pf.ahead.fastRun >= readaheadWarmRun {
			// Warm: skip a stretch, then look again.
			pf.ahead.fastRun = 0
			pf.ahead.next = min(i+readaheadSkip, len(pf.items))
			pf.ahead.skipped += pf.ahead.next - i
			pf.mu.Unlock()
			continue
		}
		pf.ahead.next = i + 1
		pf.ahead.read++
		pf.ahead.open++ // counted before it is opened: the bound holds throughout
		pf.ahead.openPeak = max(pf.ahead.openPeak, pf.ahead.open)
		pf.mu.Unlock()
		if buf == nil && !adviseAsync {
			buf = make([]byte, 64<<10)
		}
		f, fast := readAheadFile(pf.ix.unitPath(pf.items[i]), buf)
		pf.mu.Lock()
		if fast {
			pf.ahead.fastRun++
		} else {
			pf.ahead.fastRun = 0
		}
		if f != nil && !pf.stop && i >= pf.next {
			pf.results[i].file = f // no worker has it yet: the one that does takes this
			f = nil
		} else {
			pf.ahead.open--
		}
		pf.mu.Unlock()
		if f != nil {
			f.Close() // taken meanwhile, or passed by the walk
		}
	}
}

// takeFile hands over the file opened ahead for item i, if any (nil: none);
// pf.mu is held.
func (pf *prefetcher) takeFile(i int) *unitFile {
	r := pf.results[i]
	f := r.file
	if f != nil {
		r.file = nil
		pf.ahead.open--
		pf.ahead.handed++
	}
	return f
}

// dropFile closes the file opened ahead for item i, which no worker will read
// (the walk passed it, or the pass ended); pf.mu is held.
func (pf *prefetcher) dropFile(i int) {
	if r := pf.results[i]; r != nil && r.file != nil {
		r.file.Close()
		r.file = nil
		pf.ahead.open--
	}
}

// readAheadFile is readAhead; a var: tests see what is read ahead and say how
// fast.
var readAheadFile = readAhead

// readAhead opens the file at path and advises the system that its head (up to
// readaheadMax) is about to be read (advise_*.go; buf is the scratch of a
// blocking advice). It returns the open file (nil: none; the worker opens it
// itself), and whether the advice was fast (cached).
func readAhead(path string, buf []byte) (f *unitFile, fast bool) {
	f, err := openUnitFile(path) // never blocks on a FIFO
	if err != nil {
		return nil, true
	}
	fast, ok := advise(f, buf)
	if !ok {
		f.Close()
		return nil, true
	}
	return f, fast
}
