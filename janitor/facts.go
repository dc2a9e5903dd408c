package janitor

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/sessionwatch/sessionwatch/config"
	"github.com/sessionwatch/sessionwatch/indexer"
)

// LockSuffix is the generic lock sidecar of a session file: <file>.lock (SPEC §3.5).
const LockSuffix = ".lock"

// lockPaths lists the lock files that mark s in use: the layout's own, then the
// generic <file>.lock sidecar.
func lockPaths(l indexer.Layout, s *indexer.Session) []string {
	var out []string
	seen := map[string]bool{}
	add := func(p string) {
		if p != "" && !seen[p] {
			seen[p] = true
			out = append(out, p)
		}
	}
	if lk, ok := l.(indexer.Locker); ok {
		for _, p := range lk.LockFiles(s) {
			add(p)
		}
	}
	if fr, ok := l.(interface{ RootIsFile() bool }); ok && fr.RootIsFile() {
		// A store file's <file>.lock (HyperYOLO's lock directory) guards the
		// whole store for a moment, not one session: it is judged by the
		// store's own protocol (hyperyolo.go), not as a session lock.
		return out
	}
	add(s.File + LockSuffix)
	return out
}

// liveSessions asks the layout's registry (if any) which sessions run, keeping
// the ones whose pid is alive.
func liveSessions(l indexer.Layout, root string, alive func(int) bool) map[string]int {
	ll, ok := l.(indexer.LiveLister)
	if !ok {
		return nil
	}
	m, err := ll.LiveSessions(root)
	if err != nil {
		return nil
	}
	out := map[string]int{}
	for id, pid := range m {
		if alive(pid) {
			out[id] = pid
		}
	}
	return out
}

// scanOpenFiles reads /proc/*/fd once and returns, for every open file under one
// of the roots, a pid that holds it. Paths are given as seen through the
// configured root even when the kernel reports the resolved one. Processes we
// may not inspect (other users') are skipped; pids in exclude (ourselves, the
// daemon) are ignored.
func scanOpenFiles(roots []string, exclude map[int]bool) map[string]int {
	// resolved root → configured root
	prefixes := map[string]string{}
	for _, r := range roots {
		prefixes[r] = r
		if real, err := filepath.EvalSymlinks(r); err == nil {
			prefixes[real] = r
		}
	}
	out := map[string]int{}
	procs, err := os.ReadDir("/proc")
	if err != nil {
		return out
	}
	for _, p := range procs {
		pid, err := strconv.Atoi(p.Name())
		if err != nil || exclude[pid] {
			continue
		}
		dir := "/proc/" + p.Name() + "/fd"
		fds, err := os.ReadDir(dir)
		if err != nil {
			continue
		}
		for _, fd := range fds {
			target, err := os.Readlink(dir + "/" + fd.Name())
			if err != nil || !strings.HasPrefix(target, "/") || strings.HasSuffix(target, " (deleted)") {
				continue
			}
			for real, root := range prefixes {
				if target == real || strings.HasPrefix(target, real+"/") {
					out[root+target[len(real):]] = pid
				}
			}
		}
	}
	return out
}

// gatherer collects the facts about the sessions of one source in one pass.
type gatherer struct {
	now        time.Time
	root       string // the source root, clean and absolute
	rootDev    uint64
	rootIsDir  bool
	rootUnsafe string // why nothing under the root may be touched, or ""
	layout     indexer.Layout
	openFn     func() map[string]int // path → pid holding it open; nil = not checked
	live       map[string]int        // session id → live pid of the agent's registry
	staleAfter time.Duration         // janitor.lock_stale_after; 0 = never by age
	alive      func(int) bool
	proc       func(int) Proc       // a lock's pid: alive, and since when
	restored   map[string]time.Time // file → when it was restored
	shared     map[string]int       // file → sessions naming it
	dirs       map[string]string    // dir → "" when safe, else why not
}

