package main

import (
	"fmt"

	"github.com/sessionwatch/sessionwatch/config"
	"github.com/sessionwatch/sessionwatch/indexer"
	"github.com/sessionwatch/sessionwatch/usage"
)

// refreshForUsage is refreshCatalogs for `usage` without a daemon. When the
// ledger is settled (its units file's stamp names the summary as it is:
// usage.Stamped) and a stat of every file proves a source's catalogs current
// (as `list` proves them), that source needs no pass: the ledger is synced
// before the catalogs at every flush, so it is not behind them. Only the sources
// where something changed are refreshed, with the consumers attached; all of
// them when the ledger is not settled (opening it repairs the summary).
func refreshForUsage(e *env, cfg *config.Config) {
	w := acquireRefreshWriter(cfg)
	if w == nil {
		return
	}
	defer w.Release()
	if !usage.Stamped(cfg.StateDir) {
		// A full pass with the ledger attached also hands it whatever it lacks of
		// catalogs another writer moved without it (usage.BehindName).
		mark := usage.BehindMark(cfg.StateDir)
		if refreshSources(e, cfg, nil, nil) {
			if err := usage.ClearBehind(cfg.StateDir, mark); err != nil {
				fmt.Fprintf(e.stderr, "sessionwatch: %v\n", err)
			}
		}
		return
	}
	g, err := indexer.NewGroup(cfg, quietLogger(cfg, e.stderr), false)
	if err != nil {
		refreshSources(e, cfg, nil, nil)
		return
	}
	var stale []string
	for _, ix := range g.Indexers() {
		if err := ix.LoadLite(); err != nil || !ix.Unchanged() {
			stale = append(stale, ix.Options().Source)
		}
	}
	if len(stale) > 0 {
		refreshSources(e, cfg, stale, nil)
	}
}
