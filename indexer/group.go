package indexer

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"time"

	"github.com/sessionwatch/sessionwatch/config"
	"github.com/sessionwatch/sessionwatch/watcher"
)

// Group is the set of indexers of every enabled source, fed by one watcher.
type Group struct {
	cfg      *config.Config
	log      *slog.Logger
	indexers []*Indexer
}

// NewGroup builds an indexer per enabled source of cfg (nothing is read yet). With
// check set, the indexers write nothing and record differences instead.
func NewGroup(cfg *config.Config, logger *slog.Logger, check bool) (*Group, error) {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	g := &Group{cfg: cfg, log: logger}
	for _, src := range cfg.Sources {
		if !src.Enabled {
			continue
		}
		if _, err := LookupLayout(src.Layout); err != nil {
			// Configs name every layout by default; one this build cannot read yet is
			// left alone rather than stopping the others.
			logger.Warn("layout not supported by this build, source skipped", "source", src.Name, "layout", src.Layout)
			continue
		}
		l, _ := LookupLayout(src.Layout)
		fr, isFile := l.(fileRoot)
		root, found := config.ResolveRoot(src.Root, isFile && fr.RootIsFile())
		ix, err := New(Options{
			Source:      src.Name,
			Layout:      src.Layout,
			Root:        root,
			StateDir:    cfg.StateDir,
			NativeIndex: src.NativeIndex,
			Logger:      logger,
			Check:       check,
		})
		if err != nil {
			return nil, err
		}
		ix.configuredRoot, ix.rootPending = filepath.Clean(src.Root), !found
		g.indexers = append(g.indexers, ix)
	}
	return g, nil
}

// UseWriterLock makes every indexer of the group take w around each pass that
// may write (SPEC §6 Writers), reloading from disk first when another process
// wrote since. cleanTemps (the daemon only) also lets them remove temp files
// that crashed writers left. Call it before Load.
func (g *Group) UseWriterLock(w *WriterLock, cleanTemps bool) {
	for _, ix := range g.indexers {
		ix.opt.Writer = w
		ix.opt.CleanTemps = cleanTemps
	}
}

// RootsMoved reports whether a root that did not exist when the group was built
// now exists under another real path (it appeared as a symlink): the group must
// be rebuilt so that walk, watch and janitor all use the real directory.
func (g *Group) RootsMoved() bool {
	for _, ix := range g.indexers {
		if !ix.rootPending {
			continue
		}
		if r, ok := config.ResolveRoot(ix.configuredRoot, ix.rootRel != ""); ok && r != ix.opt.Root {
			return true
		}
	}
	return false
}

// Retry retries the failed writes of every indexer whose backoff has passed.
func (g *Group) Retry(now time.Time) error {
	var errs []error
	for _, ix := range g.indexers {
		if err := ix.Retry(now); err != nil {
			errs = append(errs, fmt.Errorf("source %s: %w", ix.opt.Source, err))
		}
	}
	return errors.Join(errs...)
}

// Indexers returns the group's indexers in config order.
func (g *Group) Indexers() []*Indexer { return g.indexers }

// Indexer returns the indexer of the named source, or nil.
func (g *Group) Indexer(source string) *Indexer {
	for _, ix := range g.indexers {
		if ix.opt.Source == source {
			return ix
		}
	}
	return nil
}

// Load restores every indexer from its catalogs.
func (g *Group) Load() error {
	var errs []error
	for _, ix := range g.indexers {
		if err := ix.Load(); err != nil {
			errs = append(errs, fmt.Errorf("source %s: %w", ix.opt.Source, err))
		}
	}
	return errors.Join(errs...)
}

// ReconcileAll reconciles every source.
func (g *Group) ReconcileAll() error {
	var errs []error
	for _, ix := range g.indexers {
		if err := ix.Reconcile(); err != nil {
			errs = append(errs, fmt.Errorf("source %s: %w", ix.opt.Source, err))
		}
	}
	return errors.Join(errs...)
}

