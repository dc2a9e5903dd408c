package indexer

import (
	"os"
	"path/filepath"
	"reflect"
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
	readAheadFile = func(path string, buf []byte) (*unitFile, bool) {
		f, _ := readAhead(path, buf) // the real advice, for the race detector's sake
		s.mu.Lock()
		s.paths[path]++
		s.mu.Unlock()
		return f, s.fast
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
	// The files opened ahead were read by the workers, not opened again, and
	// none is left open.
	if ix.aheadHanded == 0 || ix.aheadHanded > ix.aheadRead {
		t.Errorf("%d files opened ahead handed to the workers, %d read ahead", ix.aheadHanded, ix.aheadRead)
	}
	if ix.aheadOpen != 0 {
		t.Errorf("%d files opened ahead left open", ix.aheadOpen)
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

// openFDsUnder counts the process's open descriptors of files under root (-1:
// the system does not say); descriptors other code opens and closes meanwhile
// (the runtime's, the test framework's) do not count.
func openFDsUnder(root string) int {
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		return -1
	}
	n := 0
	for _, e := range ents {
		if dst, err := os.Readlink(filepath.Join("/proc/self/fd", e.Name())); err == nil && strings.HasPrefix(dst, root+string(filepath.Separator)) {
			n++
		}
	}
	return n
}

// TestReadaheadBoundsTheFilesItHolds: the files opened ahead stay open until
// a worker takes them, so the window bounds them (plus one per readahead
// goroutine under way); a pass that ends before the workers take them closes
// every one.
func TestReadaheadBoundsTheFilesItHolds(t *testing.T) {
	root := filepath.Join(t.TempDir(), "store")
	manyWaveSessions(t, root, 200)
	const window, workers = 12, 3
	setReadahead(t, workers, window, 1000, 1, false)
	ix := newLayoutIndexer(t, "wave", root, t.TempDir(), false)
	before := openFDsUnder(root)
	ix.mu.Lock()
	defer ix.mu.Unlock()
	ix.startPrefetchLocked()
	pf := ix.fetch
	if pf == nil {
		t.Fatal("no prefetch started")
	}
	// Nothing is taken: the workers stop their window ahead, the readahead
	// goroutines the readahead window ahead of them, holding those files open.
	// Every unit between the workers' next and the readahead's holds its file
	// (one a worker started meanwhile is behind the workers' next), but the
	// waiting goroutines are woken only once a quarter of the window is free
	// (nextMoved): between window-max(window/4, 1) and window files are held.
	deadline := time.Now().Add(10 * time.Second)
	var open int
	for {
		pf.mu.Lock()
		waiting := pf.ahead.waiting
		open = pf.ahead.open
		pf.mu.Unlock()
		if waiting == workers && open >= window-max(window/4, 1) && open <= window {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d readahead goroutines waiting with %d files open, want %d with %d to %d", waiting, open, workers, window-max(window/4, 1), window)
		}
		time.Sleep(time.Millisecond)
	}
	if n := openFDsUnder(root); before >= 0 && n < before+open {
		t.Errorf("%d descriptors of the store open with %d files held ahead, %d before", n, open, before)
	}
	ix.stopPrefetchLocked()
	if ix.aheadOpenPeak > window+workers {
		t.Errorf("%d files open at once, bound %d", ix.aheadOpenPeak, window+workers)
	}
	if ix.aheadOpen != 0 {
		t.Errorf("%d files opened ahead left open", ix.aheadOpen)
	}
	if n := openFDsUnder(root); before >= 0 && n > before {
		t.Errorf("%d descriptors of the store open after the pass, %d before", n, before)
	}
}

// TestReadaheadFileChangedBeforeItsRead: a file opened ahead and then removed,
// replaced by a rename or truncated before its worker reads it is read as its
// name says it is at the read, as if the worker had opened it itself.
func TestReadaheadFileChangedBeforeItsRead(t *testing.T) {
	root := filepath.Join(t.TempDir(), "store")
	manyWaveSessions(t, root, 60)
	setReadahead(t, 0, 1, 1000, 1, false)
	ix := newLayoutIndexer(t, "wave", root, t.TempDir(), false)
	ix.mu.Lock()
	defer ix.mu.Unlock()
	ix.startPrefetchLocked()
	pf := ix.fetch
	if pf == nil {
		t.Fatal("no prefetch started")
	}
	defer ix.stopPrefetchLocked()
	// Units with three lines or more (manyWaveSessions: unit i has i%9 messages).
	var units []string
	for _, urel := range pf.items {
		data, err := os.ReadFile(ix.unitPath(urel))
		if err != nil {
			t.Fatal(err)
		}
		if strings.Count(string(data), "\n") >= 4 {
			units = append(units, urel)
		}
	}
	if len(units) < 3 {
		t.Fatalf("%d units with four lines", len(units))
	}
	ahead := func(urel string) *unitFile {
		f, _ := readAhead(ix.unitPath(urel), nil)
		if f == nil {
			t.Fatalf("%s: not opened ahead", urel)
		}
		return f
	}
	read := func(urel string, f *unitFile) *fetched {
		r := &fetched{done: make(chan struct{})}
		pf.read(urel, r, f)
		return r
	}
	removed, renamed, truncated := units[0], units[1], units[2]

	f := ahead(removed)
	if err := os.Remove(ix.unitPath(removed)); err != nil {
		t.Fatal(err)
	}
	if r := read(removed, f); r.ok {
		t.Errorf("%s removed after it was opened ahead, read as %d bytes", removed, r.tail.Size)
	}

	f = ahead(renamed)
	p := ix.unitPath(renamed)
	data, _ := os.ReadFile(p)
	firstLine := data[:strings.IndexByte(string(data), '\n')+1]
	if err := os.WriteFile(p+".new", firstLine, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(p+".new", p); err != nil {
		t.Fatal(err)
	}
	got, want := read(renamed, f), read(renamed, nil)
	if !got.ok || !want.ok || !reflect.DeepEqual(got.tail, want.tail) || got.tail.Size != int64(len(firstLine)) {
		t.Errorf("%s replaced after it was opened ahead: read %+v, by its name %+v", renamed, got.tail, want.tail)
	}

	f = ahead(truncated)
	p = ix.unitPath(truncated)
	data, _ = os.ReadFile(p)
	firstLine = data[:strings.IndexByte(string(data), '\n')+1]
	if err := os.Truncate(p, int64(len(firstLine))); err != nil {
		t.Fatal(err)
	}
	got, want = read(truncated, f), read(truncated, nil)
	if !got.ok || !want.ok || !reflect.DeepEqual(got.tail, want.tail) || got.tail.Offset != int64(len(firstLine)) {
		t.Errorf("%s truncated after it was opened ahead: read %+v, by its name %+v", truncated, got.tail, want.tail)
	}
}
