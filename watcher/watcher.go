// Package watcher turns fsnotify events on the agents' session trees into debounced
// batches of changed paths.
//
// fsnotify is a hint stream, not the truth: inotify is not recursive, drops events when
// its queue overflows, and cannot watch a directory before it exists. The watcher
// therefore promises only that nothing is missed, never that nothing is repeated. It
// watches directories (never files), adds a watch to every new directory and then walks
// it, reports the new directory so the consumer scans it, and asks the consumer to
// reconcile a whole root (a Batch with Rescan set) whenever events may have been lost:
// on queue overflow, on a watch error, when a root appears or vanishes, periodically,
// and while the kernel's watch limit leaves directories unwatched.
//
// The consumer (the indexer) re-stats every path it is handed and rescans directories
// recursively, so duplicates cost a stat but misses cost a stale index.
package watcher

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"github.com/fsnotify/fsnotify"
)

// Defaults for Options. Settle and MaxSettle treat zero as a setting of its own, so
// callers that want the defaults pass these constants.
const (
	// DefaultSettle is how long a path must be quiet before it is flushed.
	DefaultSettle = 50 * time.Millisecond
	// DefaultMaxSettle bounds how long a continuously changing path waits.
	DefaultMaxSettle = time.Second
	// DefaultFallbackInterval is the rescan cadence for roots with directories that
	// could not be watched because of kernel limits.
	DefaultFallbackInterval = time.Minute
)

// Reasons carried by rescan batches.
const (
	ReasonOverflow     = "overflow"      // fsnotify.ErrEventOverflow, or too many queued changes
	ReasonWatchError   = "watch-error"   // any other error from fsnotify
	ReasonPeriodic     = "periodic"      // Options.RescanInterval elapsed
	ReasonRootAppeared = "root-appeared" // a missing root now exists and is watched
	ReasonRootRemoved  = "root-removed"  // a watched root was removed or replaced
	ReasonWatchLimit   = "watch-limit"   // some directories of the root are not watched
	ReasonRequested    = "requested"     // Watcher.Rescan called with an empty reason
)

// Root is one tree to watch.
type Root struct {
	// Path is the absolute path of the tree's top directory, or of the file when
	// IsFile is set. It need not exist yet.
	Path string
	// IsFile marks a root that is a single file (e.g. ~/.config/hyperyolo/sessions.json):
	// only its parent directory is watched, non-recursively, and only events on the file
	// and on siblings whose name starts with the file's base name (e.g.
	// "sessions.json.lock") are reported.
	IsFile bool
	// SkipDir reports whether a directory below Path (an absolute path) should not be
	// watched, e.g. Wave's memory/ directories. Events on the directory entry itself are
	// still reported by its parent's watch. nil watches everything.
	SkipDir func(dir string) bool
}

// Batch is one flush of coalesced changes. A batch carries either Paths or Rescan.
type Batch struct {
	// Paths are the absolute paths (files or directories) that changed, deduplicated and
	// sorted. A path may no longer exist; a directory path means "scan this directory
	// recursively".
	Paths []string
	// Rescan lists the roots (Root.Path) that must be fully reconciled, sorted.
	Rescan []string
	// Reason says why Rescan is set: one of the Reason constants, or the reason given
	// to Watcher.Rescan.
	Reason string
}

// Options tune a Watcher. The zero value flushes every change at once, never rescans
// periodically and falls back to DefaultFallbackInterval.
type Options struct {
	// Settle is how long after the last event on a path the path is flushed. 0 flushes
	// as soon as the events already queued have been read. Callers normally pass
	// DefaultSettle.
	Settle time.Duration
	// MaxSettle bounds the wait of a path whose events never stop: it is flushed at
	// least this long after its first unflushed event. 0 means no bound. Callers
	// normally pass DefaultMaxSettle.
	MaxSettle time.Duration
	// RescanInterval asks for a full rescan of every root this often. 0 means never.
	RescanInterval time.Duration
	// FallbackInterval is the rescan cadence for roots with directories that could not
	// be watched (inotify watch or instance limits). 0 means DefaultFallbackInterval.
	FallbackInterval time.Duration
	// Ignore drops events on the paths it returns true for, and directories it returns
	// true for are not watched (sessionwatch's own temp files and state directory).
	// nil ignores nothing.
	Ignore func(path string) bool
	// MaxWatches is a test seam: the watcher behaves as if the kernel refused watches
	// beyond this many (ENOSPC). 0 means no artificial limit.
	MaxWatches int
}

// Stats is a snapshot of a Watcher's counters.
type Stats struct {
	// Watches is the number of directories currently watched, including the nearest
	// existing ancestors watched while roots are missing.
	Watches int
	// RootWatches is the number of directories watched for each root (by Root.Path):
	// its tree, or the parent directory of a file root.
	RootWatches map[string]int
	// Unwatched is the number of directories that could not be watched because of
	// kernel limits; their roots are rescanned every FallbackInterval.
	Unwatched int
	// Rescans is the number of rescan batches emitted (queued for the consumer).
	Rescans int
	// RescanReasons counts rescan batches by reason.
	RescanReasons map[string]int
	// LastRescanReason is the reason of the latest rescan batch, "" if none.
	LastRescanReason string
	// WatchError is the latest watch error, "" if none. While directories are unwatched
	// because of a limit it explains which kernel limit to raise; it is cleared when
	// every directory is watched again.
	WatchError string
}

