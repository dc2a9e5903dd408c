package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"path/filepath"
	"runtime/debug"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/sessionwatch/sessionwatch/config"
	"github.com/sessionwatch/sessionwatch/indexer"
	"github.com/sessionwatch/sessionwatch/janitor"
	"github.com/sessionwatch/sessionwatch/watcher"
)

// shutdownTimeout bounds a graceful shutdown (the unit's TimeoutStopSec is above it).
const shutdownTimeout = 10 * time.Second

// retryEvery is how often the daemon looks for failed writes whose backoff passed.
const retryEvery = time.Second

// statusEvery is how often the daemon refreshes its status file while idle.
const statusEvery = 10 * time.Second

func cmdRun(ctx context.Context, e *env, args []string) error {
	fs := newFlags(e, "run", "sessionwatch run [--once]   (example: sessionwatch run)")
	once := fs.Bool("once", false, "one full index pass and one janitor pass, then exit")
	pos, err := parseFlags(fs, args)
	if err != nil {
		return err
	}
	if len(pos) > 0 {
		return usageErr("", "run: unexpected argument %q", pos[0])
	}
	cfg, err := e.loadConfig()
	if err != nil {
		return err
	}
	logger := newLogger(cfg, e.stderr)
	lock, err := lockDaemon(cfg.StateDir)
	if err != nil {
		return err
	}
	defer lock.Close()
	// A daemon killed mid-write leaves a temp status file; we hold the lock now.
	indexer.CleanTemp(cfg.StateDir)
	if moved, err := janitor.AdoptArchives(cfg.ArchiveDir); err != nil || len(moved) > 0 {
		logger.Info("archives moved into their project's directory", "count", len(moved), "err", err)
	}
	// GOGC 50 and a soft memory limit (memlimit.go); GOGC and GOMEMLIMIT in the
	// environment still win.
	mem := setupDaemonMemory()
	defer mem.stop()

	// First SIGINT/SIGTERM: cancel and shut down cleanly; a second one exits at once.
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	sigc := make(chan os.Signal, 2)
	signal.Notify(sigc, syscall.SIGINT, syscall.SIGTERM)
	defer signal.Stop(sigc)
	go func() {
		select {
		case s := <-sigc:
			logger.Info("shutting down", "signal", s.String())
			cancel()
		case <-ctx.Done():
			return
		}
		select {
		case s := <-sigc:
			logger.Warn("second signal, exiting now", "signal", s.String())
		case <-time.After(shutdownTimeout):
			logger.Error("shutdown took too long, exiting now", "timeout", shutdownTimeout)
		}
		os.Exit(1)
	}()
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	defer signal.Stop(hup)

	d := &daemon{log: logger, started: time.Now(), statePath: filepath.Join(cfg.StateDir, "status.json"), notify: newNotifier(),
		writer: indexer.NewWriterLock(cfg.StateDir), mem: mem}
	for {
		reload, err := d.serve(ctx, cfg, *once, hup)
		if err != nil || !reload {
			d.notify.send("STOPPING=1")
			d.writeStatus(nil, nil, false)
			return err
		}
		d.notify.send(fmt.Sprintf("RELOADING=1\nMONOTONIC_USEC=%d", monotonicUsec()))
		next, err := e.loadConfig()
		if err != nil {
			logger.Error("config reload rejected, keeping the old config", "file", e.configPath, "err", err)
			continue
		}
		if next.StateDir != cfg.StateDir {
			logger.Error("config reload: state_dir cannot change while running, keeping the old one", "state_dir", cfg.StateDir, "got", next.StateDir)
			next.StateDir = cfg.StateDir
		}
		logger.Info("config reloaded", "file", e.configPath)
		cfg = next
	}
}

// testWatcherOptions is a test seam: an in-process daemon's test adjusts the
// watcher's options with it (e.g. MaxWatches, to run out of inotify watches).
var testWatcherOptions func(*watcher.Options)

// testAfterProve is a test seam: an in-process daemon's test changes the store
// with it after the start-up listing (Group.ProveAll) and before the first pass.
var testAfterProve func()

