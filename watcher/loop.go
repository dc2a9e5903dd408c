package watcher

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/fsnotify/fsnotify"
)

const (
	// eventBuffer sizes fsnotify's Events channel. inotify's own channel is unbuffered,
	// so without it any pause of the loop backs up straight into the kernel queue.
	eventBuffer = 4096
	// drainMax bounds how many already-queued events are read before a flush.
	drainMax = eventBuffer
	// maxQueuedPaths bounds the changed paths held for a consumer that does not keep
	// up; past it they are replaced by one overflow rescan of every root.
	maxQueuedPaths = 1 << 16
	// warnEvery rate-limits repeated warnings of the same kind.
	warnEvery = time.Minute
)

// rootState is the loop's view of one Root.
type rootState struct {
	Root
	top       string // directory to watch: Path, or Path's parent for a file root
	base      string // file root: base name that reported siblings start with
	recursive bool

	present bool        // top exists as a directory and its watches were set up
	info    os.FileInfo // top when it was set up, to notice it being replaced

	// Missing root: the nearest existing ancestor, watched non-recursively.
	anchor       string
	anchorFailed bool // a kernel limit refused the anchor's watch

	dirs      map[string]struct{} // watched directories of this root
	unwatched map[string]struct{} // directories refused by kernel limits
}

func (r *rootState) limited() bool { return len(r.unwatched) > 0 || r.anchorFailed }

type pending struct{ first, last time.Time }

// queued is a batch waiting for the consumer. Later changes merge into it, so a slow
// consumer costs memory bounded by maxQueuedPaths and the number of reasons.
type queued struct {
	paths  map[string]struct{} // a paths batch when reason == ""
	reason string
	roots  map[string]struct{}
}

func (q *queued) batch() Batch {
	if q.reason == "" {
		return Batch{Paths: sortedKeys(q.paths)}
	}
	return Batch{Rescan: sortedKeys(q.roots), Reason: q.reason}
}

// loop is the state of Run's event loop. One goroutine, the one running Run, owns it
// and everything it points to except w's mutex-guarded fields; nothing here is
// touched from elsewhere, so it needs no locking.
type loop struct {
	w     *Watcher
	opts  Options
	log   *slog.Logger
	roots []*rootState

	fsw     *fsnotify.Watcher   // nil while inotify could not be initialised
	initErr error               // why fsw is nil
	kernel  map[string]struct{} // paths with an fsnotify watch, shared by all roots

	pending     map[string]pending // reported paths not yet flushed
	settle      *time.Timer        // fires at the earliest flush deadline, or earlier
	settleArmed bool
	settleAt    time.Time
	fallback    *time.Timer // fires every FallbackInterval while a limit is hit
	fallbackOn  bool
	queue       []*queued // batches waiting for the consumer
	head        *Batch    // queue[0] as sent, built lazily

	limitLogged  map[string]bool // limit kinds already explained in the log
	limitActive  bool            // directories are unwatched because of a limit
	lastWarn     map[string]time.Time
	suppressed   map[string]int
	pubWatches   int // counts last copied into Stats
	pubUnwatched int
}

func newLoop(w *Watcher) *loop {
	l := &loop{
		w:           w,
		opts:        w.opts,
		log:         w.log,
		kernel:      map[string]struct{}{},
		pending:     map[string]pending{},
		settle:      time.NewTimer(time.Hour),
		fallback:    time.NewTimer(time.Hour),
		limitLogged: map[string]bool{},
		lastWarn:    map[string]time.Time{},
		suppressed:  map[string]int{},
		pubWatches:  -1,
	}
	l.settle.Stop()
	l.fallback.Stop()
	for _, r := range w.roots {
		rs := &rootState{Root: r, top: r.Path, recursive: true}
		if r.IsFile {
			rs.top, rs.base, rs.recursive = filepath.Dir(r.Path), filepath.Base(r.Path), false
		}
		rs.dirs, rs.unwatched = map[string]struct{}{}, map[string]struct{}{}
		l.roots = append(l.roots, rs)
	}
	return l
}

func (l *loop) close() {
	l.settle.Stop()
	l.fallback.Stop()
	if l.fsw != nil {
		l.fsw.Close()
	}
}

