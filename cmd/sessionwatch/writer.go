package main

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"slices"
	"sync"
	"time"

	"github.com/sessionwatch/sessionwatch/config"
	"github.com/sessionwatch/sessionwatch/indexer"
)

// holdWriter takes the state dir's writer lock for the rest of a command that
// rewrites catalogs from scratch (reindex): a running daemon's flushes wait, and
// reload what the command wrote before they write again (SPEC §6 Writers).
func holdWriter(ctx context.Context, cfg *config.Config) (*indexer.Writer, error) {
	ctx, cancel := context.WithTimeout(ctx, passLockWait)
	defer cancel()
	w, err := indexer.AcquireWriter(ctx, cfg.StateDir)
	if err != nil {
		return nil, failErr("another sessionwatch process is writing the catalogs; try again", "%v", err)
	}
	return w, nil
}

// refreshWait is how long list and show wait for another writer before they
// read the catalogs as they are.
const refreshWait = time.Second

// refreshCatalogs brings the catalogs of the given sources (all when empty) up
// to date before a command reads them, when no daemon does that: as a writer
// under the single-writer rule, stat only for unchanged files, with the
// consumers (search index, usage ledger) attached so they are brought up to date
// too. While a daemon runs, or another command is writing, it touches nothing.
func refreshCatalogs(e *env, cfg *config.Config, sources []string) {
	w := acquireRefreshWriter(cfg)
	if w == nil {
		return
	}
	defer w.Release()
	refreshSources(e, cfg, sources, nil)
}

// refreshed holds the sessions of the sources refreshForListing brought up to
// date (or proved up to date, for one project), as their catalogs now hold
// them, so a listing need not read those catalogs again; the other sources are
// read from their catalogs. A nil *refreshed knows no source.
type refreshed struct {
	bySource map[string][]indexer.Entry
	// rows, when not nil, are the table of list --all, filled while every
	// source was proven up to date (indexer.ProveVisit): the catalogs as
	// printCatalogs would read them, with rowsErr its error.
	rows    *catalogRows
	rowsErr error
}

// catalogsOnly reports whether the listing reads every source from its
// catalogs (a daemon keeps them, or each was proven up to date).
func (r *refreshed) catalogsOnly() bool {
	return r == nil || len(r.bySource) == 0
}

