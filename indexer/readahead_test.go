package indexer

import (
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"
)

// readaheadSetting lowers the readahead's knobs for a test and records what it
// reads, answering fast or slow as told.
type readaheadSetting struct {
	mu    sync.Mutex
	paths map[string]int // path → times read ahead
	fast  bool
}

func setReadahead(t *testing.T, workers, window, warmRun, skip int, fast bool) *readaheadSetting {
	t.Helper()
	s := &readaheadSetting{paths: map[string]int{}, fast: fast}
	m, w, h := prefetchMin, prefetchWorkers, prefetchHeldMax
	rw, rwin, rrun, rskip, rf := readaheadWorkers, readaheadWindow, readaheadWarmRun, readaheadSkip, readAheadFile
	t.Cleanup(func() {
		prefetchMin, prefetchWorkers, prefetchHeldMax = m, w, h
		readaheadWorkers, readaheadWindow, readaheadWarmRun, readaheadSkip, readAheadFile = rw, rwin, rrun, rskip, rf
	})
	prefetchMin, prefetchWorkers = 1, 2
	readaheadWorkers, readaheadWindow, readaheadWarmRun, readaheadSkip = workers, window, warmRun, skip
	readAheadFile = func(path string, buf []byte) bool {
		readAhead(path, buf) // the real read, for the race detector's sake
		s.mu.Lock()
		s.paths[path]++
		s.mu.Unlock()
		return s.fast
	}
	return s
}

// TestReadaheadReadsWhatTheWorkersWillRead: on a cache that answers slowly (a
// cold one) every transcript the workers have not started is read ahead, once,
// and nothing else; the catalogs are those of a pass without readahead.
func TestReadaheadReadsWhatTheWorkersWillRead(t *testing.T) {
	root := filepath.Join(t.TempDir(), "store")
	manyWaveSessions(t, root, 300)
	run := func(workers int) (map[string]string, *Indexer, *readaheadSetting) {
		s := setReadahead(t, workers, 64, 8, 100, false)
		state := t.TempDir()
		ix := newLayoutIndexer(t, "wave", root, state, false)
		ix.consumers = append(ix.consumers, &callLog{})
		if err := ix.Reconcile(); err != nil {
			t.Fatal(err)
		}
		return treeFiles(t, filepath.Join(state, "index"), ""), ix, s
	}
	want, _, _ := run(0)
	got, ix, s := run(4)
	if len(got) != len(want) {
		t.Fatalf("%d catalog files with readahead, %d without", len(got), len(want))
	}
	for p, data := range want {
		if got[p] != data {
			t.Errorf("catalog %s differs with readahead", p)
		}
	}
	if ix.aheadSkipped != 0 {
		t.Errorf("%d units skipped as cached on a slow cache", ix.aheadSkipped)
	}
	if ix.aheadRead == 0 || ix.aheadRead != len(s.paths) {
		t.Errorf("%d units read ahead, %d distinct paths", ix.aheadRead, len(s.paths))
	}
	for p, n := range s.paths {
		if n != 1 {
			t.Errorf("%s read ahead %d times", p, n)
		}
		if !strings.HasPrefix(p, root+string(filepath.Separator)) || !strings.HasSuffix(p, ".jsonl") {
			t.Errorf("read ahead %s: not a transcript of the store", p)
		}
	}
}

// TestReadaheadSkipsACachedStore: when its reads answer at once (a warm
// cache), the readahead reads a run of them, skips a stretch, looks again: it
// reads a small share of the store.
func TestReadaheadSkipsACachedStore(t *testing.T) {
	root := filepath.Join(t.TempDir(), "store")
	manyWaveSessions(t, root, 300)
	s := setReadahead(t, 2, 1000, 8, 100, true)
	ix := newLayoutIndexer(t, "wave", root, t.TempDir(), false)
	if err := ix.Reconcile(); err != nil {
		t.Fatal(err)
	}
	// Each look reads 8 in a row (plus what the two goroutines had under way)
	// and skips 100: three or four looks over 300 units.
	if ix.aheadSkipped == 0 || ix.aheadRead > 4*(8+2) || len(s.paths) != ix.aheadRead {
		t.Errorf("readahead read %d units (%d paths) and skipped %d on a fast cache", ix.aheadRead, len(s.paths), ix.aheadSkipped)
	}
}

// TestReadaheadStopsWithThePass: goroutines waiting for the workers to move on
// (the window full) end with the pass; none is left behind.
func TestReadaheadStopsWithThePass(t *testing.T) {
	root := filepath.Join(t.TempDir(), "store")
	manyWaveSessions(t, root, 120)
	before := runtime.NumGoroutine()
	setReadahead(t, 8, 2, 1000, 1, false)
	ix := newLayoutIndexer(t, "wave", root, t.TempDir(), false)
	if err := ix.Reconcile(); err != nil {
		t.Fatal(err)
	}
	if ix.aheadRead == 0 {
		t.Fatal("nothing read ahead")
	}
	deadline := time.Now().Add(10 * time.Second)
	for runtime.NumGoroutine() > before {
		if time.Now().After(deadline) {
			buf := make([]byte, 1<<20)
			t.Fatalf("%d goroutines after the pass, %d before:\n%s", runtime.NumGoroutine(), before, buf[:runtime.Stack(buf, true)])
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestReadaheadStopsAWalkCutShort: a pass whose walk ends before it takes the
// units (an error part way) stops the readahead goroutines waiting for the
// workers to move on, who never will: the stop does not hang.
func TestReadaheadStopsAWalkCutShort(t *testing.T) {
	root := filepath.Join(t.TempDir(), "store")
	manyWaveSessions(t, root, 120)
	setReadahead(t, 4, 3, 1000, 1, false)
	ix := newLayoutIndexer(t, "wave", root, t.TempDir(), false)
	ix.mu.Lock()
	defer ix.mu.Unlock()
	ix.startPrefetchLocked()
	pf := ix.fetch
	if pf == nil {
		t.Fatal("no prefetch started")
	}
	// Nothing is taken: the workers stop a window ahead, the readahead
	// goroutines a window ahead of them, all four waiting.
	deadline := time.Now().Add(10 * time.Second)
	for {
		pf.mu.Lock()
		waiting := pf.ahead.waiting
		pf.mu.Unlock()
		if waiting == readaheadWorkers {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d readahead goroutines waiting, want %d", waiting, readaheadWorkers)
		}
		time.Sleep(time.Millisecond)
	}
	stopped := make(chan struct{})
	go func() {
		ix.stopPrefetchLocked()
		close(stopped)
	}()
	select {
	case <-stopped:
	case <-time.After(10 * time.Second):
		buf := make([]byte, 1<<20)
		t.Fatalf("the prefetch did not stop:\n%s", buf[:runtime.Stack(buf, true)])
	}
	if ix.aheadRead == 0 || ix.aheadRead > len(pf.items) {
		t.Errorf("%d units read ahead of %d", ix.aheadRead, len(pf.items))
	}
}
