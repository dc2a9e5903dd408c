package main

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/sessionwatch/sessionwatch/indexer"
	"github.com/sessionwatch/sessionwatch/search"
	"github.com/sessionwatch/sessionwatch/usage"
)

func cmdReindex(e *env, args []string) error {
	fs := newFlags(e, "reindex", "sessionwatch reindex [--source S] [--check]   (example: sessionwatch reindex --check)")
	source := fs.String("source", "", "only this source")
	check := fs.Bool("check", false, "write nothing; exit 1 listing what a rebuild would change")
	pos, err := parseFlags(fs, args)
	if err != nil {
		return err
	}
	if len(pos) > 0 {
		return usageErr("", "reindex: unexpected argument %q", pos[0])
	}
	cfg, err := e.loadConfig()
	if err != nil {
		return err
	}
	if !*check {
		w, err := holdWriter(context.Background(), cfg)
		if err != nil {
			return err
		}
		defer w.Release()
	}
	g, err := indexer.NewGroup(cfg, newLogger(cfg, e.stderr), *check)
	if err != nil {
		return err
	}
	var ledger, coldLedger *usage.Ledger
	var coldSearch *search.Index
	if *check {
		// An in-memory rebuild of the ledger, compared below with the one on disk
		// (the search index is compared by its own rebuild).
		if ledger, err = usage.NewRebuild(cfg.StateDir); err != nil {
			return failErr("move the usage ledger aside to rebuild it", "%v", err)
		}
		g.AddConsumer(ledger)
	} else if daemonActive(cfg.StateDir) {
		// The daemon's ledger is behind these catalogs until its next pass.
		if err := usage.MarkBehind(cfg.StateDir); err != nil {
			return failErr("", "mark the usage ledger behind: %v", err)
		}
	} else {
		// The ledger and the search index are rebuilt with the catalogs. A running
		// daemon keeps its own: it reloads what this rebuild writes.
		cs, closeConsumers, err := openConsumers(cfg, newLogger(cfg, e.stderr))
		if err != nil {
			return err
		}
		defer closeConsumers()
		for _, c := range cs {
			if l, ok := c.(*usage.Ledger); ok {
				l.ColdBuild() // each source's rows appended once, no compactions
				coldLedger = l
			}
			if x, ok := c.(*search.Index); ok {
				x.ColdBuild() // one merge at the end (closeConsumers), summaries written once
				coldSearch = x
			}
			g.AddConsumer(c)
		}
	}
	ixs := g.Indexers()
	if !*check {
		for _, ix := range ixs {
			ix.BatchFullPasses() // every output durable in one batch, not file by file
			ix.WillRelease()     // released after its pass (below): nothing to park
		}
	}
	if *source != "" {
		ix := g.Indexer(*source)
		if ix == nil {
			return usageErr("see 'sessionwatch config show' for the enabled sources", "reindex: unknown or disabled source %q", *source)
		}
		ixs = []*indexer.Indexer{ix}
	}
	progress := isTerminal(e.stderr)
	var diffs []indexer.Difference
	var failed, passed []string
	for i, ix := range ixs {
		start := time.Now()
		if progress {
			fmt.Fprintf(e.stderr, "[%d/%d] %s: scanning %s…\n", i+1, len(ixs), ix.Options().Source, ix.Root())
		}
		if err := ix.Reconcile(); err != nil {
			// A broken source (a half-written store) must not stop the others.
			failed = append(failed, fmt.Sprintf("%s: %v", ix.Options().Source, err))
		} else {
			passed = append(passed, ix.Options().Source)
		}
		st := ix.Stats()
		if *check {
			diffs = append(diffs, ix.Differences()...)
		} else {
			fmt.Fprintf(e.stdout, "%s: %d sessions in %d projects, %s read, %d catalogs and %d native indexes written in %s\n",
				ix.Options().Source, st.Sessions, st.Projects, humanSize(st.BytesRead), st.CatalogWrites, st.NativeWrites, time.Since(start).Round(time.Millisecond))
		}
		// This source is done: its sessions and accumulators need not stay in
		// memory while the next ones are read.
		ix.Release()
	}
	// The ledger's end and the search index's are independent (each writes
	// only its own files, each atomically): they run side by side, as neither
	// uses more than a core for most of it and the indexers are done.
	var ledgerEnd chan error
	if coldLedger != nil {
		// Compacted once here, the ledger opens from its index at the daemon's
		// first start instead of reading what each source appended.
		ledgerEnd = make(chan error, 1)
		go func() { ledgerEnd <- coldLedger.EndColdBuild() }()
	}
	if coldSearch != nil {
		// A file that left the store while no daemon ran is in no catalog to
		// say so: what the passes did not hand the search index is gone.
		coldSearch.RemoveUnseen(passed)
		if err := coldSearch.Sync(nil); err != nil {
			failed = append(failed, fmt.Sprintf("search index: %v", err))
		}
		// Its one merge (ColdBuild), meanwhile too: the deferred
		// closeConsumers finds nothing left to do (Close is idempotent).
		coldSearch.Close()
	}
	if ledgerEnd != nil {
		if err := <-ledgerEnd; err != nil {
			failed = append(failed, fmt.Sprintf("usage ledger: %v", err))
		}
	}
	if len(failed) > 0 {
		return failErr("fix or move the file named, then run reindex again", "reindex: %s", strings.Join(failed, "\n"))
	}
	if !*check {
		return nil
	}
	ldiffs, err := usage.Compare(cfg.StateDir, ledger, sourceSet(ixs))
	if err != nil {
		return failErr("run 'sessionwatch reindex' to rebuild it", "%v", err)
	}
	for _, d := range ldiffs {
		fmt.Fprintf(e.stdout, "differs: %s\n", d)
	}
	searchDiffs, err := checkSearch(cfg, *source)
	if err != nil {
		return err
	}
	for _, d := range searchDiffs {
		diffs = append(diffs, indexer.Difference{Path: d})
	}
	if len(diffs)+len(ldiffs) == 0 {
		fmt.Fprintln(e.stdout, "ok: every catalog, native index, the search index and the usage ledger match a rebuild")
		return nil
	}
	for _, d := range diffs {
		what := "differs"
		if d.Change == "remove" {
			what = "stale"
		}
		fmt.Fprintf(e.stdout, "%s: %s\n", what, d.Path)
	}
	return failErr("run 'sessionwatch reindex' to rebuild them", "reindex --check: %d files differ from a rebuild", len(diffs)+len(ldiffs))
}

func sourceSet(ixs []*indexer.Indexer) map[string]bool {
	m := map[string]bool{}
	for _, ix := range ixs {
		m[ix.Options().Source] = true
	}
	return m
}