// Watcher watches a set of roots and delivers Batches. Create it with New and start
// it with Run.
type Watcher struct {
	roots []Root
	opts  Options
	log   *slog.Logger

	batches chan Batch
	kick    chan struct{}                     // wakes the loop for requests and injected errors
	ready   chan struct{}                     // closed once Run has added the initial watches
	newFS   func() (*fsnotify.Watcher, error) // test seam for inotify_init failures
	started atomic.Bool

	mu       sync.Mutex
	stats    Stats
	requests []string // pending Rescan reasons
	injected []error  // test seam: errors delivered as if from fsnotify's Errors channel
}

// New checks roots and opts and returns a Watcher. It starts nothing: no watch exists
// until Run is called. A nil logger discards logs.
func New(roots []Root, opts Options, logger *slog.Logger) (*Watcher, error) {
	var errs []error
	rs := make([]Root, len(roots))
	for i, r := range roots {
		if !filepath.IsAbs(r.Path) {
			errs = append(errs, fmt.Errorf("roots[%d].path: must be absolute (got %q)", i, r.Path))
		}
		r.Path = filepath.Clean(r.Path)
		rs[i] = r
	}
	for _, d := range []struct {
		name string
		v    time.Duration
	}{
		{"settle", opts.Settle},
		{"max_settle", opts.MaxSettle},
		{"rescan_interval", opts.RescanInterval},
		{"fallback_interval", opts.FallbackInterval},
	} {
		if d.v < 0 {
			errs = append(errs, fmt.Errorf("%s: must not be negative (got %s)", d.name, d.v))
		}
	}
	if opts.MaxWatches < 0 {
		errs = append(errs, fmt.Errorf("max_watches: must not be negative (got %d)", opts.MaxWatches))
	}
	if err := errors.Join(errs...); err != nil {
		return nil, fmt.Errorf("new watcher: %w", err)
	}
	if opts.FallbackInterval == 0 {
		opts.FallbackInterval = DefaultFallbackInterval
	}
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	return &Watcher{
		roots:   rs,
		opts:    opts,
		log:     logger.With("component", "watcher"),
		batches: make(chan Batch),
		kick:    make(chan struct{}, 1),
		ready:   make(chan struct{}),
		stats:   Stats{RescanReasons: map[string]int{}},
		newFS:   func() (*fsnotify.Watcher, error) { return fsnotify.NewBufferedWatcher(eventBuffer) },
	}, nil
}

// Ready is closed once Run has added the initial watches: a consumer that scans
// the roots after Ready misses nothing written meanwhile (events for it are queued).
func (w *Watcher) Ready() <-chan struct{} { return w.ready }

// Batches returns the channel on which Run delivers batches. It is closed when Run
// returns.
func (w *Watcher) Batches() <-chan Batch { return w.batches }

// Stats returns a snapshot of the counters. It is safe to call from any goroutine.
func (w *Watcher) Stats() Stats {
	w.mu.Lock()
	defer w.mu.Unlock()
	s := w.stats
	s.RescanReasons = maps.Clone(w.stats.RescanReasons)
	s.RootWatches = maps.Clone(w.stats.RootWatches)
	return s
}

// Rescan asks for a rescan batch of every root with the given reason (ReasonRequested
// if empty). It never blocks and is safe to call from any goroutine; a request made
// before Run starts is served when it does, one made after Run returned is dropped.
func (w *Watcher) Rescan(reason string) {
	if reason == "" {
		reason = ReasonRequested
	}
	w.mu.Lock()
	w.requests = append(w.requests, reason)
	w.mu.Unlock()
	w.wake()
}

// injectError hands err to the event loop as if it came from fsnotify's Errors
// channel. It is a test seam for errors a test cannot provoke, such as queue overflow.
func (w *Watcher) injectError(err error) {
	w.mu.Lock()
	w.injected = append(w.injected, err)
	w.mu.Unlock()
	w.wake()
}

func (w *Watcher) wake() {
	select {
	case w.kick <- struct{}{}:
	default: // a wake-up is already pending; the loop takes every request at once
	}
}

// takeRequests returns and clears the pending requests and injected errors.
func (w *Watcher) takeRequests() (reasons []string, errs []error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	reasons, errs = w.requests, w.injected
	w.requests, w.injected = nil, nil
	return reasons, errs
}

func (w *Watcher) updateStats(f func(*Stats)) {
	w.mu.Lock()
	f(&w.stats)
	w.mu.Unlock()
}

// Run adds watches for every existing root, then delivers batches until ctx is
// cancelled. It blocks, closes Batches when it returns, and returns nil on
// cancellation. It may be called once.
func (w *Watcher) Run(ctx context.Context) error {
	if !w.started.CompareAndSwap(false, true) {
		return errors.New("run watcher: already started")
	}
	defer close(w.batches)
	l := newLoop(w)
	defer l.close()
	if err := l.start(ctx); err != nil {
		return err
	}
	close(w.ready)
	return l.run(ctx)
}
