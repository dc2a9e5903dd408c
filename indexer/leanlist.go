package indexer

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"syscall"
)

// ProveVisit is ProveLean for each of ixs (fresh indexers, each of one
// source) and VisitCatalogs of the sources named (nil: every source with
// catalogs, every project) at once, reading each catalog once for both: list
// --all without a daemon, which printed the catalogs after proving them, read
// every catalog twice (and the proof decoded its head with encoding/json).
//
// Work is shared by workers goroutines, not a goroutine per source: a
// source's catalogs are read in chunks by any worker (its sessions visited,
// their tails matched to the catalog lines, as ProveLean does), and once all
// are read its walk (the stat of every file: Unchanged) is run by the first
// worker free, before any other catalog, so the walks of several sources run
// beside the reading of the rest and the cores stay busy to the end.
//
// visit is called as VisitCatalogs calls it (worker in [0, workers), never
// twice at once with the same number; the Session and its strings are valid
// only during the call), for every session of every catalog VisitCatalogs
// would read, whether or not the proofs pass; once a proof fails, the rest
// of the catalogs are visited no more (the caller lists the usual way: a
// source not proven is refreshed). Once every catalog is visited, and no
// proof failed, visited is called (if not nil) by a worker that has nothing
// else to do, before ProveVisit returns: beside the walks still running.
// proven[i] is what ixs[i].ProveLean would
// have answered; visited reports whether every catalog was visited; err is
// what VisitCatalogs would have returned.
func ProveVisit(stateDir string, sources []string, ixs []*Indexer, workers int, visit func(worker int, en Entry), visited func()) (proven []bool, all bool, err error) {
	if sources == nil {
		ents, err := os.ReadDir(filepath.Join(stateDir, "index"))
		if err != nil && !errors.Is(err, os.ErrNotExist) {
			return make([]bool, len(ixs)), false, err
		}
		for _, e := range ents {
			if e.IsDir() {
				sources = append(sources, e.Name())
			}
		}
	}
	pv := &proveVisit{visit: visit, after: visited, proven: make([]bool, len(ixs))}
	// A source to prove is read as ProveLean reads it; one to list and not
	// prove (not configured, or not this listing's) as VisitCatalogs does.
	listed := map[string]bool{}
	for _, src := range sources {
		listed[src] = true
	}
	for i, ix := range ixs {
		src := ix.opt.Source
		lp := &leanSource{ix: ix, i: i, name: src, listed: listed[src]}
		delete(listed, src)
		pv.addSource(lp, CatalogDir(stateDir, src))
	}
	for _, src := range sources {
		if listed[src] {
			delete(listed, src)
			pv.addSource(&leanSource{i: -1, name: src, listed: true}, filepath.Join(stateDir, "index", src))
		}
	}
	pv.parts = max(1, workers)
	pv.run(max(1, workers))
	// The errors in the catalogs' order, as VisitCatalogs reports them: by
	// source as sources names them, then by catalog.
	chunks := slices.Clone(pv.tasks)
	slices.SortStableFunc(chunks, func(a, b *leanChunk) int {
		return slices.Index(sources, a.src.name) - slices.Index(sources, b.src.name)
	})
	var errs []error
	for _, c := range chunks {
		errs = append(errs, c.errs...)
	}
	return pv.proven, !pv.failed, errors.Join(errs...)
}

// proveVisit is one ProveVisit: its tasks and their results.
type proveVisit struct {
	visit func(worker int, en Entry)
	after func() // when every catalog is visited

	mu      sync.Mutex
	cond    sync.Cond
	tasks   []*leanChunk // catalog chunks, in order
	next    int          // the next chunk to take
	walks   []walkTask   // sources whose catalogs are all read, to walk
	parts   int          // the parts of a split walk
	pending int          // sources not yet done
	reading int          // chunks taken, not yet read
	proven  []bool
	failed  bool // a proof failed: visit no more
}

// leanSource is one source of a ProveVisit: ix is nil for a source only
// listed (i -1). Its chunks fill in what its walk needs.
type leanSource struct {
	ix     *Indexer
	name   string
	i      int  // index in ixs
	listed bool // its catalogs are visited
	chunks []*leanChunk
	left   int  // chunks not yet read
	bad    bool // its catalog directory does not list: not proven

	// A split walk (finish): the root listed once, and what each part
	// found; the last part to end judges (walkPart).
	root      *rootListing
	parts     int
	partsLeft int
	partsOK   bool
	marks     []map[*unit]struct{}
}

