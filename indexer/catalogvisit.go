package indexer

import (
	"errors"
	"os"
	"sync"
	"sync/atomic"
	"syscall"
)

// VisitCatalogs calls visit with every session of the catalogs ReadCatalogs
// reads (the same sources and projects), catalog by catalog, in no order, and
// builds nothing: for a listing that keeps only what it shows of each session,
// while the session's bytes are still in the CPU's cache. At 20,000 sessions
// ReadCatalogs's copy of the catalogs' text, its Sessions and their first
// touches in the table were most of `list --all`'s memory and a third of its
// time.
//
// The catalogs are shared among up to workers goroutines (one per
// catalogsPerWorker catalogs, at least one), and visit is called from each with
// its number, 0 ≤ worker < workers: never twice
// at once with the same number. The Session visit is given, and every string in
// it, are valid only during the call: they refer to a buffer and a Session the
// worker reuses for its next. Source, Layout and Project stay valid. As with
// ReadCatalogs, a catalog that cannot be read is reported in the error, after
// every other was visited.
func VisitCatalogs(stateDir string, sources []string, projects []string, workers int, visit func(worker int, en Entry)) error {
	files, err := catalogPaths(stateDir, sources, projects)
	if err != nil {
		return err
	}
	want := wantProjects(projects)
	errs := make([]error, len(files)) // by file, so the error reads the same whatever the workers did
	var next atomic.Int64
	work := func(worker int) {
		var v catalogVisitor
		for {
			i := int(next.Add(1) - 1)
			if i >= len(files) {
				return
			}
			c, err := v.read(files[i])
			if err != nil {
				if !errors.Is(err, os.ErrNotExist) && !errors.Is(err, syscall.ENOTDIR) {
					errs[i] = err
				}
				continue
			}
			if want != nil && !want[c.Project] {
				continue
			}
			for _, s := range c.Sessions {
				visit(worker, Entry{Session: s, Source: c.Source, Layout: c.Layout, Project: c.Project})
			}
		}
	}
	workers = max(1, min(workers, len(files)/catalogsPerWorker))
	var wg sync.WaitGroup
	for w := 1; w < workers; w++ {
		wg.Go(func() { work(w) })
	}
	work(0)
	wg.Wait()
	return errors.Join(errs...)
}

// catalogsPerWorker is the fewest catalogs VisitCatalogs gives a goroutine of
// its own: a second worker cost `list --all` ~3 ms of CPU (its thread, and the
// runtime's spinning to schedule it), 7% at 200 catalogs of 100 sessions,
// which a worker's share must outweigh.
var catalogsPerWorker = 1000

// catalogVisitor reads catalogs through one reused buffer into reused
// sessions whose strings refer to the buffer.
type catalogVisitor struct {
	buf     []byte
	scratch catalogScratch
}

// read reads a catalog as readCatalogSummaries does, its sessions valid until
// the next read.
func (v *catalogVisitor) read(path string) (*Catalog, error) {
	var err error
	if v.buf, err = readFileInto(v.buf, path); err != nil {
		return nil, err
	}
	if c, ok := decodeCatalogWith(v.buf, false, nil, aliasStrings, &v.scratch); ok {
		return c, nil
	}
	// Not as Encode writes it (a hand-edited file): decoded in full, into
	// memory of its own.
	return decodeCatalogSummaries(path, v.buf)
}
