package indexer

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"syscall"
	"time"
)

// Options configures the Indexer of one source.
type Options struct {
	Source      string // source name: the catalog directory <state>/index/<source>
	Layout      string // layout name
	Root        string // absolute root of the store
	StateDir    string // sessionwatch's state directory
	NativeIndex bool   // maintain the layout's native index, if it has one
	Logger      *slog.Logger
	// Check makes the indexer write nothing: every write or removal it would make is
	// recorded as a difference instead (reindex --check).
	Check bool
	// Writer is the state directory's writer lock, taken around every pass that
	// may write (the daemon's indexers); nil when the caller holds it for the
	// whole run (a command's Writer) or writes nothing.
	Writer *WriterLock
	// CleanTemps lets the indexer remove sessionwatch temp files it finds in
	// the stores and catalog directories that predate this process: set only by
	// the daemon, whose passes hold the writer lock, so such a file is provably
	// abandoned by a crashed writer.
	CleanTemps bool
}

// Stats are counters of one Indexer.
type Stats struct {
	Sessions      int   // sessions in the catalog
	Projects      int   // projects with at least one session
	Bytes         int64 // total size of the sessions
	BytesRead     int64 // bytes read from session files since start
	SkippedLines  int   // invalid or over-long lines in the current sessions
	Reconciles    int   // full reconciles since start
	CatalogWrites int   // catalog files written or removed since start
	NativeWrites  int   // native index files written or removed since start
	WriteFailures int   // catalog or native index writes that failed since start
	RetryPending  bool  // a failed write waits for its retry
}

// Difference is one file a rebuild would change (reindex --check).
type Difference struct {
	Path   string
	Change string // "write" (missing or different) or "remove" (should not exist)
	Want   []byte // for "write": the content a rebuild produces
}

// Indexer maintains the catalogs (and native indexes) of one source. All methods
// are safe for concurrent use; a single mutex serializes them.
type Indexer struct {
	opt     Options
	log     *slog.Logger
	layout  Layout
	rootDir string // directory units are relative to (the root, or its parent for a file root)
	rootRel string // for a file root: the root's base name; "" otherwise

	configuredRoot string // the root as configured, before resolving symlinks
	rootPending    bool   // the root did not exist when resolved: resolve when it appears

	mu            sync.Mutex
	units         unitTab           // by unit path relative to rootDir (unittab.go)
	outputs       outputTab         // files this indexer wrote, by absolute path (outputs.go)
	baseKeys      map[string]string // ProjectKey of each project, until the next Reconcile
	keys          map[string]string // project → catalog key last written
	owners        map[string]string // catalog key → its project (keys reversed; setKeysLocked)
	rereads       map[string]string // units whose parked sessions were lost → their project (parksessions.go)
	dirtyDirs     map[string]bool
	dirtyProjects map[string]bool
	writes        writePool             // the current flush's writes, in flight
	batchPasses   bool                  // full passes make their outputs durable in one batch (BatchFullPasses)
	byProject     map[string][]*Session // writeCatalogsLocked's scratch, empty between flushes
	projects      map[string]bool       // writeCatalogsLocked's scratch too
	pendingErr    error                 // errors of writes waited for early, reported by the flush
	diffs         []Difference
	stats         Stats
	consumers     []Consumer        // fed by every read (consumer.go)
	touched       map[string]bool   // units whose sessions changed since consumers last synced
	verifying     bool              // the current pass checks fingerprints of unchanged files too
	refreshing    bool              // the current walk leaves unchanged native indexes alone
	unrestored    int               // catalog sessions Load could not restore as units
	lite          bool              // loaded by LoadLite: no accumulator states, no writes
	quick         bool              // the current full pass is Start's: only what changed is rendered
	parkedPass    bool              // the current full pass renders parked sessions in batches after its flush
	hot           []*unit           // line units whose accumulator is decoded, to park after a flush (startup.go)
	rendered      map[string]string // project → catalog key rendered by the current flush
	restored      []*Session        // LoadLite: every session restored to a unit, in catalog order
	probeGen      uint16            // the current Unchanged walk (nextProbeGenLocked)
	proof         *startScan        // Prove's listing, for Start (startscan_linux.go)
	rawStarts     int               // Starts that walked by a startScan (tests)

	gen      stamp       // the generation stamps when this indexer last looked
	genKnown bool        // gen was read (by Load or a write)
	failed   []dirtyMark // writes of the current flush that failed
	retryAt  time.Time   // when failed writes are retried
	backoff  time.Duration

	fetch         *prefetcher // the current full pass's read-ahead workers (prefetch.go)
	prefetched    int         // units installed from read-ahead workers since start
	prefetchPeak  int64       // most bytes of lines the workers held at once (under fetch.mu)
	statePeak     int         // VerifyOutputs: most units holding a state at one flush (for tests)
	sessionPeak   int         // with trackSessionPeak: most units holding sessions at one flush
	lastParked    parkedRead  // sessionsOfLocked's last catalog read, until a flush or write begins
	ktab          keyTab      // the catalog keys units name (keytab.go)
	rels          relArena    // Load's copies of the units' paths (unitlive.go)
	parkedReads   int         // catalogs read for parked sessions (for tests)
	verifyFetched bool        // the flush at hand is one of VerifyOutputs' (statePeak is kept)
	resCache      resumeCache // the resume file fetchStatesLocked last read (startup.go)
	tails         tailReader  // reads parked sessions back (parksessions.go)
}