// StartAll runs every indexer's Start (the daemon's first pass after Load),
// the sources' walks at once: on a goroutine per core, each walk under its own
// indexer's lock, with the writer lock taken once for all of them. A walk only
// reads and hands what changed to the consumers (each unit's calls in order,
// from the one goroutine that walks its source; a consumer attached to several
// sources locks itself, as the Consumer contract asks); the flushes, which
// sync the consumers and write, run one source after another once every walk
// is done, so no consumer syncs while another source's unit is half handed
// over. A source with no catalog loaded (a first start, read on prefetch
// workers that use every core) walks alone, after the others.
func (g *Group) StartAll() error {
	ixs := g.indexers
	if len(ixs) == 0 {
		return nil
	}
	w := ixs[0].opt.Writer
	for _, ix := range ixs[1:] {
		if ix.opt.Writer != w {
			return g.startEach() // not one writer lock: one Start after another
		}
	}
	// The indexers' locks first, then the writer lock: the order of ix.write.
	for _, ix := range ixs {
		ix.mu.Lock()
		defer ix.mu.Unlock()
	}
	if w != nil {
		if err := w.Lock(context.Background()); err != nil {
			return err
		}
		defer w.Unlock()
	}
	errs := make([]error, len(ixs))
	ends := make([]func(), len(ixs))
	for i, ix := range ixs {
		if ix.lite {
			errs[i] = ErrLite
			continue
		}
		ends[i] = ix.beginHeldLocked()
	}
	var warm, cold []*Indexer
	at := make(map[*Indexer]int, len(ixs))
	for i, ix := range ixs {
		at[ix] = i
		switch {
		case ends[i] == nil:
		case ix.units.len() == 0:
			cold = append(cold, ix)
		default:
			warm = append(warm, ix)
		}
	}
	walk := func(ix *Indexer) { errs[at[ix]] = ix.startWalkLocked() }
	atOnce(warm, runtime.GOMAXPROCS(0), walk)
	for _, ix := range cold {
		walk(ix)
	}
	var all []error
	for i, ix := range ixs {
		if ends[i] != nil {
			errs[i] = ix.startFlushLocked(errs[i])
			ends[i]()
		}
		if errs[i] != nil {
			all = append(all, fmt.Errorf("source %s: %w", ix.opt.Source, errs[i]))
		}
	}
	return errors.Join(all...)
}

// ProveAll lists every source for the daemon's Start ahead of it
// (Indexer.Prove): after Load, with the watches in place, while the consumers
// still open. The sources are listed on all cores but one, which is left to
// the opening of the consumers (a usage ledger opens on one goroutine, and
// the first pass waits for it).
func (g *Group) ProveAll() {
	atOnce(g.indexers, runtime.GOMAXPROCS(0)-1, (*Indexer).Prove)
}

// atOnce runs fn on every indexer, on up to workers goroutines (at least one).
func atOnce(ixs []*Indexer, workers int, fn func(*Indexer)) {
	workers = max(1, min(workers, len(ixs)))
	next := make(chan *Indexer)
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for ix := range next {
				fn(ix)
			}
		})
	}
	for _, ix := range ixs {
		next <- ix
	}
	close(next)
	wg.Wait()
}

// startEach runs every indexer's Start, one after another.
func (g *Group) startEach() error {
	var errs []error
	for _, ix := range g.indexers {
		if err := ix.Start(); err != nil {
			errs = append(errs, fmt.Errorf("source %s: %w", ix.opt.Source, err))
		}
	}
	return errors.Join(errs...)
}

// WatchRoots describes what the watcher must watch for this group.
func (g *Group) WatchRoots() []watcher.Root {
	var roots []watcher.Root
	for _, ix := range g.indexers {
		ix := ix
		r := watcher.Root{Path: ix.opt.Root, IsFile: ix.rootRel != ""}
		if !r.IsFile {
			r.SkipDir = func(dir string) bool {
				rel, ok := ix.relOf(dir)
				return ok && rel != "." && ix.layout.SkipDir(rel)
			}
		}
		roots = append(roots, r)
	}
	return roots
}

// Ignore reports whether a path is one of sessionwatch's own files that events can
// be dropped for: temp files and anything under the state or archive directory.
func (g *Group) Ignore(path string) bool {
	if strings.HasPrefix(filepath.Base(path), TempPrefix) {
		return true
	}
	for _, d := range []string{g.cfg.StateDir, g.cfg.ArchiveDir} {
		if d != "" && (path == d || strings.HasPrefix(path, d+string(filepath.Separator))) {
			return true
		}
	}
	return false
}

// Apply hands one watcher batch to the indexers it concerns.
func (g *Group) Apply(b watcher.Batch) error {
	var errs []error
	for _, ix := range g.indexers {
		rescan := false
		for _, r := range b.Rescan {
			if filepath.Clean(r) == ix.opt.Root {
				rescan = true
			}
		}
		if rescan {
			reconcile := ix.Reconcile
			if b.Reason == watcher.ReasonPeriodic {
				reconcile = ix.Verify
			}
			if err := reconcile(); err != nil {
				errs = append(errs, fmt.Errorf("source %s: %w", ix.opt.Source, err))
			}
			continue
		}
		var mine []string
		for _, p := range b.Paths {
			if _, ok := ix.relOf(p); ok {
				mine = append(mine, p)
			}
		}
		if len(mine) == 0 {
			continue
		}
		if err := ix.Update(mine); err != nil {
			errs = append(errs, fmt.Errorf("source %s: %w", ix.opt.Source, err))
		}
	}
	return errors.Join(errs...)
}