// refreshForListing is refreshCatalogs for list and show, which read only the
// catalogs of their scope sc. For one project (not --all), each source first
// proves only that project's catalogs up to date (indexer.ProveProject: its
// files and directories, nothing of other projects), and when it can, that is
// the listing. Otherwise each source's files are all stat'ed against its
// catalogs (indexer.ProveLean, which keeps no session); when nothing changed
// (the common case) nothing else happens and the listing reads the catalogs.
// Only a source where something changed is refreshed, with the consumers
// attached as refreshCatalogs does (opening them costs more than the whole
// listing).
//
// rows, if not nil, is list --all's table: the whole proofs then fill it
// from the same reads of the catalogs (indexer.ProveVisit), and when every
// source is proven it is the listing (refreshed.rows).
func refreshForListing(e *env, cfg *config.Config, sc scope, rows *catalogRows) *refreshed {
	w := acquireRefreshWriter(cfg)
	if w == nil {
		return nil
	}
	defer w.Release()
	var projects []string
	if !sc.all {
		var err error
		if projects, err = sc.projects(); err != nil {
			return nil
		}
	}
	fresh := &refreshed{bySource: map[string][]indexer.Entry{}}
	g, err := indexer.NewGroup(cfg, quietLogger(cfg, e.stderr), false)
	if err != nil {
		return nil
	}
	limit := debug.SetMemoryLimit(-1)
	if len(projects) > 0 {
		// ProveProject holds every session of the project in its catalogs
		// (the listing's rows, when it proves them): under listMemLimit a
		// large project would make the collector run without pause.
		roomForSessions()
	}
	var whole []indexer.Options // sources to prove whole
	for _, ix := range g.Indexers() {
		src := ix.Options().Source
		if len(sc.sources) > 0 && !slices.Contains(sc.sources, src) {
			continue
		}
		if len(projects) > 0 {
			if es, ok := ix.ProveProject(projects); ok {
				fresh.bySource[src] = es
				continue
			}
		}
		whole = append(whole, ix.Options())
	}
	if len(fresh.bySource) == 0 {
		// Nothing held (a spent indexer's sessions are garbage: whole keeps
		// its options only): the whole proofs stream under the limit as it was.
		debug.SetMemoryLimit(limit)
	}
	// Each source by a fresh indexer (ProveProject's holds that project's
	// units only) that keeps no session: when it is proven, the listing reads
	// its catalogs. The proofs (a stat of every file) run side by side.
	var lean []*indexer.Indexer
	for _, opt := range whole {
		ix, err := indexer.New(opt)
		if err != nil {
			ix = nil
		}
		lean = append(lean, ix)
	}
	start := time.Now()
	var proven []bool
	if rows != nil && len(projects) == 0 {
		proven = proveVisiting(cfg, sc, lean, rows, fresh)
	} else {
		proven = proveEach(lean)
	}
	for i, ix := range lean {
		if !proven[i] {
			continue
		}
		// Proven whole: a later list of one project relies on that
		// (indexer.ProveProject). Without the mark, it proves more.
		if err := ix.MarkProven(start); err != nil {
			fmt.Fprintf(e.stderr, "sessionwatch: index %s: %v\n", ix.Options().Source, err)
		}
	}
	var stale []string
	for i, opt := range whole {
		if !proven[i] {
			stale = append(stale, opt.Source)
		}
	}
	if len(stale) > 0 {
		refreshSources(e, cfg, stale, fresh)
	}
	return fresh
}

// proveEach proves each source by ProveLean, GOMAXPROCS at a time; a nil
// indexer is not proven.
func proveEach(lean []*indexer.Indexer) []bool {
	proven := make([]bool, len(lean))
	var wg sync.WaitGroup
	sem := make(chan struct{}, runtime.GOMAXPROCS(0))
	for i, ix := range lean {
		if ix == nil {
			continue
		}
		wg.Go(func() {
			sem <- struct{}{}
			defer func() { <-sem }()
			proven[i] = ix.ProveLean()
		})
	}
	wg.Wait()
	return proven
}

// proveVisiting proves the sources as proveEach does while it fills rows
// with list --all's table from the same reads (indexer.ProveVisit); when all
// are proven, fresh.rows is the listing.
func proveVisiting(cfg *config.Config, sc scope, lean []*indexer.Indexer, rows *catalogRows, fresh *refreshed) []bool {
	var ixs []*indexer.Indexer
	var at []int // ixs[k] is lean[at[k]]
	for i, ix := range lean {
		if ix != nil {
			ixs = append(ixs, ix)
			at = append(at, i)
		}
	}
	// The rows are sorted beside the last walks, by a worker that would wait.
	ok, visited, err := indexer.ProveVisit(cfg.StateDir, sc.sources, ixs, rows.workers(), rows.visit, rows.sort)
	proven := make([]bool, len(lean))
	all := visited && len(ixs) == len(lean)
	for k, i := range at {
		proven[i] = ok[k]
		all = all && ok[k]
	}
	if all {
		fresh.rows, fresh.rowsErr = rows, err
	}
	return proven
}

// acquireRefreshWriter takes the writer lock for a refresh, or returns nil when
// a daemon runs or another command writes (then the catalogs are read as they are).
func acquireRefreshWriter(cfg *config.Config) *indexer.Writer {
	if running, _ := daemonRunning(cfg.StateDir); running || indexer.WriterHeld(cfg.StateDir) {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), refreshWait)
	defer cancel()
	w, err := indexer.AcquireWriter(ctx, cfg.StateDir)
	if err != nil {
		return nil
	}
	return w
}