// dirtyMark names what an output is the projection of, so a failed write can be
// marked dirty again.
type dirtyMark struct {
	native  bool
	dir     string // native: the project dir
	project string // catalog: the project
}

// Retry backoff after a failed write: doubling from retryMin up to retryMax.
const (
	retryMin = time.Second
	retryMax = time.Minute
)

// unit is what the indexer holds of one file it reads; a daemon holds one per
// file, and (its sessions parked) little else: 112 bytes (TestUnitSize).
type unit struct {
	rel string
	// live holds the unit's accumulator, its encoded state and its sessions
	// while any is in memory; nil for a parked unit (unitlive.go).
	live *unitLive
	tail unitTail
	// lazyKey (parked units only): the state is not in memory either, but in
	// the resume file of this catalog key, where the last flush left it. Both
	// keys are ids in ix.ktab (keytab.go): ix.lazyKeyOf, ix.skeyOf name them.
	lazyKey ckey
	// skey: the unit's sessions are not in memory (sessions is nil) but in the
	// catalog of this key, filed under its project (ix.owners[skey]), where the
	// last flush or Load left them; nsess, sbytes and sskip are their count,
	// their sizes' and skipped lines' sums (parksessions.go).
	skey ckey
	// skipped lines (the unit's, the parked sessions') are kept in the
	// tail's rare part (skips.go), as most units have none.
	sbytes int64
	nsess  int32
	probed uint16 // the last Unchanged walk that found it (probe.go)
	kind   UnitKind
	// parked: acc is not in memory; state (nil: a new accumulator's) is all of it,
	// decoded when the unit is next read or projected (startup.go).
	parked bool
}

type output struct {
	sum   uint64 // outputHash of the content
	size  int64
	mtime int64
	ino   uint64
}

// fileRoot is implemented by layouts whose root is one file (hyperyolo).
type fileRoot interface{ RootIsFile() bool }

// New prepares an Indexer; it reads and writes nothing until Load or Reconcile.
func New(opt Options) (*Indexer, error) {
	l, err := LookupLayout(opt.Layout)
	if err != nil {
		return nil, fmt.Errorf("source %s: %w", opt.Source, err)
	}
	if opt.Logger == nil {
		opt.Logger = slog.New(slog.DiscardHandler)
	}
	ix := &Indexer{
		opt:           opt,
		log:           opt.Logger.With("component", "indexer", "source", opt.Source),
		layout:        l,
		rootDir:       opt.Root,
		baseKeys:      map[string]string{},
		keys:          map[string]string{},
		dirtyDirs:     map[string]bool{},
		dirtyProjects: map[string]bool{},
		touched:       map[string]bool{},
		rendered:      map[string]string{},
	}
	if fr, ok := l.(fileRoot); ok && fr.RootIsFile() {
		ix.rootDir = filepath.Dir(opt.Root)
		ix.rootRel = filepath.Base(opt.Root)
	}
	ix.outputs.init(CatalogDir(opt.StateDir, opt.Source))
	return ix, nil
}

// Layout returns the indexer's layout.
func (ix *Indexer) Layout() Layout { return ix.layout }

// Options returns the options the indexer was made with.
func (ix *Indexer) Options() Options { return ix.opt }

// Load restores the indexer's state from the catalogs in the state directory, so a
// restart resumes every file at its stored offset. Unreadable catalogs are skipped
// (and rebuilt by the next Reconcile).
func (ix *Indexer) Load() error {
	ix.mu.Lock()
	defer ix.mu.Unlock()
	if w := ix.opt.Writer; w != nil && !ix.opt.Check {
		// Load under the lock: no rewrite lands half-way, and the stamps read
		// here match the catalogs read.
		if err := w.Lock(context.Background()); err != nil {
			return err
		}
		defer w.Unlock()
		gens := w.generations()
		ix.gen, ix.genKnown = stamp{all: gens[allSources], source: gens[ix.opt.Source]}, true
	}
	if !ix.opt.Check {
		ix.adoptLegacyLocked()
	}
	return ix.loadLocked()
}

// LoadLite is Load without the accumulators' states: enough for Unchanged and
// Entries (list and show without a daemon, when nothing changed), at a fraction
// of the reading. An indexer loaded so refuses to write: every later pass that
// could (Reconcile, Refresh, Update, Verify, Retry) returns ErrLite.
func (ix *Indexer) LoadLite() error {
	ix.mu.Lock()
	defer ix.mu.Unlock()
	ix.lite = true
	return ix.loadLocked()
}

// ErrLite is returned by a pass over an indexer loaded with LoadLite.
var ErrLite = errors.New("indexer loaded without resume states: it cannot write")

