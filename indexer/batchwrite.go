package indexer

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"sync"
)

// Batched durability, for a flush that writes many outputs at once (reindex's
// full passes). WriteFileAtomic makes each file durable on its own: an fsync
// of its data, a rename, an fsync of its directory, two journal commits per file.
// A cold build writes thousands of files; here every output's temp file is written
// first, then made durable all at once (one syncfs(2) of each filesystem written
// to), then renamed into place, then the renames made durable the same way. Each
// file is still renamed over its old self only once its new data is durable, so a
// crash at any moment leaves every output old or new, never half-written; it may
// leave temp files, which the next pass removes (CleanTemps) and the watcher
// ignores (TempPrefix).

// BatchFullPasses makes the indexer's full passes (Reconcile) write their outputs
// in one batch. reindex sets it; the daemon does not: its rescans write few
// outputs, and a syncfs of a busy filesystem could hold back its appends.
func (ix *Indexer) BatchFullPasses() {
	ix.mu.Lock()
	ix.batchPasses = true
	ix.mu.Unlock()
}

// batchSyncfsMin is the batch size from which whole filesystems are synced rather
// than each file and directory: syncfs writes back every dirty page of the
// filesystem, other programs' too, which only pays when the batch is large.
const batchSyncfsMin = 64

// staged is an output written to its temp file, waiting for its rename.
type staged struct {
	tmp string
	res writeResult
}

// writeTemp writes data to a new temp file beside path (mode 0600, missing
// parents created 0700), closed but not synced; it returns the temp's path.
func writeTemp(path string, data []byte) (string, error) {
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", fmt.Errorf("create dir %s: %w", dir, err)
	}
	f, err := os.CreateTemp(dir, TempPrefix+filepath.Base(path)+"-*")
	if err != nil {
		return "", fmt.Errorf("write %s: %w", path, err)
	}
	tmp := f.Name()
	err = f.Chmod(0o600)
	if err == nil {
		_, err = f.Write(data)
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(tmp)
		return "", fmt.Errorf("write %s: %w", path, err)
	}
	return tmp, nil
}

// batchBeforeRename runs between the batch's data sync and its renames; tests
// make it fail to stand for a crash at that moment.
var batchBeforeRename = func() error { return nil }

// commitBatch makes the staged temp files durable, renames them into place and
// makes the renames durable. It returns every output's result: a file whose
// data could not be made durable is not renamed (its temp is removed) and fails.
func commitBatch(batch []staged) []writeResult {
	out := make([]writeResult, 0, len(batch))
	if len(batch) == 0 {
		return out
	}
	dirs := map[string]bool{}
	for _, s := range batch {
		dirs[filepath.Dir(s.tmp)] = true
	}
	fail := func(s staged, err error) {
		os.Remove(s.tmp)
		s.res.err = err
		out = append(out, s.res)
	}
	many := len(batch) >= batchSyncfsMin && haveSyncfs
	// Data first: nothing is renamed over an old output before it is durable.
	var err error
	if many {
		err = syncFilesystems(dirs)
	} else {
		err = syncFiles(batch)
	}
	if err == nil {
		err = batchBeforeRename()
	}
	if err != nil {
		for _, s := range batch {
			fail(s, fmt.Errorf("sync %s: %w", s.res.path, err))
		}
		return out
	}
	renameErrs := renameAll(batch)
	renamed := batch[:0:0]
	for i, s := range batch {
		if err := renameErrs[i]; err != nil {
			fail(s, fmt.Errorf("rename %s: %w", s.res.path, err))
			continue
		}
		renamed = append(renamed, s)
	}
	// Then the renames. A directory that cannot be synced fails its outputs, as
	// WriteFileAtomic's would: they are in place but not known durable.
	dirErr := map[string]error{}
	if many {
		if err := syncFilesystems(dirs); err != nil {
			for d := range dirs {
				dirErr[d] = err
			}
		}
	} else {
		for d := range dirs {
			if err := SyncDir(d); err != nil {
				dirErr[d] = err
			}
		}
	}
	for _, s := range renamed {
		if err := dirErr[filepath.Dir(s.tmp)]; err != nil {
			s.res.err = fmt.Errorf("sync dir of %s: %w", s.res.path, err)
		}
		out = append(out, s.res)
	}
	return out
}

// renameParallel is how many goroutines rename a large batch's files into
// place (0: GOMAXPROCS, at most 4). A var: tests set it.
var renameParallel = 0

// renameAll renames each staged temp file over its output and returns each
// rename's error, by position. A large batch (a cold build's thousands of
// outputs) is renamed by a few goroutines at once, each a run of the batch in
// order: the renames of one batch are independent (each is atomic, and a crash
// amid them leaves some outputs old and some new, whatever their order), and
// on one goroutine they were a serial stretch of every flush.
func renameAll(batch []staged) []error {
	errs := make([]error, len(batch))
	n := renameParallel
	if n <= 0 {
		n = min(runtime.GOMAXPROCS(0), 4)
	}
	if len(batch) < batchSyncfsMin {
		n = 1
	}
	rename := func(from, to int) {
		for i := from; i < to; i++ {
			errs[i] = os.Rename(batch[i].tmp, batch[i].res.path)
		}
	}
	if n <= 1 {
		rename(0, len(batch))
		return errs
	}
	var wg sync.WaitGroup
	for k := range n {
		wg.Go(func() { rename(k*len(batch)/n, (k+1)*len(batch)/n) })
	}
	wg.Wait()
	return errs
}

// syncFiles fsyncs each staged temp file, a few at once.
func syncFiles(batch []staged) error {
	errs := make([]error, len(batch))
	sem := make(chan struct{}, commitParallel)
	var wg sync.WaitGroup
	for i, s := range batch {
		sem <- struct{}{}
		wg.Add(1)
		go func() {
			defer func() { <-sem; wg.Done() }()
			errs[i] = fsyncPath(s.tmp)
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
}

func fsyncPath(path string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	err = f.Sync()
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// syncFilesystems makes everything written under dirs durable: one syncfs(2) per
// filesystem they are on.
func syncFilesystems(dirs map[string]bool) error {
	sorted := make([]string, 0, len(dirs))
	for d := range dirs {
		sorted = append(sorted, d)
	}
	sort.Strings(sorted)
	seen := map[uint64]bool{}
	var errs []error
	for _, d := range sorted {
		fi, err := os.Stat(d)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		dev, _ := statIdentity(fi)
		if seen[dev] {
			continue
		}
		seen[dev] = true
		if err := syncfsDir(d); err != nil {
			errs = append(errs, fmt.Errorf("syncfs %s: %w", d, err))
		}
	}
	return errors.Join(errs...)
}