// newGatherer prepares the facts that are per source: the root, the live
// registry, and which files hold several sessions.
func newGatherer(now time.Time, ix *indexer.Indexer, sessions []*indexer.Session, openFn func() map[string]int, staleAfter time.Duration, restored map[string]time.Time) *gatherer {
	g := &gatherer{
		now: now, root: filepath.Clean(ix.Root()), layout: ix.Layout(), openFn: openFn,
		staleAfter: staleAfter, alive: PIDAlive, proc: ProcInfo, restored: restored,
		shared: map[string]int{}, dirs: map[string]string{},
	}
	if fi, err := os.Stat(g.root); err == nil {
		g.rootIsDir = fi.IsDir()
		g.rootDev = devOf(fi)
	}
	// The root was resolved to its real directory when the indexer was built;
	// if it (or a directory above it) has since become a symlink, every path
	// below it now leads through that link: touch nothing until it is resolved
	// again (a restart or a config reload).
	if g.rootIsDir {
		if real, err := filepath.EvalSymlinks(g.root); err != nil || real != g.root {
			g.rootUnsafe = fmt.Sprintf("the source root %s is now a symlink (to %s): restart or reload sessionwatch so it is resolved again", g.root, real)
		}
	}
	g.live = liveSessions(g.layout, g.root, g.alive)
	for _, s := range sessions {
		g.shared[s.File]++
	}
	return g
}

func devOf(fi fs.FileInfo) uint64 {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return uint64(st.Dev)
	}
	return 0
}

// inside reports whether path lies strictly below the root.
func (g *gatherer) inside(path string) bool {
	return strings.HasPrefix(path, g.root+string(filepath.Separator)) && filepath.Clean(path) == path
}

// parentsSafe checks every directory between the root and path (exclusive): none
// may be a symlink or on another filesystem. It returns why not, or "".
func (g *gatherer) parentsSafe(path string) string {
	var chain []string
	for d := filepath.Dir(path); d != g.root && len(d) > len(g.root); d = filepath.Dir(d) {
		chain = append(chain, d)
	}
	for i := len(chain) - 1; i >= 0; i-- {
		d := chain[i]
		why, ok := g.dirs[d]
		if !ok {
			fi, err := os.Lstat(d)
			switch {
			case errors.Is(err, fs.ErrNotExist):
				why = "" // the path itself will be missing
			case err != nil:
				why = fmt.Sprintf("cannot stat %s: %v", d, err)
			case fi.Mode()&fs.ModeSymlink != 0:
				why = fmt.Sprintf("%s is a symlink (never followed)", d)
			case !fi.IsDir():
				why = fmt.Sprintf("%s is not a directory", d)
			case g.rootDev != 0 && devOf(fi) != g.rootDev:
				why = fmt.Sprintf("%s is on another filesystem", d)
			}
			g.dirs[d] = why
		}
		if why != "" {
			return why
		}
	}
	return ""
}

// tree is what gathering found under one path: its size, newest mtime, files.
type tree struct {
	bytes int64
	mtime time.Time
	files []string // every regular file (a file path: itself)
}

// measure looks at one session path without following symlinks: a regular file,
// or a directory whose every entry is a regular file or directory on the root's
// filesystem. missing is set when it does not exist; unsafe says why it must not
// be touched.
func (g *gatherer) measure(path string) (t tree, missing bool, unsafe string) {
	fi, err := os.Lstat(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return t, true, ""
	case err != nil:
		return t, false, fmt.Sprintf("cannot stat %s: %v", path, err)
	case fi.Mode()&fs.ModeSymlink != 0:
		return t, false, fmt.Sprintf("%s is a symlink (never followed)", path)
	case fi.Mode().IsRegular():
		return tree{bytes: fi.Size(), mtime: fi.ModTime(), files: []string{path}}, false, ""
	case !fi.IsDir():
		return t, false, fmt.Sprintf("%s is not a regular file", path)
	}
	err = filepath.WalkDir(path, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		switch {
		case info.Mode()&fs.ModeSymlink != 0:
			return fmt.Errorf("%s is a symlink (never followed)", p)
		case g.rootDev != 0 && devOf(info) != g.rootDev:
			return fmt.Errorf("%s is on another filesystem", p)
		case info.Mode().IsRegular():
			t.bytes += info.Size()
			t.files = append(t.files, p)
		case !info.IsDir():
			return fmt.Errorf("%s is not a regular file", p)
		}
		if info.ModTime().After(t.mtime) {
			t.mtime = info.ModTime()
		}
		return nil
	})
	if err != nil {
		return tree{}, false, err.Error()
	}
	return t, false, ""
}

// fromCatalog is a session's candidate as the catalog alone describes it, with
// no look at the disk: its transcript, recorded size and recorded file mtime
// (zero, i.e. "old", when the catalog has none, so it is gathered in full).
func (g *gatherer) fromCatalog(s *indexer.Session) Candidate {
	c := Candidate{Session: s, Paths: []string{s.File}, Bytes: s.SizeBytes, Restored: g.restored[s.File]}
	if s.Tail != nil && s.Tail.Mtime > 0 {
		c.Mtime = time.Unix(0, s.Tail.Mtime)
	}
	return c
}

