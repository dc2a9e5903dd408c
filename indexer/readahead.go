package indexer

import (
	"os"
	"sync"
	"syscall"
	"time"
)

// A cold build from a cold page cache waits on the device, one file at a time
// per read worker: with two workers the device sees two requests at once and is
// idle most of the time (a store of 100k small transcripts: `cat` of them one
// after another 17 s, sixteen `cat`s at once 4 s). Readahead goroutines read the
// transcripts the workers will read next, many at once, into a scratch buffer
// they throw away: the workers then find them in the page cache. Nothing is
// kept, so the window can be wide; nothing is parsed, so the only cost is a
// read of what is cached already, which they stop doing once the files they
// read all answer at once (a warm cache), looking again now and then.

// readaheadWorkers is how many files are read ahead at once (0: none). A var:
// tests change it.
var readaheadWorkers = 16

// readaheadWindow is how many units ahead of the read workers the readahead
// may run. A var: tests lower it.
var readaheadWindow = 512

// readaheadFast is a read that waited on no device: the page cache had it.
const readaheadFast = 50 * time.Microsecond

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
	cond    *sync.Cond // signalled when the workers take a unit (next moves)
	waiting int        // readahead goroutines waiting on cond
	next    int        // the next item to read ahead
	fastRun int        // fast reads in a row
	read    int        // items read ahead (for tests)
	skipped int        // items skipped as warm (for tests)
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

// nextMoved wakes the readahead goroutines waiting for the workers to move on;
// pf.mu is held.
func (pf *prefetcher) nextMoved() {
	if pf.ahead.waiting > 0 {
		pf.ahead.cond.Broadcast()
	}
}

func (pf *prefetcher) readahead() {
	defer pf.wg.Done()
	buf := make([]byte, 64<<10)
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
		pf.mu.Unlock()
		fast := readAheadFile(pf.ix.unitPath(pf.items[i]), buf)
		pf.mu.Lock()
		if fast {
			pf.ahead.fastRun++
		} else {
			pf.ahead.fastRun = 0
		}
		pf.mu.Unlock()
	}
}

// readAheadFile is readAhead; a var: tests see what is read and say how fast.
var readAheadFile = readAhead

// readAhead reads the head of the file at path (up to readaheadMax) into buf,
// which it throws away, and reports whether the reads were fast (cached).
func readAhead(path string, buf []byte) (fast bool) {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0) // never blocks on a FIFO
	if err != nil {
		return true
	}
	defer f.Close()
	if fi, err := f.Stat(); err != nil || !fi.Mode().IsRegular() {
		return true
	}
	start := time.Now()
	var n int64
	for n < readaheadMax {
		m, err := f.Read(buf)
		n += int64(m)
		if err != nil || m == 0 { // io.EOF among them
			break
		}
	}
	// A cached file is copied at a GB/s or more.
	return time.Since(start) < readaheadFast+time.Duration(n)
}
