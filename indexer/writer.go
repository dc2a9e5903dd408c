package indexer

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// WriterLockName is the state directory's single-writer lock (SPEC §6 Writers):
// whoever writes catalogs or native indexes holds an exclusive flock on it — the
// daemon around each flush, a command that rewrites catalogs (reindex, clean,
// delete, restore, list/show without a daemon) for its whole run.
const WriterLockName = "writer.lock"

// The writer lock file also holds the generation stamps, one line "<key> <n>"
// each: a source's counter is bumped by an indexer that wrote its catalogs, and
// "*" by a command releasing a Writer it held for its whole run. A writer that
// finds a stamp it cares about changed since it last looked reloads its state
// from disk before writing, so the newest truth on disk is never overwritten by
// older memory. The stamps are hints kept without fsync: after a crash every
// process starts from disk anyway.
const allSources = "*"

// writerPoll is how often a blocked writer retries the flock.
const writerPoll = 20 * time.Millisecond

// WriterLock is the writer flock of one state directory. flock(2) locks belong
// to an open file, so the goroutines of one process are serialized by a mutex
// first; the lock is not reentrant.
type WriterLock struct {
	stateDir string
	mu       sync.Mutex
	f        *os.File
}

// NewWriterLock returns the writer lock of stateDir (nothing is opened yet).
func NewWriterLock(stateDir string) *WriterLock { return &WriterLock{stateDir: stateDir} }

// Lock waits until this process holds the writer lock, or ctx ends.
func (w *WriterLock) Lock(ctx context.Context) error {
	w.mu.Lock()
	if err := os.MkdirAll(w.stateDir, 0o700); err != nil {
		w.mu.Unlock()
		return fmt.Errorf("create state dir: %w", err)
	}
	path := filepath.Join(w.stateDir, WriterLockName)
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		w.mu.Unlock()
		return fmt.Errorf("open %s: %w", path, err)
	}
	for {
		err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		if err == nil {
			break
		}
		if !errors.Is(err, syscall.EWOULDBLOCK) {
			f.Close()
			w.mu.Unlock()
			return fmt.Errorf("lock %s: %w", path, err)
		}
		select {
		case <-ctx.Done():
			f.Close()
			w.mu.Unlock()
			return fmt.Errorf("wait for the writer lock %s: %w", path, ctx.Err())
		case <-time.After(writerPoll):
		}
	}
	w.f = f
	return nil
}

// Unlock releases the lock taken by Lock.
func (w *WriterLock) Unlock() {
	w.f.Close() // closing the only descriptor releases the flock
	w.f = nil
	w.mu.Unlock()
}

// WriterHeld reports whether some process holds the writer lock of stateDir. It
// opens nothing for writing and creates nothing.
func WriterHeld(stateDir string) bool {
	f, err := os.Open(filepath.Join(stateDir, WriterLockName))
	if err != nil {
		return false
	}
	defer f.Close()
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_SH|syscall.LOCK_NB); err != nil {
		return errors.Is(err, syscall.EWOULDBLOCK)
	}
	syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
	return false
}

// generations reads the stamps from the held lock file.
func (w *WriterLock) generations() map[string]uint64 {
	gens := map[string]uint64{}
	buf := make([]byte, 64<<10)
	n, _ := w.f.ReadAt(buf, 0)
	for _, line := range strings.Split(string(buf[:n]), "\n") {
		k, v, ok := strings.Cut(line, " ")
		if n, err := strconv.ParseUint(v, 10, 64); ok && err == nil {
			gens[k] = n
		}
	}
	return gens
}

