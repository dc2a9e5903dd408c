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

// settleConsumers tells the consumers that do background work of their own that
// the daemon's start-up pass is done (the search index merges what it wrote).
func settleConsumers(cs []indexer.Consumer) {
	for _, c := range cs {
		if s, ok := c.(interface{ Settle() }); ok {
			s.Settle()
		}
	}
}

// busyConsumer is a consumer with work of its own in the background (the search
// index's merges) that can be held off the CPU while a batch is handled.
type busyConsumer interface {
	Busy() (done func())
}

// holdBusy holds every consumer's background work while the daemon handles a
// batch (an appended line is searchable sooner); the returned func releases it.
func holdBusy(cs []indexer.Consumer) (release func()) {
	var dones []func()
	for _, c := range cs {
		if b, ok := c.(busyConsumer); ok {
			dones = append(dones, b.Busy())
		}
	}
	return func() {
		for _, done := range dones {
			done()
		}
	}
}