func (ix *Indexer) loadLocked() error {
	dir := CatalogDir(ix.opt.StateDir, ix.opt.Source)
	entries, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("load catalogs: %w", err)
	}
	var lr *liteReader
	if ix.lite {
		lr = &liteReader{}
	}
	type loaded struct {
		c   *Catalog
		key string
	}
	var cats []loaded
	n := 0
	for _, e := range entries {
		if !e.IsDir() {
			continue
		}
		path := filepath.Join(dir, e.Name(), CatalogName)
		var c *Catalog
		var data, resume []byte
		if lr != nil {
			// Nothing is written after LoadLite: no output to record.
			c, err = lr.read(path)
		} else {
			c, data, resume, err = readCatalogFiles(path, true)
		}
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil || c.Source != ix.opt.Source || c.Layout != ix.layout.Name() {
			ix.log.Warn("catalog unreadable, rebuilding", "file", path, "err", err)
			continue
		}
		if lr == nil {
			ix.recordOutput(path, outputHash(data))
			if resume != nil {
				ix.recordOutput(resumePath(path), outputHash(resume))
			}
		}
		cats = append(cats, loaded{c, e.Name()})
		n += len(c.Sessions)
	}
	ix.units.reserve(ix.units.len() + n) // a table sized once
	var slab *unitSlab
	if lr != nil {
		// A listing's units live for milliseconds: allocated together.
		slab = newUnitSlab(n)
		ix.restored = make([]*Session, 0, n)
	}
	var from map[*unit]string // the catalog key each unit's sessions came from ("": several)
	if lr == nil {
		from = make(map[*unit]string, n)
	}
	for _, l := range cats {
		ix.keys[l.c.Project] = l.key
		for _, s := range l.c.Sessions {
			u := ix.restoreLocked(s, l.key, slab)
			if u != nil && from != nil {
				if k, ok := from[u]; ok && k != l.key {
					from[u] = ""
				} else {
					from[u] = l.key
				}
			}
		}
	}
	ix.rels = relArena{} // its last block stays with the units cut from it
	ix.setKeysLocked(ix.keys)
	// The sessions just read are what their catalog holds: parked again.
	for u, k := range from {
		ix.parkSessionsLocked(u, k)
	}
	return nil
}

// unitSlab holds the units (and their first session slots) that restoreLocked
// takes in turn, for LoadLite.
type unitSlab struct {
	units    []unit
	lives    []unitLive
	sessions []*Session
}

// newUnitSlab is a slab for n units.
func newUnitSlab(n int) *unitSlab {
	return &unitSlab{units: make([]unit, n), lives: make([]unitLive, n), sessions: make([]*Session, n)}
}

// restoreLocked adds a catalog session to its unit, made if new (from slab
// when one is given); it returns the unit, nil when the session has none.
func (ix *Indexer) restoreLocked(s *Session, key string, slab *unitSlab) *unit {
	if s.Tail == nil {
		ix.unrestored++
		return nil
	}
	rel, ok := ix.relOf(s.File)
	if !ok {
		ix.unrestored++
		return nil
	}
	urel, kind := ix.layout.Classify(rel)
	if kind == UnitNone {
		ix.unrestored++
		return nil
	}
	u := ix.units.get(urel)
	if u != nil && u.skey != 0 {
		// Already restored from another catalog and parked there: the unit
		// keeps its sessions in memory.
		ix.unparkKeysLocked(map[string]bool{ix.skeyOf(u): true})
	}
	if u == nil {
		if slab != nil && len(slab.units) > 0 {
			u, slab.units = &slab.units[0], slab.units[1:]
			u.live, slab.lives = &slab.lives[0], slab.lives[1:]
			u.live.sessions, slab.sessions = slab.sessions[:0:1], slab.sessions[1:]
		} else {
			u = &unit{}
			// A part of the session's file name: copied, as the unit
			// outlives the session (parked) and the rest of the name.
			urel = ix.rels.clone(urel)
		}
		u.rel, u.kind = urel, kind
		u.tail.set(s.Tail)
		ix.units.put(u)
	}
	if kind == UnitLines && !ix.lite {
		if _, ok := ix.layout.(LineLayout); !ok {
			return nil
		}
		// The accumulator is made and its state decoded when first needed (an
		// append, a native index): a restart over 100k unchanged sessions makes none.
		u.setState(s.Tail.State)
		u.parked = true
		u.setSkipped(s.SkippedLines)
	}
	s.Dir = ix.layout.ProjectDir(urel)
	u.setSessions(append(u.sessions(), s))
	if slab != nil {
		ix.restored = append(ix.restored, s)
	}
	ix.lazyLocked(u, key, true)
	return u
}

// readMtime is the mtime to remember with a file read to end, stat'ed as fi
// before the read. When the read went past fi's size (an append landed
// meanwhile), fi's mtime is older than the bytes read: remembered with the
// larger size, the next look would see the same size with another mtime and
// take the file for rewritten, reading it all again. So the file is stat'ed
// again, and its mtime taken when its size is what was read.
func readMtime(f *os.File, fi fs.FileInfo, end int64) int64 {
	if end > fi.Size() {
		if now, err := f.Stat(); err == nil && now.Size() == end {
			return now.ModTime().UnixNano()
		}
	}
	return fi.ModTime().UnixNano()
}

// relOf maps an absolute path to a slash-separated path relative to rootDir.
func (ix *Indexer) relOf(path string) (string, bool) {
	// The common case, a clean path below the root (every walked path and every
	// catalog's file), without filepath.Rel's allocations.
	if rest, ok := strings.CutPrefix(path, ix.rootDir); ok && len(rest) > 1 && rest[0] == filepath.Separator {
		if rest = rest[1:]; isClean(rest) && rest != ".." && !strings.HasPrefix(rest, ".."+string(filepath.Separator)) {
			return filepath.ToSlash(rest), true
		}
	}
	rel, err := filepath.Rel(ix.rootDir, path)
	if err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
		return "", false
	}
	return filepath.ToSlash(rel), true
}