// walkTask is a source to finish (part -1: its units, then its walk, or
// the listing of its root for a split walk), or a part of its split walk.
type walkTask struct {
	lp   *leanSource
	part int
}

// leanChunk is a run of one source's catalogs, read by one worker.
type leanChunk struct {
	src   *leanSource
	keys  []string // catalog keys (directory names), in order
	files []string // their catalog files
	prove []bool   // whether ProveLean reads it (a directory, as it lists)
	adds  []leanAdd
	errs  []error
	bad   bool // a catalog does not prove: not proven (ProveLean false)
}

// leanAdd is one catalog session's unit, as ProveLean's add takes it.
type leanAdd struct {
	key  string // catalog key
	urel string // the unit (relOf and Classify of the session's file)
	kind UnitKind
	tail unitTail
}

// leanChunkSize is the number of catalogs in a chunk: small enough that the
// workers end together, large enough that taking one costs nothing.
const leanChunkSize = 32

// addSource lists a source's catalogs as both readers list them: ProveLean
// the directories of its catalog directory, VisitCatalogs every entry
// (catalogFiles; a read finds out what is no directory).
func (pv *proveVisit) addSource(lp *leanSource, dir string) {
	pv.pending++
	var names []string
	var dirs map[string]bool
	if lp.ix != nil {
		ents, err := os.ReadDir(dir)
		if err != nil && !errors.Is(err, os.ErrNotExist) {
			lp.bad = true
		}
		dirs = make(map[string]bool, len(ents))
		for _, e := range ents {
			names = append(names, e.Name())
			dirs[e.Name()] = e.IsDir()
		}
	} else {
		f, err := os.Open(dir)
		if err == nil {
			names, _ = f.Readdirnames(-1)
			f.Close()
		}
	}
	slices.Sort(names)
	var c *leanChunk
	for _, n := range names {
		prove := dirs[n] && !lp.bad
		if !prove && !lp.listed {
			continue
		}
		if c == nil || len(c.files) == leanChunkSize {
			c = &leanChunk{src: lp}
			lp.chunks = append(lp.chunks, c)
			pv.tasks = append(pv.tasks, c)
		}
		c.keys = append(c.keys, n)
		c.files = append(c.files, filepath.Join(dir, n, CatalogName))
		c.prove = append(c.prove, prove)
	}
	lp.left = len(lp.chunks)
	if lp.left == 0 {
		pv.walks = append(pv.walks, walkTask{lp, -1})
	}
}

// run runs the tasks on workers goroutines (this one among them).
func (pv *proveVisit) run(workers int) {
	pv.cond.L = &pv.mu
	var wg sync.WaitGroup
	for w := 1; w < workers; w++ {
		wg.Go(func() { pv.work(w) })
	}
	pv.work(0)
	wg.Wait()
}

// work takes tasks until none is left: a source ready to walk first, else
// the next chunk of catalogs.
func (pv *proveVisit) work(worker int) {
	var r leanReader
	pv.mu.Lock()
	defer pv.mu.Unlock()
	for pv.pending > 0 {
		switch {
		case len(pv.walks) > 0:
			wt := pv.walks[0]
			pv.walks = pv.walks[1:]
			pv.mu.Unlock()
			var ok, done bool
			if wt.part < 0 {
				ok, done = wt.lp.finish(pv.parts)
			} else {
				ok, done = wt.lp.walkPart(wt.part)
			}
			pv.mu.Lock()
			if !done && wt.part >= 0 {
				continue // the other parts judge
			}
			if !done {
				// Split: its parts before anything else.
				parts := make([]walkTask, wt.lp.parts)
				for k := range parts {
					parts[k] = walkTask{wt.lp, k}
				}
				pv.walks = append(parts, pv.walks...)
				pv.cond.Broadcast()
				continue
			}
			if wt.lp.ix != nil {
				pv.proven[wt.lp.i] = ok
				pv.failed = pv.failed || !ok
			}
			pv.pending--
			pv.cond.Broadcast()
		case pv.next < len(pv.tasks):
			c := pv.tasks[pv.next]
			pv.next++
			pv.reading++
			skipVisit := pv.failed
			pv.mu.Unlock()
			r.read(c, worker, skipVisit, pv.visit)
			pv.mu.Lock()
			pv.reading--
			if c.src.left--; c.src.left == 0 {
				pv.walks = append(pv.walks, walkTask{c.src, -1})
				pv.cond.Broadcast()
			}
		case pv.after != nil && pv.reading == 0 && !pv.failed:
			after := pv.after
			pv.after = nil
			pv.mu.Unlock()
			after()
			pv.mu.Lock()
		default:
			pv.cond.Wait() // another worker's walk or chunk
		}
	}
	if pv.after != nil && !pv.failed {
		// Not run by a worker (one, or each busy to the end): after the walks.
		after := pv.after
		pv.after = nil
		pv.mu.Unlock()
		after()
		pv.mu.Lock()
	}
}