// listMemLimit is the soft memory limit of list and show (with the collector
// off: it runs only near the limit). A listing of a store proven up to date
// streams its catalogs and stays well under it (list --all at 100k sessions:
// ~35 MiB); roomForSessions raises it for what holds every session at once.
const listMemLimit = 40 << 20

// roomForSessions raises list's and show's soft memory limit before they hold
// every session of a scope (a refresh's Load, the rows of list --json): at
// 100k sessions more than listMemLimit, which would make the collector run
// without pause.
func roomForSessions() {
	if os.Getenv("GOMEMLIMIT") != "" {
		return // the limit is the environment's (tuneListGC)
	}
	debug.SetMemoryLimit(max(debug.SetMemoryLimit(-1), 256<<20))
}

// refreshSources loads and refreshes the given sources (all when empty) with the
// consumers attached; the caller holds the writer lock. The sessions of each
// source refreshed without error are added to fresh, if given. ok: every one
// was refreshed without error.
func refreshSources(e *env, cfg *config.Config, sources []string, fresh *refreshed) (ok bool) {
	roomForSessions()
	logger := quietLogger(cfg, e.stderr)
	g, err := indexer.NewGroup(cfg, logger, false)
	if err != nil {
		return false
	}
	closeConsumers, err := attachConsumers(cfg, g, logger)
	if err != nil {
		fmt.Fprintf(e.stderr, "sessionwatch: %v\n", err)
		return false
	}
	ok = true
	defer closeConsumers()
	for _, ix := range g.Indexers() {
		if len(sources) > 0 && !slices.Contains(sources, ix.Options().Source) {
			continue
		}
		err := ix.Load()
		if err == nil {
			err = ix.Refresh()
		}
		if err != nil {
			ok = false
			fmt.Fprintf(e.stderr, "sessionwatch: index %s: %v\n", ix.Options().Source, err)
		} else if fresh != nil {
			fresh.add(ix)
		}
	}
	return ok
}

// add records the sessions of a source that is up to date.
func (r *refreshed) add(ix *indexer.Indexer) {
	r.bySource[ix.Options().Source] = ix.Entries()
}

// selectSessions is the package's selectSessions, with the sessions of the
// refreshed sources taken from memory rather than read again from the catalogs.
func (r *refreshed) selectSessions(cfg *config.Config, sc scope) ([]indexer.Entry, error) {
	if r == nil {
		return selectSessions(cfg, sc)
	}
	roomForSessions()
	sources := sc.sources
	if sources == nil {
		// Every source with catalogs, configured or not, as ReadCatalogs lists them.
		ents, err := os.ReadDir(filepath.Join(cfg.StateDir, "index"))
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("read catalogs: %w", err)
		}
		for _, e := range ents {
			if e.IsDir() {
				sources = append(sources, e.Name())
			}
		}
	}
	var want map[string]bool
	var projects []string
	if !sc.all {
		cwd, err := os.Getwd()
		if err != nil {
			return nil, fmt.Errorf("find current directory: %w", err)
		}
		projects = indexer.ProjectCandidates(cwd)
		want = map[string]bool{}
		for _, p := range projects {
			want[p] = true
		}
	}
	n := 0
	for _, es := range r.bySource {
		n += len(es)
	}
	entries := make([]indexer.Entry, 0, n)
	var rest []string // sources read from their catalogs
	for _, src := range sources {
		es, ok := r.bySource[src]
		if !ok {
			rest = append(rest, src)
			continue
		}
		for _, en := range es {
			if want == nil || want[en.Project] {
				entries = append(entries, en)
			}
		}
	}
	var err error
	if len(rest) > 0 {
		var more []indexer.Entry
		more, err = indexer.ReadCatalogs(cfg.StateDir, rest, projects)
		entries = append(entries, more...)
	}
	indexer.SortEntries(entries)
	if err != nil && len(entries) == 0 {
		return nil, err
	}
	return keepType(entries, sc.typ), nil
}