// start opens inotify and adds the watches of every existing root. The consumer makes
// its own initial scan, so nothing is reported for them.
func (l *loop) start(ctx context.Context) error {
	if err := l.openInotify(); err != nil {
		return err
	}
	for i := range l.roots {
		if ctx.Err() != nil {
			return nil
		}
		l.establish(i)
	}
	l.log.Debug("watches added", "roots", len(l.roots), "watches", len(l.kernel))
	l.publish() // Stats are right before Run reports ready
	return nil
}

// openInotify creates the fsnotify watcher. Hitting the instance limit is not fatal:
// the loop keeps running on fallback rescans and retries.
func (l *loop) openInotify() error {
	fsw, err := l.w.newFS()
	if err != nil {
		if limitKind(err) == "" {
			return fmt.Errorf("start watcher: %w", err)
		}
		l.initErr = err
		return nil
	}
	l.fsw, l.initErr = fsw, nil
	return nil
}

// run is the event loop. It runs on Run's goroutine, the only one that touches l; other
// goroutines reach it through w.kick and the mutex-guarded request lists. Its one
// select both drains fsnotify and sends to the consumer, so a slow consumer never
// stalls the kernel queue (batches merge while they wait) and every send also
// watches ctx.Done().
func (l *loop) run(ctx context.Context) error {
	var periodic <-chan time.Time
	if l.opts.RescanInterval > 0 {
		t := time.NewTicker(l.opts.RescanInterval)
		defer t.Stop()
		periodic = t.C
	}
	for {
		if l.head == nil && len(l.queue) > 0 {
			b := l.queue[0].batch()
			l.head = &b
		}
		var out chan<- Batch
		var next Batch
		if l.head != nil {
			out, next = l.w.batches, *l.head
		}
		l.publish()
		var events <-chan fsnotify.Event
		var errs <-chan error
		if l.fsw != nil {
			events, errs = l.fsw.Events, l.fsw.Errors
		}

		select {
		case <-ctx.Done():
			return nil
		case ev, ok := <-events:
			if !ok {
				return errors.New("run watcher: fsnotify closed its event channel")
			}
			l.handle(ev)
		case err, ok := <-errs:
			if !ok {
				return errors.New("run watcher: fsnotify closed its error channel")
			}
			l.handleError(err)
		case <-l.w.kick:
			reasons, errs := l.w.takeRequests()
			for _, err := range errs {
				l.handleError(err)
			}
			if len(reasons) > 0 {
				l.recheckRoots()
			}
			for _, r := range reasons {
				l.queueRescan(r)
			}
		case <-l.settle.C:
			l.settleArmed = false
			l.drain()
			l.flush(time.Now())
		case <-periodic:
			l.recheckRoots()
			l.queueRescan(ReasonPeriodic)
		case <-l.fallback.C:
			l.fallbackOn = false
			l.retryLimited()
		case out <- next:
			l.queue = l.queue[1:]
			l.head = nil
		}
	}
}

// drain handles events fsnotify has already queued, so a flush does not cut a burst
// in half or emit a path whose next event is already waiting.
func (l *loop) drain() {
	if l.fsw == nil {
		return
	}
	for range drainMax {
		select {
		case ev, ok := <-l.fsw.Events:
			if !ok {
				return
			}
			l.handle(ev)
		case err, ok := <-l.fsw.Errors:
			if !ok {
				return
			}
			l.handleError(err)
		default:
			return
		}
	}
}

// publish copies the watch counts into the shared Stats when they changed.
func (l *loop) publish() {
	unwatched := 0
	for _, r := range l.roots {
		unwatched += len(r.unwatched)
		if r.anchorFailed {
			unwatched++
		}
	}
	if len(l.kernel) == l.pubWatches && unwatched == l.pubUnwatched {
		return
	}
	l.pubWatches, l.pubUnwatched = len(l.kernel), unwatched
	perRoot := make(map[string]int, len(l.roots))
	for dir := range l.kernel {
		for _, r := range l.roots {
			if dir == r.top || r.recursive && within(dir, r.top) {
				perRoot[r.Path]++
			}
		}
	}
	l.w.updateStats(func(s *Stats) {
		s.Watches, s.Unwatched, s.RootWatches = len(l.kernel), unwatched, perRoot
		if unwatched == 0 && l.limitActive {
			s.WatchError = ""
		}
	})
	if unwatched == 0 && l.limitActive {
		l.limitActive = false
		l.log.Info("all directories watched again", "watches", len(l.kernel))
	}
}

// ---- events ----