// Reconcile walks the whole source and brings the catalog in line with the files:
// unchanged files cost one stat, changed ones are read from their stored offset, and
// files that are gone leave the catalog. Every catalog and native index is verified
// and stale ones are removed.
func (ix *Indexer) Reconcile() error {
	return ix.write(ix.reconcileLocked)
}

// write runs fn holding the indexer's mutex and, as a writer of the state dir,
// its writer lock (reloading first what another writer changed meanwhile).
func (ix *Indexer) write(fn func() error) error {
	ix.mu.Lock()
	defer ix.mu.Unlock()
	end, err := ix.beginWriteLocked()
	if err != nil {
		return err
	}
	defer end()
	return fn()
}

// Verify is Reconcile that also proves every unchanged file unchanged, by its head
// and tail fingerprints (two reads of at most headWindow and fpWindow bytes per
// file): the periodic rescan, which catches a rewrite that kept size and mtime.
func (ix *Indexer) Verify() error {
	return ix.write(func() error {
		ix.verifying = true
		defer func() { ix.verifying = false }()
		return ix.reconcileLocked()
	})
}

// Refresh brings the catalogs up to date with the files at the least cost: a stat
// for every unchanged file, reads only of what changed, and writes only of the
// catalogs and native indexes that changed (list and show without a daemon).
func (ix *Indexer) Refresh() error {
	return ix.write(func() error {
		ix.refreshing = true
		_, err := ix.walkLocked(".")
		ix.refreshing = false
		if ferr := ix.flushLocked(); ferr != nil && err == nil {
			err = ferr
		}
		return err
	})
}

func (ix *Indexer) reconcileLocked() error {
	return ix.reconcileFlushLocked(ix.reconcileWalkLocked())
}

// reconcileWalkLocked is the first half of a full pass: the walk, which reads
// what changed and hands it to the consumers, and the marking of what the flush
// is to render. It writes nothing and syncs no consumer.
func (ix *Indexer) reconcileWalkLocked() error {
	ix.stats.Reconciles++
	clear(ix.baseKeys) // a full pass resolves project symlinks afresh
	// Parked sessions (a daemon's rescan) are rendered a batch of projects at
	// a time after the walk's own changes, as VerifyOutputs does, rather than
	// all brought back at once.
	ix.parkedPass = !ix.quick && ix.anyParkedLocked()
	ix.startPrefetchLocked()
	refreshing := ix.refreshing
	ix.refreshing = refreshing || ix.quick || ix.parkedPass // Start: unchanged native indexes are left alone
	var (
		natives map[string]bool
		scanned bool
		err     error
	)
	if ix.quick && ix.fetch == nil {
		natives, scanned = ix.scanStartLocked() // startscan_linux.go
	}
	if !scanned {
		natives, err = ix.walkLocked(".")
	}
	ix.refreshing = refreshing
	ix.stopPrefetchLocked()
	if ix.quick || ix.parkedPass {
		ix.nativePresenceLocked(natives)
	} else {
		ix.markAllLocked()
		for d := range natives {
			ix.dirtyDirs[d] = true
		}
	}
	return err
}

// reconcileFlushLocked is the second half of a full pass whose walk returned
// err: the flush (consumers' Sync, then the writes) and the sweeps.
func (ix *Indexer) reconcileFlushLocked(err error) error {
	// A rebuild's full pass writes every output: made durable in one batch.
	ix.writes.batch = ix.batchPasses
	ferr := ix.flushLocked()
	if ix.parkedPass {
		ix.parkedPass = false
		ferr = errors.Join(ferr, ix.renderAllLocked())
	}
	ix.writes.batch = false
	if ferr != nil && err == nil {
		err = ferr
	}
	ix.sweepCatalogsLocked()
	ix.adoptLegacyLocked()
	ix.cleanCatalogTempsLocked()
	return err
}

// Update re-examines the given absolute paths (files or directories, existing or
// not) and writes whatever catalogs and native indexes changed.
func (ix *Indexer) Update(paths []string) error {
	return ix.write(func() error {
		var errs []error
		for _, p := range paths {
			rel, ok := ix.relOf(p)
			if !ok {
				continue
			}
			if err := ix.updatePathLocked(rel); err != nil {
				errs = append(errs, err)
			}
		}
		if err := ix.flushLocked(); err != nil {
			errs = append(errs, err)
		}
		return errors.Join(errs...)
	})
}

func (ix *Indexer) updatePathLocked(rel string) error {
	if strings.HasPrefix(pathBase(rel), TempPrefix) {
		return nil
	}
	if ix.rootRel != "" && rel != ix.rootRel && rel != "." {
		return nil // a file root: only the file itself matters
	}
	if pathBase(rel) == CatalogName {
		ix.dirtyDirs[pathDir(rel)] = true
		return nil
	}
	fi, err := os.Lstat(filepath.Join(ix.rootDir, filepath.FromSlash(rel)))
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("stat %s: %w", filepath.Join(ix.rootDir, rel), err)
	}
	if err != nil || (fi.Mode()&fs.ModeSymlink != 0 && rel != ".") {
		// Gone, or a symlink now (never followed, as the walk does not): forget
		// it and everything under it, and re-check the unit it fed.
		ix.removeUnderLocked(rel, true)
		if urel, kind := ix.layout.Classify(rel); kind != UnitNone && urel != rel {
			ix.forceLocked(urel)
			return ix.updateUnitLocked(urel, kind)
		}
		return nil
	}
	if fi.IsDir() && ix.rootRel == "" {
		_, err := ix.walkLocked(rel)
		return err
	}
	if fi.Mode()&fs.ModeSymlink != 0 {
		return nil
	}
	urel, kind := ix.layout.Classify(rel)
	if rel != "." && ix.units.get(rel) == nil && (kind == UnitNone || ix.units.get(urel) == nil) {
		// Neither a known unit's file (an append to one is the common event)
		// nor inside one (units do not nest): it may be a directory that is a
		// file now, whose units go.
		ix.removeUnderLocked(rel, false)
	}
	if kind != UnitNone {
		if urel != rel {
			// A file the unit depends on (an attachment of a directory session)
			// changed: the unit's own stat may not have.
			ix.forceLocked(urel)
		}
		return ix.updateUnitLocked(urel, kind)
	}
	return nil
}