// daemon holds what survives a config reload.
type daemon struct {
	log       *slog.Logger
	started   time.Time
	statePath string
	lastErr   string
	notify    *notifier
	janitor   *janitorStatus // last janitor pass, kept across reloads
	warnings  []string       // its warnings
	writer    *indexer.WriterLock
	mem       *memGovernor // paces the collector once start-up is done
	// The status file is written when what it shows changes (statusChanged),
	// at most every statusMinGap, and every statusEvery anyway.
	sig        string           // statusSig at the last write
	lastStatus time.Time        // the last write
	statusDue  <-chan time.Time // a write held back by statusMinGap
}

// serve runs one configuration until ctx ends (reload=false) or SIGHUP (reload=true).
func (d *daemon) serve(ctx context.Context, cfg *config.Config, once bool, hup <-chan os.Signal) (reload bool, err error) {
	d.mem.unsettle() // a reload's start-up is paced as the first one was
	g, err := indexer.NewGroup(cfg, d.log, false)
	if err != nil {
		return false, err
	}
	// The watches are added (one per directory: thousands on a large store)
	// while the catalogs load; batches wait for the serve loop.
	var (
		w           *watcher.Watcher
		werr        = make(chan error, 1)
		stopWatcher = func() {}
	)
	if !once {
		wopts := watcher.Options{
			Settle:         enabled(cfg.Settle),
			MaxSettle:      enabled(cfg.MaxSettle),
			RescanInterval: enabled(cfg.RescanInterval),
			Ignore:         g.Ignore,
		}
		if testWatcherOptions != nil {
			testWatcherOptions(&wopts)
		}
		if w, err = watcher.New(g.WatchRoots(), wopts, d.log); err != nil {
			return false, err
		}
		var wctx context.Context
		wctx, stopWatcher = context.WithCancel(ctx)
		go func() { werr <- w.Run(wctx) }()
	}
	defer func() { stopWatcher() }()
	// The usage ledger and the search index open while the indexers load their
	// catalogs (neither needs the other): on a large store both take a while, and
	// the consumers are attached before anything is read.
	type opened struct {
		cs       []indexer.Consumer
		closeAll func()
		err      error
	}
	// The catalogs load under the writer lock too (Indexer.Load), waiting for
	// it without regard to ctx: the wait for a writer that began before this
	// daemon is here, where a SIGTERM ends it (a stop while a reindex runs
	// exited 1 once the shutdown timed out).
	if indexer.WriterHeld(cfg.StateDir) {
		d.log.Info("waiting for another writer (a reindex) to finish")
	}
	if err := d.writer.Lock(ctx); err != nil {
		if ctx.Err() != nil {
			return false, nil
		}
		return false, err
	}
	d.writer.Unlock()
	openc := make(chan opened, 1)
	go func() {
		// A reindex (or a CLI catching up without a daemon) that began before
		// this daemon writes the ledger and the search index under the writer
		// lock; opening them meanwhile would remove its uncommitted files as
		// strays and keep a manifest it is about to replace. Wait until it is
		// done: one that starts later sees this daemon and leaves them alone.
		if err := d.writer.Lock(ctx); err != nil {
			openc <- opened{err: err}
			return
		}
		d.writer.Unlock()
		cs, closeAll, err := openConsumers(cfg, d.log)
		openc <- opened{cs, closeAll, err}
	}()
	g.UseWriterLock(d.writer, true)
	loadStart := time.Now()
	if err := g.Load(); err != nil {
		d.log.Warn("load catalogs", "err", err)
	}
	d.log.Info("catalogs loaded", "took", time.Since(loadStart).Round(time.Millisecond))
	if !once {
		// With the watches in place, what is unchanged since the catalogs were
		// written is proved by a stat of every file while the consumers open
		// (a change after a directory was listed is an event handled once
		// ready); the first pass below reads what changed.
		select {
		case <-w.Ready():
		case <-ctx.Done():
			if o := <-openc; o.err == nil {
				o.closeAll()
			}
			return false, nil
		}
		d.log.Info("watches ready", "after", time.Since(loadStart).Round(time.Millisecond))
		g.ProveAll()
		d.log.Info("store listed", "after", time.Since(loadStart).Round(time.Millisecond))
		if testAfterProve != nil {
			testAfterProve()
		}
	}
	o := <-openc
	d.log.Info("consumers open", "after", time.Since(loadStart).Round(time.Millisecond))
	if o.err != nil {
		if ctx.Err() != nil {
			return false, nil // stopped while waiting for a writer
		}
		return false, o.err
	}
	defer o.closeAll()
	for _, c := range o.cs {
		g.AddConsumer(c)
	}
	// The janitor's passes signal here; the serve loop owns the status file.
	passDone := make(chan struct{}, 1)
	j, err := janitor.New(cfg, g, d.log, janitor.Options{OnPass: func(janitor.Report) {
		select {
		case passDone <- struct{}{}:
		default:
		}
	}})
	if err != nil {
		return false, err
	}
	// Finish or undo what a killed janitor left half-done, before the first
	// index pass sees the stores.
	if rec, err := j.Recover(ctx); err != nil {
		d.log.Error("janitor recovery", "err", err)
	} else if len(rec.Errors) > 0 {
		d.log.Error("janitor recovery left actions open", "errors", rec.Errors)
	}
	if once {
		start := time.Now()
		err := g.ReconcileAll()
		d.log.Info("index pass done", "took", time.Since(start).Round(time.Millisecond), "sessions", totalSessions(g))
		// The janitor judges every session by its files, so a partial index is
		// no reason to skip it: it only sees fewer sessions.
		// Auto: on a machine where the janitor never ran this pass only
		// previews (janitor.first_run), like the daemon's first one.
		rep, jerr := j.RunOnce(ctx, janitor.Overrides{Auto: true})
		if jerr == nil {
			d.setJanitor(rep)
			if len(rep.Errors) > 0 {
				jerr = fmt.Errorf("janitor: %d action(s) failed: %s", len(rep.Errors), rep.Errors[0])
			}
		}
		return false, errors.Join(err, jerr)
	}
	// Index only once the watches exist, so nothing written meanwhile is missed.
	select {
	case <-w.Ready():
	case <-ctx.Done():
		return false, nil
	}
	// The first pass proves by a stat of every file what is unchanged since the
	// catalogs were written and reads and writes only the rest: ready as soon as
	// that is done. Every catalog and native index is then compared with what its
	// sessions render (Reconcile's other half), before any batch is handled.
	start := time.Now()
	if err := g.StartAll(); err != nil {
		d.note(err)
	}
	d.log.Info("indexed", "took", time.Since(start).Round(time.Millisecond), "sessions", totalSessions(g))
	d.writeStatus(g, w, true)
	d.notify.send("READY=1\nSTATUS=" + d.summary(g))
	// systemd's watchdog runs from READY=1 on: a ping after each source's
	// comparison keeps a large store's from counting as a hang.
	start = time.Now()
	for _, ix := range g.Indexers() {
		if err := ix.VerifyOutputs(); err != nil {
			d.note(fmt.Errorf("source %s: %w", ix.Options().Source, err))
		}
		if watchdogInterval() > 0 {
			d.notify.send("WATCHDOG=1")
		}
	}
	d.log.Info("outputs verified", "took", time.Since(start).Round(time.Millisecond))
	// The first pass may have read every transcript once; hand its garbage back
	// to the OS now rather than idle at its high-water mark for minutes.
	debug.FreeOSMemory()
	d.mem.settle()
	// Start-up work that the first appends would otherwise trigger (the search
	// index's merge of what the first pass wrote) starts now, in the background
	// (after the collector was paced by what start-up left live).
	settleConsumers(o.cs)

	// The janitor starts after the first index pass (its start-up pass plans
	// from a fresh catalog) and stops before the watcher (defers run in reverse).
	jctx, stopJanitor := context.WithCancel(ctx)
	jdone := make(chan error, 1)
	go func() { jdone <- j.Run(jctx) }()
	defer func() {
		stopJanitor()
		if err := <-jdone; err != nil {
			d.log.Error("janitor stopped", "err", err)
		}
	}()

	tick := time.NewTicker(statusEvery)
	defer tick.Stop()
	retry := time.NewTicker(retryEvery)
	defer retry.Stop()
	// The watchdog is pinged from this loop, so a hung loop stops the pings.
	var dog <-chan time.Time
	if iv := watchdogInterval(); iv > 0 {
		t := time.NewTicker(iv)
		defer t.Stop()
		dog = t.C
		d.notify.send("WATCHDOG=1")
	}
	// This loop is the one goroutine that hands batches to the indexers.
	for {
		select {
		case <-dog:
			d.notify.send("WATCHDOG=1")
		case b, ok := <-w.Batches():
			if !ok {
				return false, <-werr
			}
			if len(b.Rescan) > 0 {
				d.log.Info("rescan", "reason", b.Reason, "roots", b.Rescan)
			}
			release := holdBusy(o.cs) // background merges wait for the batch
			err := g.Apply(b)
			release()
			if err != nil {
				d.note(err)
			}
			if len(b.Rescan) > 0 && g.RootsMoved() {
				// A root appeared as a symlink: start over on its real directory.
				d.log.Info("a source root appeared as a symlink, restarting on its real directory")
				stopWatcher()
				for range w.Batches() {
				}
				<-werr
				return true, nil
			}
			d.statusChanged(g, w)
		case <-d.statusDue:
			d.writeStatus(g, w, true)
		case <-hup:
			d.log.Info("reloading config")
			stopWatcher()
			for range w.Batches() {
			}
			<-werr
			return true, nil
		case <-passDone:
			if r, ok := j.LastReport(); ok {
				d.setJanitor(r)
			}
			d.writeStatus(g, w, true)
		case <-retry.C:
			if err := g.Retry(time.Now()); err != nil {
				d.note(err)
			}
		case <-tick.C:
			d.writeStatus(g, w, true)
			d.notify.send("STATUS=" + d.summary(g))
		}
	}
}