// candidate gathers the facts about one session.
func (g *gatherer) candidate(s *indexer.Session) Candidate {
	c := Candidate{Session: s, Restored: g.restored[s.File]}
	if !g.rootIsDir {
		c.Unsafe = "a record of a single-file store (not retired by this version)"
		return c
	}
	if g.rootUnsafe != "" {
		c.Unsafe = g.rootUnsafe
		return c
	}
	if !g.inside(s.File) {
		c.Unsafe = "outside the source root " + g.root
		return c
	}
	if n := g.shared[s.File]; n > 1 {
		c.Unsafe = fmt.Sprintf("one of %d records in the shared file %s (not retired by this version)", n, s.File)
		return c
	}
	primary := s.File
	rel := filepath.ToSlash(strings.TrimPrefix(s.File, g.root+string(filepath.Separator)))
	switch unit, kind := g.layout.Classify(rel); {
	case kind == indexer.UnitLines:
		// One transcript, one session.
	case kind == indexer.UnitDocument && strings.HasPrefix(unit, rel+"/"):
		// The session is a directory (Mogzi's <uuid>/ holding session.json).
	case kind == indexer.UnitDocument:
		c.Unsafe = "a record inside the store file " + s.File + " (records are not retired by this version)"
		return c
	default:
		c.Unsafe = s.File + " is not a session file of layout " + g.layout.Name()
		return c
	}
	paths := []string{primary}
	if cp, ok := g.layout.(indexer.Companioner); ok {
		for _, p := range cp.Companions(s) {
			p = filepath.Clean(p)
			if p == primary || strings.HasPrefix(p, primary+string(filepath.Separator)) {
				continue
			}
			if !g.inside(p) {
				c.Unsafe = fmt.Sprintf("companion %s is outside the source root", p)
				return c
			}
			paths = append(paths, p)
		}
	}
	var files []string
	for i, p := range paths {
		if why := g.parentsSafe(p); why != "" {
			c.Unsafe = why
			return c
		}
		t, missing, unsafe := g.measure(p)
		if unsafe != "" {
			c.Unsafe = unsafe
			return c
		}
		if missing {
			if i == 0 {
				c.Missing = true
				return c
			}
			continue // a companion that does not exist
		}
		c.Paths = append(c.Paths, p)
		c.Bytes += t.bytes
		if t.mtime.After(c.Mtime) {
			c.Mtime = t.mtime
		}
		files = append(files, t.files...)
	}
	g.locks(&c)
	if pid, ok := g.live[s.ID]; ok && !c.Hold.Hard {
		c.Hold = Hold{PID: pid, Why: "registered as running in its agent's session registry", Hard: true}
	}
	if !c.Hold.Held() && g.openFn != nil {
		open := g.openFn()
		for _, f := range files {
			if pid, ok := open[f]; ok {
				c.Hold = Hold{PID: pid, Why: fmt.Sprintf("holds %s open", f)}
				break
			}
		}
	}
	return c
}

// locks judges the session's lock files: a held one becomes a hard hold, stale
// ones (regular files inside the root) are noted for removal with the session.
func (g *gatherer) locks(c *Candidate) {
	for _, p := range lockPaths(g.layout, c.Session) {
		l, ok, err := ReadLock(p)
		if errors.Is(err, syscall.ENAMETOOLONG) {
			// Not "in use": nothing is known to hold it. But unchecked, it is
			// never retired.
			c.Unsafe = lockNameTooLong(p)
			continue
		}
		if err != nil {
			c.Hold = Hold{Why: err.Error(), Hard: true} // cannot tell: treat as held
			continue
		}
		if !ok {
			continue
		}
		v := JudgeLock(g.now, l, g.staleAfter, g.proc)
		if v.Held {
			if !c.Hold.Hard {
				c.Hold = Hold{PID: v.PID, Why: v.Reason, Hard: true}
			}
			continue
		}
		if fi, err := os.Lstat(p); err == nil && fi.Mode().IsRegular() && g.inside(p) && g.parentsSafe(p) == "" {
			c.StaleLocks = append(c.StaleLocks, p)
		}
	}
}

// lockNameTooLong is the reason a session whose lock path cannot exist on its
// filesystem (a 255-byte session file name plus ".lock") is left alone.
func lockNameTooLong(p string) string {
	return "cannot check lock " + p + ": name too long"
}