// removeUnderLocked forgets the units under rel, and rel's own (self).
func (ix *Indexer) removeUnderLocked(rel string, self bool) {
	var gone []string
	under := rel + "/"
	for u := range ix.units.all() {
		if urel := u.rel; (self && urel == rel) || rel == "." || strings.HasPrefix(urel, under) {
			gone = append(gone, urel)
		}
	}
	ix.removeUnitsLocked(gone)
}

// forceLocked makes the next read of a unit re-read it even if its stat is unchanged.
func (ix *Indexer) forceLocked(urel string) {
	if u := ix.units.get(urel); u != nil {
		u.tail.Mtime = -1
		if u.kind == UnitLines {
			u.setAcc(nil)
			u.setState(nil)
			u.parked = false
			ix.setLazyKey(u, "")
		}
	}
}

// walkLocked reconciles the subtree at rel ("." for all): every unit found is
// updated, every known unit below rel that was not found is removed. It returns the
// project dirs that hold a native index file.
func (ix *Indexer) walkLocked(rel string) (map[string]bool, error) {
	seen := map[string]bool{}
	natives := map[string]bool{}
	var walkErr error
	if ix.rootRel != "" {
		if urel, kind := ix.layout.Classify(ix.rootRel); kind != UnitNone {
			if _, err := os.Lstat(ix.opt.Root); err == nil {
				seen[urel] = true
				walkErr = ix.updateUnitLocked(urel, kind)
			}
		}
	} else {
		start := filepath.Join(ix.rootDir, filepath.FromSlash(rel))
		err := filepath.WalkDir(start, func(p string, d fs.DirEntry, err error) error {
			if err != nil {
				if p == start && errors.Is(err, fs.ErrNotExist) {
					return nil
				}
				ix.log.Warn("walk error", "path", p, "err", err)
				if d != nil && d.IsDir() {
					return filepath.SkipDir
				}
				return nil
			}
			r, _ := ix.relOf(p)
			if d.Type()&fs.ModeSymlink != 0 {
				return nil // never followed
			}
			if d.IsDir() {
				if r != "." && ix.layout.SkipDir(r) {
					if urel, kind := ix.layout.Classify(r); kind != UnitNone {
						seen[urel] = true
						ix.updateUnitLocked(urel, kind)
					}
					return filepath.SkipDir
				}
				return nil
			}
			name := d.Name()
			if name == CatalogName {
				natives[pathDir(r)] = true
				return nil
			}
			if strings.HasPrefix(name, TempPrefix) {
				if ix.opt.CleanTemps && !ix.opt.Check {
					removeStaleTemp(p, d)
				}
				return nil
			}
			urel, kind := ix.layout.Classify(r)
			if kind == UnitNone || seen[urel] {
				return nil
			}
			seen[urel] = true
			if err := ix.updateUnitLocked(urel, kind); err != nil {
				ix.log.Warn("index failed", "file", p, "err", err)
			}
			return nil
		})
		if err != nil {
			walkErr = err
		}
	}
	var gone []string
	for u := range ix.units.all() {
		if urel := u.rel; !seen[urel] && (rel == "." || urel == rel || strings.HasPrefix(urel, rel+"/")) {
			gone = append(gone, urel)
		}
	}
	ix.removeUnitsLocked(gone)
	if !ix.refreshing {
		for d := range natives {
			ix.dirtyDirs[d] = true
		}
	}
	return natives, walkErr
}

// processStart is when this process started: a temp file of ours older than that
// was left by a process that died mid-write (SIGKILL, power loss).
var processStart = time.Now()

// removeStaleTemp removes a sessionwatch temp file that a crashed process left in a
// store: only the daemon calls it, within a pass that holds the writer lock, so
// no other catalog writer is writing; one of this process's own is younger.
func removeStaleTemp(path string, d fs.DirEntry) {
	if strings.HasPrefix(d.Name(), RetirePrefix) {
		return // a session being retired: the janitor's recovery owns it
	}
	if fi, err := d.Info(); err == nil && fi.Mode().IsRegular() && fi.ModTime().Before(processStart) {
		os.Remove(path)
	}
}

// removeUnitsLocked forgets units whose files are gone, then re-reads the units
// related to them.
func (ix *Indexer) removeUnitsLocked(urels []string) {
	for _, urel := range urels {
		ix.removeUnitLocked(urel)
	}
	for _, urel := range urels {
		ix.relatedLocked(urel)
	}
}

