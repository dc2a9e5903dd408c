package indexer

import (
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
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

	rootPlain bool // rootDir + "/" + a plain unit path is clean (unitPath)

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
	releaseAfter  bool                  // Release follows the next full pass (WillRelease)
	skipPark      bool                  // the flush parks nothing: Release follows it
	byProject     map[string][]*Session // writeCatalogsLocked's scratch, empty between flushes
	projects      map[string]bool       // writeCatalogsLocked's scratch too
	pendingErr    error                 // errors of writes waited for early, reported by the flush
	bgSync        *bgSync               // a batched flush's consumer syncs, running (syncbg.go)
	syncErr       error                 // their failure, for the flush to return
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
	feedPeak      int64       // most bytes the consumers' queues held at once (feed.go)
	aheadRead     int         // units read ahead by the last prefetch (tests)
	aheadSkipped  int         // units it skipped as cached (tests)
	aheadHanded   int         // files it opened that a worker or the walk read (tests)
	aheadOpen     int         // files it left open at its end (tests: none)
	aheadOpenPeak int         // most files it held open at once (tests)
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
	ix.rootPlain = filepath.Separator == '/' && ix.rootDir != "/" && ix.rootDir != "." && isClean(ix.rootDir)
	ix.outputs.init(CatalogDir(opt.StateDir, opt.Source))
	return ix, nil
}

// Layout returns the indexer's layout.
func (ix *Indexer) Layout() Layout { return ix.layout }

// Options returns the options the indexer was made with.
func (ix *Indexer) Options() Options { return ix.opt }

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
	// Parked sessions are brought back and rendered a batch at a time
	// (renderAllLocked), each batch parked again; otherwise, when Release
	// follows, nothing need be parked.
	ix.skipPark = ix.releaseAfter && !ix.parkedPass
	ferr := ix.flushLocked()
	ix.skipPark = false
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
	var seen map[string]bool
	if rel == "." {
		n := ix.units.len()
		if ix.fetch != nil {
			n = max(n, len(ix.fetch.items))
		}
		seen = make(map[string]bool, n)
	} else {
		seen = map[string]bool{} // a subtree: a few units, as a rule
	}
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
		plain := filepath.Separator == '/' && start != "/" && start != "." && isClean(start)
		var lists listings
		if ix.fetch != nil && rel == "." {
			lists = ix.fetch.lists // the tree as the prefetcher listed it, just now
		}
		err := walkTree(start, plain, lists, nil, func(p string, d fs.DirEntry, err error) error {
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
		ix.drainFeedsLocked()
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

// unitPath is the absolute path of a unit: filepath.Join's, without its Clean
// (a pass asks it of every unit two or three times) when there is nothing to
// clean.
func (ix *Indexer) unitPath(urel string) string {
	if ix.rootPlain && plainRel(urel) {
		return ix.rootDir + "/" + urel
	}
	return filepath.Join(ix.rootDir, filepath.FromSlash(urel))
}

// plainRel reports whether rel is a relative slash path whose every element is
// a name (none empty, "." or ".."): one that joining to a clean directory
// leaves clean.
func plainRel(rel string) bool {
	start := 0
	for i := 0; i <= len(rel); i++ {
		if i < len(rel) && rel[i] != '/' {
			continue
		}
		if el := rel[start:i]; el == "" || el == "." || el == ".." {
			return false
		}
		start = i + 1
	}
	return true
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
