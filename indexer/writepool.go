package indexer

import (
	"os"
	"sync"
)

// commitParallel is how many writes a flush has in flight at once: concurrent
// fsyncs share the filesystem journal's commits (8 at once: 3.4x the throughput of
// one at a time on ext4), which keeps append-to-index latency down under heavy
// load. It also bounds the memory a flush holds in rendered outputs: a write
// starts as soon as its output is rendered, and rendering waits for a free slot.
const commitParallel = 8

// Rendered catalogs and resume files are kept for reuse (renderBufs) up to
// keptBufs buffers of at most keptBufCap bytes each. Under steady appends a
// daemon rewrites the same projects' files every flush: rendering them into new
// buffers each time was three quarters of what it allocated (10k sessions at 100
// appends/s: ~40 MB/s), which set its GC pace and its peak RSS. A project larger
// than keptBufCap renders into a buffer of its own, as before.
const (
	keptBufs   = 2*commitParallel + 2
	keptBufCap = 1 << 20
)

// writePool runs a flush's atomic writes in the background, at most
// commitParallel at once, while the flush renders the next outputs.
type writePool struct {
	sem  chan struct{}
	wg   sync.WaitGroup
	mu   sync.Mutex
	done []writeResult
	free [][]byte // rendering buffers whose write finished (under mu)

	// batch: writes only stage their temp files; wait makes them durable and
	// renames them all at once (batchwrite.go). Set between flushes only.
	batch  bool
	staged []staged // under mu
}

type writeResult struct {
	path string
	sum  uint64
	mark dirtyMark
	err  error
}

// writeFileAtomic is WriteFileAtomic; tests replace it to make writes fail (ENOSPC).
var writeFileAtomic = WriteFileAtomic

// start writes data to path in the background. With reuse, data came from
// buffer and goes back to the free list once written.
func (p *writePool) start(path string, data []byte, sum uint64, mark dirtyMark, reuse bool) {
	if p.sem == nil {
		p.sem = make(chan struct{}, commitParallel)
	}
	p.sem <- struct{}{}
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		var tmp string
		var err error
		if p.batch {
			tmp, err = writeTemp(path, data)
		} else {
			err = writeFileAtomic(path, data)
		}
		p.mu.Lock()
		if r := (writeResult{path, sum, mark, err}); tmp != "" {
			p.staged = append(p.staged, staged{tmp, r})
		} else {
			p.done = append(p.done, r)
		}
		if reuse {
			p.putLocked(data)
		}
		p.mu.Unlock()
		<-p.sem
	}()
}

// buffer returns an empty buffer to render an output into: a kept one if any.
func (p *writePool) buffer() []byte {
	p.mu.Lock()
	defer p.mu.Unlock()
	if n := len(p.free); n > 0 {
		b := p.free[n-1]
		p.free[n-1] = nil
		p.free = p.free[:n-1]
		return b
	}
	return nil
}

// release returns a buffer from buffer that was not handed to start.
func (p *writePool) release(b []byte) {
	p.mu.Lock()
	p.putLocked(b)
	p.mu.Unlock()
}

func (p *writePool) putLocked(b []byte) {
	if cap(b) == 0 || cap(b) > keptBufCap || len(p.free) >= keptBufs {
		return
	}
	p.free = append(p.free, b[:0])
}

// discard waits for every write started and, in a batch, removes the staged
// temp files instead of putting them in place; it returns the writes not made.
func (p *writePool) discard() []writeResult {
	p.wg.Wait()
	p.mu.Lock()
	defer p.mu.Unlock()
	out := p.done
	for _, s := range p.staged {
		os.Remove(s.tmp)
		out = append(out, s.res)
	}
	p.done, p.staged = nil, nil
	return out
}

// wait waits for every write started (in a batch: makes them durable and renames
// them into place) and returns their results.
func (p *writePool) wait() []writeResult {
	p.wg.Wait()
	p.mu.Lock()
	defer p.mu.Unlock()
	out := append(p.done, commitBatch(p.staged)...)
	p.done, p.staged = nil, nil
	return out
}