// removeUnitLocked forgets a unit; it reports whether there was one.
func (ix *Indexer) removeUnitLocked(urel string) bool {
	u := ix.units.get(urel)
	if u == nil {
		return false
	}
	ix.setSessionsLocked(u, nil)
	ix.setLazyKey(u, "")
	ix.units.del(urel)
	if len(ix.consumers) > 0 {
		ref := ix.unitRef(u)
		for _, c := range ix.consumers {
			c.Remove(ref)
		}
	}
	return true
}

func (ix *Indexer) setSessionsLocked(u *unit, ss []*Session) {
	for _, s := range u.sessions() {
		ix.dirtyDirs[s.Dir] = true
		ix.dirtyProjects[s.Project] = true
	}
	if u.skey != 0 {
		// Parked: they leave the catalog they are in.
		ix.dirtyDirs[ix.layout.ProjectDir(u.rel)] = true
		ix.dirtyProjects[ix.parkedProject(u)] = true
		ix.setSkey(u, "")
		u.nsess, u.sbytes = 0, 0
		u.setSSkip(0)
	}
	for _, s := range ss {
		ix.dirtyDirs[s.Dir] = true
	}
	u.setSessions(ss)
	ix.touched[u.rel] = true
}

func statIdentity(fi fs.FileInfo) (dev, ino uint64) {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return uint64(st.Dev), uint64(st.Ino)
	}
	return 0, 0
}

// updateUnitLocked brings one unit up to date with its file and, if that changed
// anything, re-reads the units related to it.
func (ix *Indexer) updateUnitLocked(urel string, kind UnitKind) error {
	changed, err := ix.readUnitLocked(urel, kind)
	if changed {
		if rerr := ix.relatedLocked(urel); err == nil {
			err = rerr
		}
	}
	return err
}

// relatedLocked force-re-reads the units related to urel (Relater).
func (ix *Indexer) relatedLocked(urel string) error {
	r, ok := ix.layout.(Relater)
	if !ok {
		return nil
	}
	var err error
	for _, rel := range r.Related(urel) {
		ix.forceLocked(rel)
		if _, k := ix.layout.Classify(rel); k != UnitNone {
			if _, rerr := ix.readUnitLocked(rel, k); rerr != nil && err == nil {
				err = rerr
			}
		}
	}
	return err
}

// readUnitLocked reads one unit; changed reports whether its sessions may differ.
func (ix *Indexer) readUnitLocked(urel string, kind UnitKind) (changed bool, err error) {
	path := ix.unitPath(urel)
	switch kind {
	case UnitLines:
		return ix.updateLinesLocked(urel, path)
	case UnitDocument:
		return ix.updateDocumentLocked(urel, path)
	}
	return false, nil
}