func (l *loop) handle(ev fsnotify.Event) {
	if ev.Op&^fsnotify.Chmod == 0 {
		return // Chmod alone: atime, permission and backup-tool noise
	}
	p := filepath.Clean(ev.Name)
	for i, r := range l.roots {
		if r.present {
			l.handleTree(i, p, ev.Op)
		} else {
			l.handleMissing(i, p, ev.Op)
		}
	}
}

// handleTree handles an event for a root that is set up.
func (l *loop) handleTree(i int, p string, op fsnotify.Op) {
	r := l.roots[i]
	gone := op.Has(fsnotify.Remove) || op.Has(fsnotify.Rename)
	if p == r.top {
		if gone {
			l.rootGone(i)
		} else if op.Has(fsnotify.Create) {
			l.verifyRoot(i) // created again under a watched parent: maybe a new inode
		}
		return
	}
	if !within(p, r.top) {
		return
	}
	if !r.recursive {
		if filepath.Dir(p) == r.top && strings.HasPrefix(filepath.Base(p), r.base) {
			l.report(p)
		}
		return
	}
	if gone {
		l.dropTree(i, p)
	}
	if op.Has(fsnotify.Create) {
		// Lstat: a symlink to a directory is reported but never followed.
		if fi, err := os.Lstat(p); err == nil && fi.IsDir() && !l.skip(r, p) {
			l.addTree(i, p)
		}
	}
	l.report(p)
}

// handleMissing handles an event for a root that does not exist yet: only the anchor
// itself going away, or the next path component towards the root appearing, matter.
func (l *loop) handleMissing(i int, p string, op fsnotify.Op) {
	r := l.roots[i]
	if r.anchor == "" {
		return
	}
	toward := filepath.Dir(p) == r.anchor && within(r.top, p)
	anchorGone := p == r.anchor && (op.Has(fsnotify.Remove) || op.Has(fsnotify.Rename))
	if (toward || anchorGone) && l.establish(i) {
		l.appeared(i)
	}
}

func (l *loop) handleError(err error) {
	if err == nil {
		return
	}
	if errors.Is(err, fsnotify.ErrEventOverflow) {
		l.warnLimited("overflow", "event queue overflowed; rescanning every root",
			"hint", "raise the kernel queue: sudo sysctl fs.inotify.max_queued_events=65536")
		l.rewatch()
		l.queueRescan(ReasonOverflow)
		return
	}
	l.w.updateStats(func(s *Stats) { s.WatchError = err.Error() })
	l.warnLimited("watch-error", "watch error; rescanning every root", "err", err)
	l.rewatch()
	l.queueRescan(ReasonWatchError)
}

// rewatch re-walks every root after events were lost: directories created (or
// deleted and re-created) meanwhile raised events nobody saw, so they have no watch
// yet and later writes inside them would go unnoticed. Adding a watch that exists
// is harmless.
func (l *loop) rewatch() {
	l.recheckRoots()
	for i, r := range l.roots {
		if r.present && r.recursive {
			l.addTree(i, r.top)
		}
	}
	l.publish()
}

// ---- roots ----

// establish sets up root i if it exists, or watches its nearest existing ancestor so
// its appearance is noticed. It reports whether the root is now set up.
func (l *loop) establish(i int) bool {
	r := l.roots[i]
	if r.present {
		return true
	}
	// A few rounds: the tree may change between looking and watching.
	for range 32 {
		fi, err := os.Stat(r.top)
		if err == nil && fi.IsDir() {
			l.setAnchor(i, "")
			r.present, r.info = true, fi
			if r.recursive {
				err = l.addTree(i, r.top)
			} else {
				err = l.addDir(i, r.top)
			}
			if errors.Is(err, fs.ErrNotExist) {
				l.forget(i)
				continue
			}
			return true
		}
		a := nearestDir(filepath.Dir(r.top))
		if err := l.setAnchor(i, a); errors.Is(err, fs.ErrNotExist) {
			continue
		}
		// Whatever appeared between the Stat and the anchor's watch raised no event.
		if nearestDir(filepath.Dir(r.top)) == a && !isDir(r.top) {
			return false
		}
	}
	return false
}