// bump advances the stamp of key; the caller holds the lock.
func (w *WriterLock) bump(key string) (uint64, error) {
	gens := w.generations()
	gens[key]++
	keys := make([]string, 0, len(gens))
	for k := range gens {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var b strings.Builder
	for _, k := range keys {
		fmt.Fprintf(&b, "%s %d\n", k, gens[k])
	}
	if err := w.f.Truncate(0); err != nil {
		return 0, err
	}
	_, err := w.f.WriteAt([]byte(b.String()), 0)
	return gens[key], err
}

// stamp is what an indexer remembers of the generations: its source's and "*".
type stamp struct{ all, source uint64 }

// Writer is a command's hold on the writer lock for its whole run.
type Writer struct {
	lock *WriterLock
}

// AcquireWriter waits (until ctx ends) for the writer lock of stateDir and holds
// it until Release. A daemon's flushes wait meanwhile; a daemon's in-flight temp
// files are never touched by the holder's indexers unless they were built with
// CleanTemps.
func AcquireWriter(ctx context.Context, stateDir string) (*Writer, error) {
	l := NewWriterLock(stateDir)
	if err := l.Lock(ctx); err != nil {
		return nil, err
	}
	return &Writer{lock: l}, nil
}

// Release bumps the generation stamp (so a running daemon reloads what this
// command wrote before it writes again) and releases the lock. It is safe to
// call more than once.
func (w *Writer) Release() error {
	if w == nil || w.lock == nil {
		return nil
	}
	_, err := w.lock.bump(allSources)
	w.lock.Unlock()
	w.lock = nil
	if err != nil {
		return fmt.Errorf("release writer lock: %w", err)
	}
	return nil
}

// beginWriteLocked takes the indexer's writer lock (a daemon's indexers have
// one; a command's are covered by its Writer) and, when another process wrote
// since this indexer last looked, reloads its state from disk first.
func (ix *Indexer) beginWriteLocked() (end func(), err error) {
	ix.lastParked = parkedRead{} // another writer may have written since
	if ix.lite {
		return nil, ErrLite
	}
	ix.proof = nil // a pass that may change the units: Start lists afresh
	w := ix.opt.Writer
	if w == nil {
		ix.dropResumeCacheLocked()
		return func() {}, nil
	}
	if err := w.Lock(context.Background()); err != nil {
		return nil, err
	}
	endHeld := ix.beginHeldLocked()
	return func() {
		endHeld()
		w.Unlock()
	}, nil
}

// beginHeldLocked is beginWriteLocked for a caller that holds the indexer's
// writer lock already (Group.StartAll takes it once for every source): the
// reload when another process wrote since, and an end that bumps the source's
// stamp if the pass wrote.
func (ix *Indexer) beginHeldLocked() (end func()) {
	ix.dropResumeCacheLocked()
	w := ix.opt.Writer
	if w == nil {
		return func() {}
	}
	gens := w.generations()
	now := stamp{all: gens[allSources], source: gens[ix.opt.Source]}
	if ix.genKnown && now != ix.gen {
		ix.log.Info("catalogs rewritten by another process, reloading")
		before := ix.unitRefsLocked()
		ix.resetLocked()
		if err := ix.loadLocked(); err != nil {
			ix.log.Warn("reload catalogs", "err", err)
		}
		if err := ix.reconcileLocked(); err != nil {
			ix.log.Warn("reconcile after reload", "err", err)
		}
		if err := ix.removeGoneFromConsumersLocked(before); err != nil {
			ix.log.Warn("sync consumers after reload", "err", err)
		}
	}
	ix.gen, ix.genKnown = now, true
	writes := ix.stats.CatalogWrites + ix.stats.NativeWrites
	return func() {
		if ix.stats.CatalogWrites+ix.stats.NativeWrites != writes {
			if n, err := w.bump(ix.opt.Source); err == nil {
				ix.gen.source = n
			}
		}
	}
}

// resetLocked forgets everything the indexer knows (before a reload from disk).
func (ix *Indexer) resetLocked() {
	ix.pendingErr = errors.Join(ix.pendingErr, ix.drainLocked())
	ix.forgetKeysLocked()
	ix.units.clear()
	ix.outputs.clear()
	clear(ix.baseKeys)
	clear(ix.keys)
	clear(ix.owners)
	clear(ix.rereads)
	clear(ix.dirtyDirs)
	clear(ix.dirtyProjects)
	ix.failed = nil
	ix.proof = nil
}

// cleanTempsLocked removes sessionwatch temp files in the catalog directories
// that are provably abandoned: the indexer holds the writer lock (every catalog
// writer does while it writes) and the file predates this process.
func (ix *Indexer) cleanCatalogTempsLocked() {
	if !ix.opt.CleanTemps || ix.opt.Check {
		return
	}
	dir := CatalogDir(ix.opt.StateDir, ix.opt.Source)
	entries, err := os.ReadDir(dir)
	if err != nil {
		return
	}
	for _, e := range entries {
		if e.IsDir() {
			cleanTempBefore(filepath.Join(dir, e.Name()), processStart)
		}
	}
	cleanTempBefore(dir, processStart)
}

// cleanTempBefore removes the sessionwatch temp files in dir (not recursive)
// last modified before t.
func cleanTempBefore(dir string, t time.Time) {
	matches, _ := filepath.Glob(filepath.Join(dir, TempPrefix+"*"))
	for _, m := range matches {
		if fi, err := os.Lstat(m); err == nil && fi.Mode().IsRegular() && fi.ModTime().Before(t) {
			os.Remove(m)
		}
	}
}