func (ix *Indexer) updateLinesLocked(urel, path string) (bool, error) {
	ll, ok := ix.layout.(LineLayout)
	if !ok {
		return false, fmt.Errorf("layout %s has no line parser", ix.layout.Name())
	}
	if ix.fetchedLocked(urel, path) {
		return true, nil // read and folded by a worker (prefetch.go)
	}
	if u := ix.units.get(urel); u != nil && u.hasState() && !ix.verifying {
		// Unchanged by its stat: one lstat, no open.
		if fi, err := os.Lstat(path); err == nil && fi.Mode().IsRegular() && fi.Size() == u.tail.Size && fi.ModTime().UnixNano() == u.tail.Mtime && fi.Size() >= u.tail.Offset {
			// A consumer behind the catalog (it was loaded from another
			// writer's flush: a restore or clean while the daemon runs) is
			// handed what it lacks below.
			if dev, ino := statIdentity(fi); dev == u.tail.Dev && ino == u.tail.Ino && !ix.consumersBehindLocked(u) {
				return false, nil
			}
		}
	}
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0) // a FIFO does not block: not regular, below
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ELOOP) {
			return ix.removeUnitLocked(urel), nil
		}
		return false, fmt.Errorf("open %s: %w", path, err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return false, fmt.Errorf("stat %s: %w", path, err)
	}
	if !fi.Mode().IsRegular() {
		return ix.removeUnitLocked(urel), nil
	}
	dev, ino := statIdentity(fi)
	u := ix.units.get(urel)
	if u == nil {
		u = &unit{rel: urel, kind: UnitLines}
		ix.units.put(u)
	}
	mtime := fi.ModTime().UnixNano()
	same := u.hasState() && u.tail.Dev == dev && u.tail.Ino == ino && fi.Size() >= u.tail.Offset
	unchanged := same && u.tail.Size == fi.Size() && u.tail.Mtime == mtime
	if unchanged {
		if ix.verifying {
			// The periodic rescan also proves the consumed bytes unchanged at
			// their two ends: a rewrite that kept size and mtime is caught
			// within an hour.
			ok, err := ix.fingerprintsMatchLocked(f, u.tail.Offset, u.tail.Fp(), u.tail.Hfp())
			if err != nil {
				return false, fmt.Errorf("read %s: %w", path, err)
			}
			if !ok {
				same, unchanged = false, false
			}
		}
		if unchanged && !ix.consumersBehindLocked(u) {
			return false, nil // unchanged: stat only
		}
	}
	// The same size with another mtime is a rewrite in place, not an append.
	reset := !same || (!unchanged && fi.Size() == u.tail.Size)
	oldOffset := u.tail.Offset
	if !reset && oldOffset > 0 {
		// Same inode, grown: make sure the consumed bytes are still there (a
		// truncate-and-regrow between two looks leaves the size past the offset;
		// a rewrite of the start shows in the head).
		ok, err := ix.fingerprintsMatchLocked(f, u.tail.Offset, u.tail.Fp(), u.tail.Hfp())
		if err != nil {
			return false, fmt.Errorf("read %s: %w", path, err)
		}
		reset = !ok
	}
	if !reset && !ix.decodeStateLocked(u) {
		reset = true
	}
	if reset {
		// New, replaced, rewritten or truncated: read from the start.
		u.setAcc(ll.NewAccumulator(urel))
		u.setState(nil)
		u.parked = false
		ix.setLazyKey(u, "")
		sskip := u.sskip()
		u.tail = newUnitTail(dev, ino) // no skipped lines of its own
		u.setSSkip(sskip)              // the parked sessions' stay theirs
		oldOffset = 0
	}
	feed, err := ix.catchUpConsumersLocked(f, u, reset)
	if err != nil {
		return false, fmt.Errorf("read %s: %w", path, err)
	}
	acc := u.acc()
	head := headCollector{from: oldOffset, sum: u.tail.Hfp()}
	rt := Tail{Offset: u.tail.Offset, LongLine: u.tail.LongLine()}
	skipped := u.skipped() // counted here, set once: each set copies the tail's rare part
	st, err := readLines(f, &rt, func(off int64, line []byte) {
		head.line(line)
		line = bytes.TrimSpace(line)
		if len(line) == 0 {
			return
		}
		if line[0] != '{' {
			skipped++
			return
		}
		if acc.Line(line) != nil {
			skipped++
		}
		feed(off, line)
	})
	u.tail.Offset = rt.Offset
	u.tail.SetLongLine(rt.LongLine)
	ix.stats.BytesRead += st.BytesRead
	u.setSkipped(skipped + st.Long)
	if err != nil {
		return true, fmt.Errorf("read %s: %w", path, err)
	}
	size := fi.Size()
	if end := u.tail.Offset; end > size {
		size = end
	}
	u.tail.Size = size
	u.tail.Mtime = readMtime(f, fi, u.tail.Offset)
	fp, n, err := Fingerprint(f, u.tail.Offset)
	ix.stats.BytesRead += n
	if err != nil {
		return true, fmt.Errorf("read %s: %w", path, err)
	}
	u.tail.SetFp(fp)
	// The head changes only while the offset is inside it (it was just verified
	// otherwise); the lines just read continue its hash.
	if oldOffset < headWindow {
		hfp, ok := "", false
		if st.Long == 0 && !rt.LongLine {
			hfp, ok = head.fingerprint(u.tail.Offset)
		}
		if !ok {
			hfp, n, err = HeadFingerprint(f, u.tail.Offset)
			ix.stats.BytesRead += n
			if err != nil {
				return true, fmt.Errorf("read %s: %w", path, err)
			}
		}
		u.tail.SetHfp(hfp)
	}
	if len(ix.consumers) > 0 {
		ref := ix.unitRef(u)
		for _, c := range ix.consumers {
			c.Done(ref, u.tail.Offset, fp)
		}
	}
	ix.summarizeLinesLocked(u, path)
	return true, nil
}

// decodeStateLocked decodes a restored unit's accumulator state, once; false
// means it cannot be decoded (the unit must be re-read from the start).
func (ix *Indexer) decodeStateLocked(u *unit) bool {
	ix.unparkLocked(u)
	if !u.hasState() {
		return false // forced: read again from the start
	}
	if u.state() == nil {
		return true
	}
	st := u.state()
	u.setState(nil)
	if len(st) > 0 && json.Unmarshal(st, u.acc()) != nil {
		ix.log.Warn("catalog state unreadable, re-reading", "unit", u.rel)
		ix.forceLocked(u.rel)
		return false
	}
	return true
}

// fingerprintsMatchLocked reports whether the bytes before t.Offset still hold
// what was indexed, by the tail fingerprint and (where one was recorded: catalogs
// of older versions have none) the head fingerprint.
func (ix *Indexer) fingerprintsMatchLocked(f *os.File, offset int64, tfp, thfp string) (bool, error) {
	fp, n, err := Fingerprint(f, offset)
	ix.stats.BytesRead += n
	if err != nil || fp != tfp {
		return false, err
	}
	if thfp == "" {
		return true, nil
	}
	hfp, n, err := HeadFingerprint(f, offset)
	ix.stats.BytesRead += n
	return hfp == thfp, err
}

func (ix *Indexer) summarizeLinesLocked(u *unit, path string) {
	t := u.tail.get()
	s := &Session{File: path, SizeBytes: t.Size, SkippedLines: u.skipped(), Tail: &t}
	u.acc().Summarize(s, FileFacts{Root: ix.rootDir, Unit: u.rel, Path: path, Size: t.Size, Mtime: time.Unix(0, t.Mtime)})
	s.Dir = ix.layout.ProjectDir(u.rel)
	st, err := marshalNoEscape(u.acc())
	if err == nil && string(st) != "{}" {
		s.Tail.State = st
	}
	s.acc = u.acc()
	if len(u.sessions()) == 1 {
		s.Project = u.sessions()[0].Project
	} else if u.skey != 0 && u.nsess == 1 {
		s.Project = ix.parkedProject(u)
	}
	ix.setSessionsLocked(u, []*Session{s})
	ix.hot = append(ix.hot, u)
}