// setAnchor moves root i's anchor watch to dir ("" drops it).
func (l *loop) setAnchor(i int, dir string) error {
	r := l.roots[i]
	old := r.anchor
	r.anchor, r.anchorFailed = dir, false
	if old != "" && old != dir {
		l.unwatch(old)
	}
	if dir == "" {
		return nil
	}
	err := l.watch(dir)
	if err == nil {
		return nil
	}
	// Without the anchor's watch the root's appearance is polled: every
	// FallbackInterval after a limit, else at the periodic rescans.
	r.anchor = ""
	if kind := limitKind(err); kind != "" {
		r.anchorFailed = true
		l.noteLimit(kind, dir)
	} else if !errors.Is(err, fs.ErrNotExist) {
		l.warnLimited("watch", "cannot watch ancestor of missing root", "root", r.Path, "path", dir, "err", err)
	}
	return err
}

// rootGone forgets a root that was removed or replaced and starts waiting for it.
func (l *loop) rootGone(i int) {
	r := l.roots[i]
	l.log.Info("root removed", "root", r.Path)
	l.forget(i)
	l.queueRescan(ReasonRootRemoved, i)
	if l.establish(i) {
		l.appeared(i)
	}
}

// appeared asks for a rescan of root i, which was just set up after being missing:
// whatever it holds was created before its watches existed.
func (l *loop) appeared(i int) {
	l.log.Info("root appeared", "root", l.roots[i].Path, "watches", len(l.kernel))
	l.queueRescan(ReasonRootAppeared, i)
}

// forget drops every watch of root i.
func (l *loop) forget(i int) {
	r := l.roots[i]
	r.present, r.info = false, nil
	dirs := r.dirs
	r.dirs, r.unwatched = map[string]struct{}{}, map[string]struct{}{}
	for d := range dirs {
		l.unwatch(d)
	}
}

// verifyRoot checks that a set-up root is still the directory that was set up; a
// rename of one of its ancestors raises no event on the root's own watch. It reports
// whether the root is still set up.
func (l *loop) verifyRoot(i int) bool {
	r := l.roots[i]
	if !r.present {
		return false
	}
	fi, err := os.Stat(r.top)
	if err == nil && fi.IsDir() && os.SameFile(fi, r.info) {
		return true
	}
	l.rootGone(i)
	return false
}

// recheckRoots verifies set-up roots and polls missing ones, as a safety net for
// events that cannot be observed.
func (l *loop) recheckRoots() {
	for i, r := range l.roots {
		if r.present {
			l.verifyRoot(i)
		} else if l.establish(i) {
			l.appeared(i)
		}
	}
}

// ---- watches ----

// addTree watches dir and then every directory below it. Watching before reading
// means a subdirectory created meanwhile is either seen by the read or raises an
// event. It returns the error of watching dir itself, unless that was a limit.
func (l *loop) addTree(i int, dir string) error {
	r := l.roots[i]
	if err := l.addDir(i, dir); err != nil && limitKind(err) == "" {
		return err
	}
	f, err := os.Open(dir)
	if err != nil {
		return nil
	}
	entries, err := f.ReadDir(-1)
	f.Close()
	if err != nil {
		l.log.Debug("cannot read directory", "path", dir, "err", err)
	}
	for _, e := range entries {
		if !e.IsDir() { // symlinks are not directories here: never followed
			continue
		}
		sub := filepath.Join(dir, e.Name())
		if l.skip(r, sub) {
			continue
		}
		l.addTree(i, sub)
	}
	return nil
}

// addDir watches one directory of root i and records the outcome.
func (l *loop) addDir(i int, dir string) error {
	r := l.roots[i]
	err := l.watch(dir)
	if err == nil {
		r.dirs[dir] = struct{}{}
		delete(r.unwatched, dir)
		return nil
	}
	if kind := limitKind(err); kind != "" {
		r.unwatched[dir] = struct{}{}
		l.noteLimit(kind, dir)
		return err
	}
	if !errors.Is(err, fs.ErrNotExist) {
		l.warnLimited("watch", "cannot watch directory", "path", dir, "err", err)
	}
	return err
}

// dropTree forgets p and every directory below it in root i, after p was removed or
// renamed. The kernel drops a deleted directory's watch by itself, but a renamed
// directory keeps its watches under the old names, which must go before the new name
// is watched.
func (l *loop) dropTree(i int, p string) {
	r := l.roots[i]
	_, watched := r.dirs[p]
	_, refused := r.unwatched[p]
	if !watched && !refused {
		return
	}
	for d := range r.unwatched {
		if within(d, p) {
			delete(r.unwatched, d)
		}
	}
	for d := range r.dirs {
		if within(d, p) {
			delete(r.dirs, d)
			l.unwatch(d)
		}
	}
}