// recheckLocks re-reads a candidate's lock files just before its files are
// removed: a lock taken since the pass began still wins.
func (g *gatherer) recheckLocks(c *Candidate) (Hold, bool) {
	for _, p := range lockPaths(g.layout, c.Session) {
		l, ok, err := ReadLock(p)
		if errors.Is(err, syscall.ENAMETOOLONG) {
			return Hold{Why: lockNameTooLong(p), Hard: true}, true
		}
		if err != nil {
			return Hold{Why: err.Error(), Hard: true}, true
		}
		if !ok {
			continue
		}
		if v := JudgeLock(g.now, l, g.staleAfter, g.proc); v.Held {
			return Hold{PID: v.PID, Why: v.Reason, Hard: true}, true
		}
	}
	return Hold{}, false
}

// LiveChecker answers "is this session in use?" for `list` and `show` from the
// lock files and the agents' live registries only: unlike a janitor pass it does
// not scan /proc for open files, which would cost a walk of every process per
// listing and is only needed before something is removed.
type LiveChecker struct {
	now        time.Time
	staleAfter time.Duration
	roots      map[string]string          // source → root
	live       map[string]map[string]int  // source → live registry, read once
	dirs       map[string]map[string]bool // dir → its entry names, read once (nil: unreadable)
	few        bool                       // a few sessions: each lock path is looked up itself
	listings   int                        // directories listed (for tests)
}

// NewLiveChecker prepares a checker for the sources of cfg.
func NewLiveChecker(cfg *config.Config) *LiveChecker {
	c := &LiveChecker{now: time.Now(), staleAfter: enabledDur(cfg.Janitor.LockStaleAfter), roots: map[string]string{}, live: map[string]map[string]int{}, dirs: map[string]map[string]bool{}}
	for _, s := range cfg.Sources {
		c.roots[s.Name] = filepath.Clean(s.Root)
	}
	return c
}

// NewLiveCheckerFor is NewLiveChecker for n sessions. For a few (search
// results, one session shown) each lock path is looked up itself (one lstat,
// which fails for the usual absent lock) instead of listing its directory, which
// for one row of a directory of thousands of sessions costs far more than the
// lookup it spares.
func NewLiveCheckerFor(cfg *config.Config, n int) *LiveChecker {
	c := NewLiveChecker(cfg)
	c.few = n <= fewSessions
	return c
}

// fewSessions: up to this many sessions, lock paths are looked up one by one.
const fewSessions = 64

// InUse reports what holds the session, if anything: a held lock file or a live
// registered process.
func (c *LiveChecker) InUse(en indexer.Entry) Hold {
	l, err := indexer.LookupLayout(en.Layout)
	if err != nil || en.Session == nil {
		return Hold{}
	}
	for _, p := range lockPaths(l, en.Session) {
		if !c.mayExist(p) {
			continue
		}
		li, ok, err := ReadLock(p)
		if err != nil || !ok {
			continue
		}
		if v := JudgeLock(c.now, li, c.staleAfter, ProcInfo); v.Held {
			return Hold{PID: v.PID, Why: v.Reason, Hard: true}
		}
	}
	live, ok := c.live[en.Source]
	if !ok {
		if root, known := c.roots[en.Source]; known {
			live = liveSessions(l, root, PIDAlive)
		}
		c.live[en.Source] = live
	}
	if pid, ok := live[en.ID]; ok {
		return Hold{PID: pid, Why: "registered as running in its agent's session registry", Hard: true}
	}
	return Hold{}
}

// mayExist reports whether path can exist: false only when its directory, listed
// once per checker, has no entry of that name. A listing of 10,000 sessions then
// reads ~100 directories instead of stat'ing 10,000 absent lock files.
func (c *LiveChecker) mayExist(path string) bool {
	if c.few {
		return true // ReadLock's lstat answers
	}
	dir, name := filepath.Split(path)
	names, ok := c.dirs[dir]
	if !ok {
		c.listings++
		if f, err := os.Open(dir); err == nil {
			list, err := f.Readdirnames(-1)
			f.Close()
			if err == nil {
				names = make(map[string]bool, len(list))
				for _, n := range list {
					names[n] = true
				}
			}
		}
		c.dirs[dir] = names
	}
	return names == nil || names[name]
}

// enabledDur is the span of an enabled Duration, else 0.
func enabledDur(d config.Duration) time.Duration {
	if d.Enabled() {
		return d.D
	}
	return 0
}