// finish is the rest of ProveLean once a source's catalogs are read: the
// units of its sessions, in the catalogs' order, then the walk (done), or,
// where the walk can be split in parts (more than one, Linux's raw walk of a
// directory root), the root's listing for the parts (not done: walkPart).
// False for a source only listed.
func (lp *leanSource) finish(parts int) (ok, done bool) {
	if lp.ix == nil {
		return false, true
	}
	n := 0
	for _, c := range lp.chunks {
		n += len(c.adds)
	}
	ix := lp.ix
	ix.mu.Lock()
	defer ix.mu.Unlock()
	if lp.bad || ix.units.len() > 0 || ix.rootPending {
		return false, true
	}
	for _, c := range lp.chunks {
		if c.bad {
			return false, true
		}
	}
	ix.lite = true
	ix.units.clear()
	ix.units.reserve(n)
	for _, c := range lp.chunks {
		for i := range c.adds {
			a := &c.adds[i]
			ix.leanUnitLocked(a.key, a.urel, a.kind, &a.tail)
		}
		c.adds = nil
	}
	if parts > 1 && ix.unrestored == 0 {
		if l, ok := ix.listRoot(); ok {
			lp.root, lp.parts, lp.partsLeft, lp.partsOK = l, parts, parts, true
			lp.marks = make([]map[*unit]struct{}, parts)
			return false, false
		}
	}
	ok = ix.unchangedLocked()
	ix.spendLocked() // its units are garbage, whatever the listing still holds
	return ok, true
}

// walkPart walks a part of the root finish listed, as Unchanged walks it,
// beside the other parts (each takes the root's entries no other took, so a
// part that starts late takes fewer): the indexer is ProveVisit's alone and nothing
// changes it until the last part ends, so each reads it without its lock,
// and marks the units it finds in a set of its own (not unit.probed). The
// last part to end judges the whole (done): every part found nothing
// changed, and together every unit.
func (lp *leanSource) walkPart(part int) (ok, done bool) {
	ix := lp.ix
	p := prober{ix: ix, marks: make(map[*unit]struct{}, ix.units.len()/lp.parts+1)}
	partOK := p.walkPart(lp.root)
	ix.mu.Lock()
	defer ix.mu.Unlock()
	lp.partsOK = lp.partsOK && partOK
	lp.marks[part] = p.marks
	if lp.partsLeft--; lp.partsLeft > 0 {
		return false, false
	}
	lp.root.close()
	ok = lp.partsOK
	if ok {
		// Units found by two parts (through another file) count once.
		found := lp.marks[0]
		for _, m := range lp.marks[1:] {
			for u := range m {
				found[u] = struct{}{}
			}
		}
		ok = len(found) == ix.units.len()
	}
	lp.marks = nil
	ix.spendLocked()
	return ok, true
}

// leanReader is a worker's buffers, reused from one catalog to the next.
type leanReader struct {
	lr      liteReader
	v       catalogVisitor
	sums    []uint32
	tails   []Tail
	head    []byte // a resume file's expected first line
	entries []resumeEntry
	adds    []leanAdd
	spans   []span // of each add's file in files
	files   []byte // the chunk's files, copied out of the reused buffers
}

// span is where a string is in a buffer.
type span struct{ start, end int }