// watch adds an fsnotify watch on dir. It always calls Add, even for a path watched
// before: the directory may be a new one under the same name.
func (l *loop) watch(dir string) error {
	if l.fsw == nil {
		return l.initErr
	}
	if _, ok := l.kernel[dir]; !ok && l.opts.MaxWatches > 0 && len(l.kernel) >= l.opts.MaxWatches {
		return fmt.Errorf("add watch %s: %w", dir, errWatchLimit)
	}
	if err := l.fsw.Add(dir); err != nil {
		return fmt.Errorf("add watch %s: %w", dir, err)
	}
	l.kernel[dir] = struct{}{}
	return nil
}

// unwatch removes the watch on dir unless another root still uses it.
func (l *loop) unwatch(dir string) {
	for _, r := range l.roots {
		if _, ok := r.dirs[dir]; ok || r.anchor == dir {
			return
		}
	}
	if _, ok := l.kernel[dir]; !ok {
		return
	}
	delete(l.kernel, dir)
	if l.fsw != nil {
		// Fails harmlessly when the kernel already dropped the watch of a deleted dir.
		_ = l.fsw.Remove(dir)
	}
}

func (l *loop) skip(r *rootState, dir string) bool {
	return (r.SkipDir != nil && r.SkipDir(dir)) || l.ignored(dir)
}

func (l *loop) ignored(p string) bool { return l.opts.Ignore != nil && l.opts.Ignore(p) }

// ---- limits ----

// noteLimit records that a watch was refused by a kernel limit; the first time it
// explains the limit, and it starts the fallback rescans.
func (l *loop) noteLimit(kind, dir string) {
	limit, hint := limitAdvice(kind)
	if !l.limitActive {
		l.limitActive = true
		msg := fmt.Sprintf("%s reached: some directories are not watched and their roots are rescanned every %s; %s",
			limit, l.opts.FallbackInterval, hint)
		l.w.updateStats(func(s *Stats) { s.WatchError = msg })
	}
	if !l.limitLogged[kind] {
		l.limitLogged[kind] = true
		l.log.Warn("inotify limit reached; unwatched directories fall back to periodic rescans",
			"limit", limit, "path", dir, "watches", len(l.kernel),
			"fallback_interval", l.opts.FallbackInterval, "hint", hint)
	}
	if !l.fallbackOn {
		l.fallbackOn = true
		l.fallback.Reset(l.opts.FallbackInterval)
	}
}

// retryLimited runs every FallbackInterval while directories are unwatched: it tries
// to watch them again (limits may have been raised, directories removed) and asks for
// a rescan of the roots concerned, since their changes may have gone unseen.
func (l *loop) retryLimited() {
	if l.fsw == nil {
		if err := l.openInotify(); err != nil {
			l.warnLimited("watch-error", "cannot open inotify", "err", err)
		}
	}
	var limited []int
	for i, r := range l.roots {
		if !r.limited() {
			continue
		}
		limited = append(limited, i)
		if !r.present {
			l.establish(i) // the watch-limit rescan below covers an appearance
			continue
		}
		if !l.verifyRoot(i) {
			continue
		}
		retried := map[string]bool{}
		for _, d := range sortedKeys(r.unwatched) {
			if _, still := r.unwatched[d]; !still || underAny(d, retried) {
				continue
			}
			retried[d] = true
			delete(r.unwatched, d)
			if r.recursive {
				l.addTree(i, d)
			} else {
				l.addDir(i, d)
			}
		}
	}
	if len(limited) > 0 {
		l.queueRescan(ReasonWatchLimit, limited...)
	}
	for _, r := range l.roots {
		if r.limited() && !l.fallbackOn {
			l.fallbackOn = true
			l.fallback.Reset(l.opts.FallbackInterval)
		}
	}
}

// ---- batching ----

// report marks p as changed; it is flushed Settle after its last event, or MaxSettle
// after its first unflushed one.
func (l *loop) report(p string) {
	if l.ignored(p) {
		return
	}
	now := time.Now()
	pd, ok := l.pending[p]
	if !ok {
		pd.first = now
	}
	pd.last = now
	l.pending[p] = pd
	l.armSettle(l.due(pd))
}