func (ix *Indexer) updateDocumentLocked(urel, path string) (bool, error) {
	dl, ok := ix.layout.(DocumentLayout)
	if !ok {
		return false, fmt.Errorf("layout %s has no document parser", ix.layout.Name())
	}
	fi, err := os.Lstat(path)
	if err != nil || !fi.Mode().IsRegular() {
		if err == nil || errors.Is(err, fs.ErrNotExist) {
			return ix.removeUnitLocked(urel), nil
		}
		return false, fmt.Errorf("stat %s: %w", path, err)
	}
	dev, ino := statIdentity(fi)
	mtime := fi.ModTime().UnixNano()
	dep := ""
	if ds, ok := ix.layout.(DependencyStamper); ok {
		dep = ds.DepStamp(ix.rootDir, urel)
	}
	u := ix.units.get(urel)
	unchanged := u != nil && u.tail.Dev == dev && u.tail.Ino == ino && u.tail.Size == fi.Size() && u.tail.Mtime == mtime && u.tail.Dep() == dep
	if unchanged && !ix.consumersBehindLocked(u) {
		return false, nil
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return false, fmt.Errorf("read %s: %w", path, err)
	}
	ix.stats.BytesRead += int64(len(data))
	facts := FileFacts{Root: ix.rootDir, Unit: urel, Path: path, Size: int64(len(data)), Mtime: fi.ModTime()}
	ss, err := dl.ParseDocument(facts, data)
	if err != nil {
		// Keep what we had: a half-written document must not drop sessions.
		return false, fmt.Errorf("parse %s: %w", path, err)
	}
	if unchanged {
		// Only a consumer attached since is behind: hand it the document.
		ref := ix.unitRef(u)
		for _, c := range ix.consumers {
			if off, fp, ok := c.Resume(ref); !ok || off != u.tail.Offset || !u.tail.fpIs(fp) {
				c.Document(ref, data, ix.sessionsOfLocked(u))
				c.Done(ref, u.tail.Offset, u.tail.Fp())
			}
		}
		return false, nil
	}
	if u == nil {
		u = &unit{rel: urel, kind: UnitDocument}
		ix.units.put(u)
	}
	sskip := u.sskip()
	u.tail = unitTail{Dev: dev, Ino: ino, Size: int64(len(data)), Offset: int64(len(data)), Mtime: mtime}
	u.tail.setRare("", "", dep, false)
	u.setSSkip(sskip) // the parked sessions' until setSessionsLocked
	old := map[string]string{}
	for _, s := range u.sessions() {
		old[s.ID] = s.Project
	}
	parkedIn := "" // parked: every session was filed under this project
	if u.skey != 0 {
		parkedIn = ix.parkedProject(u)
	}
	for _, s := range ss {
		t := u.tail.get()
		if s.Tail != nil {
			t.State, t.OwnProject = s.Tail.State, s.Tail.OwnProject
		}
		s.Tail = &t
		if s.File == "" {
			s.File = path
		}
		if s.SizeBytes == 0 {
			s.SizeBytes = int64(len(data))
		}
		s.Project = old[s.ID]
		if parkedIn != "" {
			s.Project = parkedIn
		}
		s.Dir = ix.layout.ProjectDir(urel)
	}
	ix.setSessionsLocked(u, ss)
	if len(ix.consumers) > 0 {
		ref := ix.unitRef(u)
		for _, c := range ix.consumers {
			c.Document(ref, data, ss)
			c.Done(ref, u.tail.Offset, u.tail.Fp())
		}
	}
	return true, nil
}

// Sessions returns a snapshot of every session of the source. The parked ones
// are read from their catalogs for it (and not kept).
func (ix *Indexer) Sessions() []*Session {
	ix.mu.Lock()
	defer ix.mu.Unlock()
	var out []*Session
	for u := range ix.units.all() {
		for _, s := range u.sessions() {
			c := *s
			out = append(out, &c)
		}
	}
	ix.parkedSessionsLocked(func(s *Session) { out = append(out, s) })
	SortSessions(out)
	return out
}

// Stats returns the indexer's counters.
func (ix *Indexer) Stats() Stats {
	ix.mu.Lock()
	defer ix.mu.Unlock()
	return ix.stats
}

// Differences returns what a Check-mode indexer found.
func (ix *Indexer) Differences() []Difference {
	ix.mu.Lock()
	defer ix.mu.Unlock()
	out := append([]Difference(nil), ix.diffs...)
	sort.Slice(out, func(i, j int) bool { return out[i].Path < out[j].Path })
	return out
}

// unitPath is the absolute path of a unit.
func (ix *Indexer) unitPath(urel string) string {
	return filepath.Join(ix.rootDir, filepath.FromSlash(urel))
}

// Root returns the source root: its real path when it is a symlink.
func (ix *Indexer) Root() string { return ix.opt.Root }

// ConfiguredRoot returns the root as configured ("" for an indexer made by New).
func (ix *Indexer) ConfiguredRoot() string { return ix.configuredRoot }

func pathBase(rel string) string {
	if i := strings.LastIndexByte(rel, '/'); i >= 0 {
		return rel[i+1:]
	}
	return rel
}

func pathDir(rel string) string {
	if i := strings.LastIndexByte(rel, '/'); i >= 0 {
		return rel[:i]
	}
	return ""
}