// read reads a chunk's catalogs: each is visited (unless skipVisit) and,
// where it is proved, its sessions' units are added to the chunk as
// ProveLean's unitTails finds them, from the same bytes.
func (r *leanReader) read(c *leanChunk, worker int, skipVisit bool, visit func(worker int, en Entry)) {
	lp := c.src
	r.files, r.spans, r.adds = r.files[:0], r.spans[:0], r.adds[:0]
	// add is ProveLean's, but for the map: its unit, found here (relOf and
	// Classify are pure), is made by finish.
	add := func(key, file string, t *Tail) {
		rel, ok := lp.ix.relOf(file)
		if !ok {
			c.bad = true
			return
		}
		urel, kind := lp.ix.layout.Classify(rel)
		if kind == UnitNone {
			c.bad = true
			return
		}
		start := len(r.files)
		r.files = append(r.files, urel...)
		r.spans = append(r.spans, span{start, len(r.files)})
		r.adds = append(r.adds, leanAdd{key: key, kind: kind})
		r.adds[len(r.adds)-1].tail.set(t) // without the state and the own project
	}
	for k, path := range c.files {
		prove := c.prove[k] && !c.bad
		listed := lp.listed && !skipVisit
		if !prove && !listed {
			continue
		}
		var err error
		r.v.buf, err = readFileInto(r.v.buf, path)
		if err != nil {
			if !errors.Is(err, os.ErrNotExist) && !errors.Is(err, syscall.ENOTDIR) {
				if listed {
					c.errs = append(c.errs, err)
				}
				c.bad = c.bad || prove // as ProveLean: not proven
			}
			continue
		}
		r.sums = r.sums[:0]
		cat, fast := decodeCatalogWith(r.v.buf, false, &r.sums, aliasStrings, &r.v.scratch)
		if listed {
			vc := cat
			if !fast {
				// As catalogVisitor.read: decoded in full, into memory of its own.
				if vc, err = decodeCatalogSummaries(path, r.v.buf); err != nil {
					c.errs = append(c.errs, err)
				}
			}
			if vc != nil {
				for _, s := range vc.Sessions {
					visit(worker, Entry{Session: s, Source: vc.Source, Layout: vc.Layout, Project: vc.Project})
				}
			}
		}
		if !prove {
			continue
		}
		ix := lp.ix
		if fast && cat.Source == ix.opt.Source && cat.Layout == ix.layout.Name() {
			if entries, ok := r.resumeInStep(path, cat); ok {
				r.tails = slices.Grow(r.tails[:0], len(cat.Sessions))[:len(cat.Sessions)]
				whole := true
				for i := range cat.Sessions {
					r.tails[i] = Tail{}
					if whole = tailLiteJSON(entries[i].tail, &r.tails[i]); !whole {
						break // read in full, below
					}
				}
				if whole {
					for i, s := range cat.Sessions {
						add(c.keys[k], s.File, &r.tails[i])
					}
					continue
				}
			}
		}
		// Not as the writer leaves it: read in full (a catalog of an older
		// version holds its tails), as ProveLean does.
		full, err := r.lr.read(path)
		if err != nil || full.Source != ix.opt.Source || full.Layout != ix.layout.Name() {
			c.bad = true
			continue
		}
		for _, s := range full.Sessions {
			if s.Tail == nil {
				c.bad = true
				break
			}
			add(c.keys[k], s.File, s.Tail)
		}
	}
	// One string for the chunk's units' paths, which they share, and the
	// adds in memory of their own, of their size.
	all := string(r.files)
	c.adds = slices.Clone(r.adds)
	for i, sp := range r.spans {
		c.adds[i].urel = all[sp.start:sp.end]
	}
}

// resumeInStep reads the tails of the resume file of the catalog at path,
// decoded as cat (with r.sums), and returns them when they are in step with
// its lines, entry i the tail of session i (checksum, file and id), as the
// writer leaves them; else ok false (unitTails's test).
func (r *leanReader) resumeInStep(path string, cat *Catalog) ([]resumeEntry, bool) {
	res, err := readResumeTailsInto(resumePath(path), r.lr.res, resumeTailsHint(cat))
	r.lr.res = res
	if err != nil {
		return nil, false
	}
	var ok bool
	r.head, r.entries, ok = decodeResumeLite(res, cat, r.head, r.entries)
	if !ok || len(r.entries) < len(cat.Sessions) || len(r.sums) != len(cat.Sessions) {
		return nil, false
	}
	for i, s := range cat.Sessions {
		e := &r.entries[i]
		if e.sum != r.sums[i] || !jsonStringIs(e.file, s.File) || !jsonStringIs(e.id, s.ID) {
			return nil, false
		}
	}
	return r.entries, true
}