func (l *loop) due(pd pending) time.Time {
	d := pd.last.Add(l.opts.Settle)
	if l.opts.MaxSettle > 0 {
		if m := pd.first.Add(l.opts.MaxSettle); m.Before(d) {
			d = m
		}
	}
	return d
}

// armSettle makes the settle timer fire no later than at. Deadlines of pending paths
// only move later, so a timer that fires early just re-arms.
func (l *loop) armSettle(at time.Time) {
	if l.settleArmed && !at.Before(l.settleAt) {
		return
	}
	l.settleArmed, l.settleAt = true, at
	l.settle.Reset(time.Until(at))
}

// flush queues every due path as one batch and re-arms for the rest.
func (l *loop) flush(now time.Time) {
	var ready []string
	var next time.Time
	for p, pd := range l.pending {
		d := l.due(pd)
		if !d.After(now) {
			ready = append(ready, p)
			delete(l.pending, p)
		} else if next.IsZero() || d.Before(next) {
			next = d
		}
	}
	if !next.IsZero() {
		l.armSettle(next)
	}
	if len(ready) > 0 {
		l.queuePaths(ready)
	}
}

func (l *loop) queuePaths(paths []string) {
	var q *queued
	for i, it := range l.queue {
		if it.reason == "" {
			q = it
			if i == 0 {
				l.head = nil // rebuilt with the merged paths
			}
			break
		}
	}
	if q == nil {
		q = &queued{paths: map[string]struct{}{}}
		l.queue = append(l.queue, q)
	}
	for _, p := range paths {
		q.paths[p] = struct{}{}
	}
	if len(q.paths) <= maxQueuedPaths {
		return
	}
	// The consumer is not keeping up: a rescan is cheaper than an unbounded list.
	l.queue = slices.DeleteFunc(l.queue, func(it *queued) bool { return it == q })
	l.head = nil
	l.warnLimited("overflow", "too many changes queued for the indexer; rescanning every root",
		"paths", len(q.paths))
	l.queueRescan(ReasonOverflow)
}

// queueRescan queues a rescan of the given roots (every root if none) and counts it.
// A rescan with the same reason still waiting for the consumer absorbs it.
func (l *loop) queueRescan(reason string, roots ...int) {
	if len(roots) == 0 {
		for i := range l.roots {
			roots = append(roots, i)
		}
	}
	var q *queued
	for i, it := range l.queue {
		if it.reason == reason {
			q = it
			if i == 0 {
				l.head = nil
			}
			break
		}
	}
	if q == nil {
		q = &queued{reason: reason, roots: map[string]struct{}{}}
		l.queue = append(l.queue, q)
		l.w.updateStats(func(s *Stats) {
			s.Rescans++
			s.RescanReasons[reason]++
			s.LastRescanReason = reason
		})
	}
	for _, i := range roots {
		q.roots[l.roots[i].Path] = struct{}{}
	}
	l.log.Debug("rescan queued", "reason", reason, "roots", len(roots))
}

// ---- logging ----

// warnLimited logs a warning at most once per warnEvery for each key, counting the
// ones it suppressed.
func (l *loop) warnLimited(key, msg string, args ...any) {
	now := time.Now()
	if last, ok := l.lastWarn[key]; ok && now.Sub(last) < warnEvery {
		l.suppressed[key]++
		return
	}
	l.lastWarn[key] = now
	if n := l.suppressed[key]; n > 0 {
		args = append(args, "suppressed", n)
		l.suppressed[key] = 0
	}
	l.log.Warn(msg, args...)
}

// ---- helpers ----

// within reports whether p is dir or below it.
func within(p, dir string) bool {
	if p == dir {
		return true
	}
	if !strings.HasPrefix(p, dir) {
		return false
	}
	return strings.HasSuffix(dir, string(filepath.Separator)) || p[len(dir)] == filepath.Separator
}

func underAny(p string, dirs map[string]bool) bool {
	for d := filepath.Dir(p); ; d = filepath.Dir(d) {
		if dirs[d] {
			return true
		}
		if d == filepath.Dir(d) {
			return false
		}
	}
}

// nearestDir returns p or its nearest ancestor that is an existing directory.
func nearestDir(p string) string {
	for !isDir(p) {
		parent := filepath.Dir(p)
		if parent == p {
			return p
		}
		p = parent
	}
	return p
}

func isDir(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && fi.IsDir()
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
