package main

import (
	"context"
	"fmt"
	"slices"
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
// to date before list or show reads them, when no daemon does that: as a writer
// under the single-writer rule, stat only for unchanged files. While a daemon
// runs, or another command is writing, it touches nothing.
func refreshCatalogs(e *env, cfg *config.Config, sources []string) {
	if running, _ := daemonRunning(cfg.StateDir); running || indexer.WriterHeld(cfg.StateDir) {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), refreshWait)
	w, err := indexer.AcquireWriter(ctx, cfg.StateDir)
	cancel()
	if err != nil {
		return
	}
	defer w.Release()
	logger := quietLogger(cfg, e.stderr)
	g, err := indexer.NewGroup(cfg, logger, false)
	if err != nil {
		return
	}
	closeConsumers, err := attachConsumers(cfg, g, logger)
	if err != nil {
		fmt.Fprintf(e.stderr, "sessionwatch: %v\n", err)
		return
	}
	defer closeConsumers()
	for _, ix := range g.Indexers() {
		if len(sources) > 0 && !slices.Contains(sources, ix.Options().Source) {
			continue
		}
		if err := ix.Load(); err == nil {
			err = ix.Refresh()
		}
		if err != nil {
			fmt.Fprintf(e.stderr, "sessionwatch: index %s: %v\n", ix.Options().Source, err)
		}
	}
}
