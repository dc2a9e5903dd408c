package main

import (
	"log/slog"

	"github.com/sessionwatch/sessionwatch/config"
	"github.com/sessionwatch/sessionwatch/indexer"
	"github.com/sessionwatch/sessionwatch/usage"
)

// attachConsumers attaches everything kept beside the catalogs from the same
// reads (the usage ledger, the search index) to a group that writes the catalogs.
// Every writer attaches all of them, so none falls behind the catalogs: a pass
// that moved the catalogs without one would leave it to catch up later, and
// reindex --check would see it differ meanwhile. The returned func closes them.
func attachConsumers(cfg *config.Config, g *indexer.Group, logger *slog.Logger) (func(), error) {
	cs, closeAll, err := openConsumers(cfg, logger)
	if err != nil {
		return nil, err
	}
	for _, c := range cs {
		g.AddConsumer(c)
	}
	return closeAll, nil
}

// openConsumers opens what attachConsumers attaches, without a group: the daemon
// opens them while its indexers load their catalogs.
func openConsumers(cfg *config.Config, logger *slog.Logger) ([]indexer.Consumer, func(), error) {
	ledger, err := usage.Open(cfg.StateDir)
	if err != nil {
		return nil, nil, failErr("run 'sessionwatch reindex' to rebuild it", "%v", err)
	}
	x, err := openSearch(cfg, logger)
	if err != nil {
		return nil, nil, err
	}
	return []indexer.Consumer{ledger, x}, func() { x.Close() }, nil
}