// summary is the one-line STATUS= text.
func (d *daemon) summary(g *indexer.Group) string {
	n, b := 0, int64(0)
	for _, ix := range g.Indexers() {
		st := ix.Stats()
		n += st.Sessions
		b += st.Bytes
	}
	s := fmt.Sprintf("watching %d sources: %d sessions, %s", len(g.Indexers()), n, humanSize(b))
	if d.lastErr != "" {
		s += "; last error: " + d.lastErr
	}
	return s
}

// note logs an indexing error (rate-limited by message) and keeps it for status.
func (d *daemon) note(err error) {
	msg := err.Error()
	if msg != d.lastErr {
		d.log.Warn("index error", "err", err)
	}
	d.lastErr = msg
}

func enabled(d config.Duration) time.Duration {
	if d.Enabled() {
		return d.D
	}
	return 0
}

func totalSessions(g *indexer.Group) int {
	n := 0
	for _, ix := range g.Indexers() {
		n += ix.Stats().Sessions
	}
	return n
}

// lockDaemon takes the state dir's daemon lock (flock on daemon.pid) and writes
// our pid into it; if another process holds it, the error names that pid.
func lockDaemon(stateDir string) (*os.File, error) {
	if err := os.MkdirAll(stateDir, 0o700); err != nil {
		return nil, fmt.Errorf("create state dir: %w", err)
	}
	path := filepath.Join(stateDir, "daemon.pid")
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", path, err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, failErr("stop it first, or use another state_dir", "another sessionwatch daemon is running for %s (pid %s)", showPath(stateDir), daemonPID(stateDir))
		}
		return nil, fmt.Errorf("lock %s: %w", path, err)
	}
	f.Truncate(0)
	f.WriteAt([]byte(strconv.Itoa(os.Getpid())+"\n"), 0)
	f.Sync()
	return f, nil
}

// daemonPID reads the pid a daemon wrote into the state dir ("?" if unknown).
func daemonPID(stateDir string) string {
	data, err := os.ReadFile(filepath.Join(stateDir, "daemon.pid"))
	if p := strings.TrimSpace(string(data)); err == nil && p != "" {
		return p
	}
	return "?"
}
