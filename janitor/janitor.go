package janitor

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/google/uuid"
	"github.com/robfig/cron/v3"
	"github.com/sessionwatch/sessionwatch/config"
	"github.com/sessionwatch/sessionwatch/indexer"
)

// Options are the seams of a Janitor.
type Options struct {
	// Now is the clock of a pass (default time.Now); tests pin it.
	Now func() time.Time
	// OnPass, when set, receives the report of every pass, from the goroutine
	// that ran it; it must not block.
	OnPass func(Report)
	// Tmux is how the collab-terminals reconcile reaches tmux; the zero value
	// runs "tmux" from PATH with this process's environment.
	Tmux Tmux
}

// Overrides are the flags of `clean` for one pass.
type Overrides struct {
	Source      string        // only this source ("" = every enabled source)
	OlderThan   time.Duration // > 0: retire what is older than this instead of the retention
	InvalidOnly bool          // retire only invalid and corrupt sessions
	MaxSessions int           // > 0: keep only the newest N main sessions per project
	DryRun      bool          // report, change nothing
	// Auto marks a pass the user did not ask for (the daemon's, `run --once`):
	// on a machine where the janitor never ran it only previews, unless
	// janitor.first_run is "apply" (firstrun.go).
	Auto bool
}

// Warning is a project over its size or count limit.
type Warning struct {
	Source   string `json:"source"`
	Project  string `json:"project"`
	Sessions int    `json:"-"`
	Bytes    int64  `json:"bytes"`
	Message  string `json:"message"`
	Hint     string `json:"hint"`
}

// Report is what one pass did (or, dry, would do).
type Report struct {
	Time         time.Time `json:"time"`
	DryRun       bool      `json:"dryRun"`
	Took         string    `json:"took"`
	Retired      int       `json:"retired"` // archived + deleted
	Archived     int       `json:"archived"`
	Deleted      int       `json:"deleted"`
	SkippedInUse int       `json:"skippedInUse"` // due, but in use or recently active
	Skipped      int       `json:"skipped"`      // due, but corrupt, unsafe or unsupported
	// BytesFreed is what left the session stores and the archive directory:
	// the size of retired sessions plus expired archives.
	BytesFreed int64 `json:"bytesFreed"`
	// RecordsRemoved are collab terminal records whose tmux session was gone
	// (kept in records.jsonl); Orphans are live tmux sessions no record names,
	// OrphansKilled those of them killed (kill_orphans).
	RecordsRemoved int       `json:"recordsRemoved"`
	Orphans        int       `json:"orphans"`
	OrphansKilled  int       `json:"orphansKilled"`
	Warnings       []Warning `json:"warnings"`
	Actions        []Action  `json:"actions"`
	Errors         []string  `json:"errors,omitempty"`
	// Preview: the first pass on a machine where the janitor never ran, which
	// only reports (DryRun is set too; see Overrides.Auto).
	Preview bool `json:"preview,omitempty"`
}

// Janitor runs passes over the sources of a group: on a cron schedule (Run), or
// one now (RunOnce, Delete, Restore). Passes are serialized across processes by
// a flock; the Janitor is safe for concurrent use.
type Janitor struct {
	cfg   *config.Config
	group *indexer.Group
	log   *slog.Logger
	opt   Options

	mu          sync.Mutex
	last        *Report
	projectDirs map[string]bool   // sources seen to have project directories
	notes       map[string]string // lasting conditions already logged (key → why), see noteChanged
	orphans     map[string]uint8  // "source\x00tmux session" → orphanLogged|orphanJournaled
	recovered   bool              // start-up recovery ran (recover.go)
}

// New prepares a janitor for the group's sources; it starts nothing. The
// schedule is checked here so a bad one fails at start-up.
func New(cfg *config.Config, g *indexer.Group, logger *slog.Logger, opt Options) (*Janitor, error) {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	if opt.Now == nil {
		opt.Now = time.Now
	}
	j := &Janitor{cfg: cfg, group: g, log: logger.With("component", "janitor"), opt: opt, projectDirs: map[string]bool{},
		notes: map[string]string{}, orphans: map[string]uint8{}}
	if cfg.Janitor.Scheduled() {
		if _, err := newCron(cfg.Janitor.Schedule, j.log, func() {}); err != nil {
			return nil, err
		}
	}
	return j, nil
}

// Run runs one pass at start (janitor.run_at_start), then passes on the
// schedule until ctx ends; it waits for a running pass before returning.
func (j *Janitor) Run(ctx context.Context) error {
	job := func() {
		if ctx.Err() != nil {
			return
		}
		if _, err := j.RunOnce(ctx, Overrides{Auto: true}); err != nil && ctx.Err() == nil {
			j.log.Error("janitor pass failed", "err", err)
		}
	}
	if j.cfg.Janitor.RunAtStart {
		cron.Recover(cronLogger{j.log})(cron.FuncJob(job)).Run()
	}
	if !j.cfg.Janitor.Scheduled() {
		<-ctx.Done()
		return nil
	}
	c, err := newCron(j.cfg.Janitor.Schedule, j.log, job)
	if err != nil {
		return err
	}
	runCron(ctx, c)
	return nil
}

// noteChanged records why a lasting condition (a store left alone, a skipped
// reconcile) holds for key, "" when it no longer does, and reports whether
// that changed: such a condition is logged once, not at every pass.
func (j *Janitor) noteChanged(key, why string) bool {
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.notes[key] == why {
		return false
	}
	if why == "" {
		delete(j.notes, key)
	} else {
		j.notes[key] = why
	}
	return true
}

// LastReport returns the report of the last pass, if there was one.
func (j *Janitor) LastReport() (Report, bool) {
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.last == nil {
		return Report{}, false
	}
	return *j.last, true
}

// ErrUnknownSource: an override names a source that is not enabled.
var ErrUnknownSource = errors.New("unknown or disabled source")

// sourceOf returns the config of an indexer's source.
func (j *Janitor) sourceOf(ix *indexer.Indexer) config.Source {
	name := ix.Options().Source
	for _, s := range j.cfg.Sources {
		if s.Name == name {
			return s
		}
	}
	return config.Source{Name: name, Action: config.ActionArchive}
}

// excluded are the pids whose open files do not mean "in use": ourselves and
// the sessionwatch daemon of this state dir (its indexer opens files briefly).
func (j *Janitor) excluded() map[int]bool {
	out := map[int]bool{os.Getpid(): true}
	data, err := os.ReadFile(filepath.Join(j.cfg.StateDir, "daemon.pid"))
	if err == nil {
		if pid, err := strconv.Atoi(strings.TrimSpace(string(data))); err == nil {
			out[pid] = true
		}
	}
	return out
}

// pass is the state of one pass.
type pass struct {
	j        *Janitor
	ctx      context.Context
	now      time.Time
	dry      bool
	jr       *journal
	rep      *Report
	roots    []string       // the roots of the pass's sources
	open     map[string]int // files held open, scanned on first need
	restored map[string]time.Time
	// forceOpen retires a file another process holds open (delete --force).
	forceOpen bool
}

// openFiles scans /proc once per pass, the first time a session due for
// retirement needs the answer: a pass with nothing due never walks /proc.
func (p *pass) openFiles() map[string]int {
	if p.open == nil {
		p.open = scanOpenFiles(p.roots, p.j.excluded())
	}
	return p.open
}

// RunOnce runs one pass now with the given overrides and returns its report.
// The error is for a pass that could not run (bad overrides, the pass lock);
// failures of single actions are in Report.Errors, and nothing is lost by them.
func (j *Janitor) RunOnce(ctx context.Context, o Overrides) (Report, error) {
	ixs := j.group.Indexers()
	if o.Source != "" {
		ix := j.group.Indexer(o.Source)
		if ix == nil {
			return Report{}, fmt.Errorf("%w: %q", ErrUnknownSource, o.Source)
		}
		ixs = []*indexer.Indexer{ix}
	}
	if o.OlderThan < 0 || o.MaxSessions < 0 {
		return Report{}, errors.New("janitor: negative override")
	}
	dry := j.cfg.Janitor.DryRun || o.DryRun
	preview := false
	if !dry {
		release, err := lockPass(ctx, j.cfg.StateDir)
		if err != nil {
			return Report{}, err
		}
		defer release()
		j.recoverOnce()
		preview = j.previewFirst(o)
		dry = preview
	}
	start := time.Now()
	now := j.opt.Now()
	rep := &Report{Time: now.UTC(), DryRun: dry, Preview: preview, Warnings: []Warning{}, Actions: []Action{}}
	p := &pass{j: j, ctx: ctx, now: now, dry: dry, jr: newJournal(j.cfg.StateDir, dry), rep: rep,
		restored: loadPins(j.cfg.StateDir)}
	var names []string
	for _, ix := range ixs {
		p.roots = append(p.roots, filepath.Clean(ix.Root()))
		names = append(names, ix.Options().Source)
	}
	for _, ix := range ixs {
		if err := ctx.Err(); err != nil {
			p.fail("pass interrupted", err)
			break
		}
		p.source(ix, j.sourceOf(ix), o)
	}
	if ctx.Err() == nil {
		p.expireArchives(names)
	}
	if !dry {
		prunePins(j.cfg.StateDir, p.restored)
	}
	if err := p.jr.close(); err != nil {
		p.fail("journal", err)
	}
	rep.Took = time.Since(start).Round(time.Millisecond).String()
	tally(rep)
	if !dry || preview {
		if err := j.endPass(rep, o.Source); err != nil {
			p.fail("journal", err)
		}
	}
	j.mu.Lock()
	j.last = rep
	j.mu.Unlock()
	// One summary line per pass; one that retired something (or would have,
	// in a first-run preview) says how to see and undo it.
	attrs := []any{"dryRun", dry, "retired", rep.Retired, "archived", rep.Archived, "deleted", rep.Deleted,
		"skippedInUse", rep.SkippedInUse, "bytesFreed", rep.BytesFreed, "warnings", len(rep.Warnings), "errors", len(rep.Errors), "took", rep.Took}
	switch {
	case preview:
		j.log.Info("janitor first pass is a preview: nothing retired", append(attrs, "hint", passHint(rep, j.cfg.StateDir))...)
	case rep.Retired > 0 && !dry:
		j.log.Info("janitor pass done", append(attrs, "hint", passHint(rep, j.cfg.StateDir))...)
	default:
		j.log.Info("janitor pass done", attrs...)
	}
	if j.opt.OnPass != nil {
		j.opt.OnPass(*rep)
	}
	return *rep, nil
}

// tally fills the report's counters from its actions.
func tally(rep *Report) {
	for _, a := range rep.Actions {
		if a.Error != "" {
			continue
		}
		switch a.Kind {
		case KindArchive:
			rep.Archived++
			rep.BytesFreed += a.Bytes
		case KindDelete:
			rep.Deleted++
			rep.BytesFreed += a.Bytes
		case KindExpireArchive:
			rep.BytesFreed += a.Bytes
		case KindSkipInUse:
			rep.SkippedInUse++
		case KindSkip:
			rep.Skipped++
		case KindRemoveRecord:
			rep.RecordsRemoved++
		case KindOrphan:
			rep.Orphans++
		case KindKillOrphan:
			rep.OrphansKilled++
		}
	}
	rep.Retired = rep.Archived + rep.Deleted
}

// fail notes an error of the pass.
func (p *pass) fail(what string, err error) {
	msg := what + ": " + err.Error()
	p.rep.Errors = append(p.rep.Errors, msg)
	p.j.log.Warn("janitor action failed", "what", what, "err", err)
}

// record adds an action to the report and, when it succeeded, to the journal.
// A plain skip (corrupt, symlink, outside the root, unsupported store) is not
// journaled: it is a lasting condition that every hourly pass would repeat; it
// is in the report, which `clean` prints.
//
// A failed action is journaled (with its error) only when it changed the disk
// part-way: an archive written, or some files removed, so the journal accounts
// for every archive and every removal.
//
// Every journaled action has an actionId (SPEC §5.6): a retirement or restore
// brings the one its intent was journaled with; any other action (rmdir,
// remove-lock, warn, …) is one line and gets a fresh one here. A dry run
// journals nothing and assigns none.
func (p *pass) record(a Action) {
	journaled := a.Kind != KindSkip && (a.Error == "" || a.touched)
	if journaled && a.ActionID == "" && !p.jr.dry {
		a.ActionID = uuid.NewString()
	}
	p.rep.Actions = append(p.rep.Actions, a)
	if !journaled {
		return
	}
	if err := p.jr.add(time.Now(), a); err != nil {
		p.fail("journal", err)
	}
}

// policy is a source's Policy with the pass's overrides.
func (j *Janitor) policy(src config.Source, o Overrides) Policy {
	p := Policy{
		Source:      src.Name,
		Retention:   enabledDur(src.Retention),
		Action:      src.Action,
		MaxSessions: src.MaxSessions,
		WarnSize:    int64(src.WarnSize),
		WarnCount:   src.WarnCount,
		ActiveGrace: enabledDur(j.cfg.Janitor.ActiveGrace),
		InvalidOnly: o.InvalidOnly,
		OlderThan:   o.OlderThan,
	}
	if o.MaxSessions > 0 {
		p.MaxSessions = o.MaxSessions
	}
	return p
}

// source runs the pass over one source: gather, plan, execute, then catalog
// update and empty directories.
func (p *pass) source(ix *indexer.Indexer, src config.Source, o Overrides) {
	j := p.j
	switch ix.Layout().Name() {
	case config.LayoutHyperyolo:
		p.hyperyolo(ix, src, o)
		return
	case config.LayoutCollabTerminals:
		p.collab(ix, src, o)
		return
	}
	sessions := ix.Sessions()
	g := newGatherer(p.now, ix, sessions, p.openFiles, enabledDur(j.cfg.Janitor.LockStaleAfter), p.restored)
	pol := j.policy(src, o)
	// Plan first from the catalog alone; only the sessions that plan touches
	// get their facts gathered from disk (stat, locks, open files), and the plan
	// is made again with them. The disk can only protect more: a file's real
	// mtime is never older than the one the catalog recorded, unless someone
	// set it back, and then the session is merely kept a while longer.
	cands := make([]Candidate, len(sessions))
	for i, s := range sessions {
		cands[i] = g.fromCatalog(s)
	}
	need := map[*indexer.Session]bool{}
	for _, a := range Plan(p.now, cands, pol) {
		if a.cand != nil {
			need[a.cand.Session] = true
		}
	}
	var update []string
	for i, s := range sessions {
		if !need[s] {
			continue
		}
		cands[i] = g.candidate(s)
		if cands[i].Missing {
			update = append(update, s.File) // the catalog lags: let it catch up
		}
	}
	actions := Plan(p.now, cands, pol)
	retired := map[*Candidate]bool{}
	emptied := map[string]bool{} // project dirs that lost a session in this pass
	gone := map[string]bool{}    // paths removed (dry: that would be)
	for i := range actions {
		a := actions[i]
		switch a.Kind {
		case KindArchive, KindDelete:
			if p.ctx.Err() != nil {
				continue
			}
			if !p.dry {
				if err := p.retire(g, &a); err != nil {
					a.Error = err.Error()
					p.fail(fmt.Sprintf("%s session %s", a.Kind, a.ID), err)
					update = append(update, a.Paths...) // whatever went, the catalog follows
				}
			}
			if a.Kind == KindArchive || a.Kind == KindDelete {
				if a.Error == "" {
					retired[a.cand] = true
					for _, path := range a.Paths {
						gone[path] = true
						emptied[filepath.Dir(path)] = true
					}
					update = append(update, a.Paths...)
					msg := "session " + pastTense(a.Kind)
					if p.dry {
						msg = "dry run: session would be " + pastTense(a.Kind)
					}
					j.log.Info(msg, "source", a.Source, "id", a.ID, "file", a.File, "bytes", a.Bytes, "reason", a.Reason, "archive", a.Archive)
				}
			} else {
				j.log.Info("session kept", "source", a.Source, "id", a.ID, "reason", a.Reason)
			}
		case KindRemoveLock:
			if !retired[a.cand] {
				continue
			}
			if p.dry {
				dryLockSize(&a)
			} else if ok, err := removeStaleLock(g, &a); err != nil {
				a.Error = err.Error()
				p.fail("remove lock "+a.File, err)
			} else if !ok {
				continue
			}
		case KindWarn:
			p.rep.Warnings = append(p.rep.Warnings, Warning{Source: a.Source, Project: a.Project, Bytes: a.Bytes, Message: a.Reason, Hint: a.Hint})
			j.log.Warn("project over its limits", "source", a.Source, "project", a.Project, "reason", a.Reason, "hint", a.Hint)
		case KindSkipInUse, KindSkip:
			j.log.Debug("session due but kept", "source", a.Source, "id", a.ID, "reason", a.Reason, "pid", a.PID)
		}
		p.record(a)
	}
	if !p.dry && len(update) > 0 {
		if err := ix.Update(update); err != nil {
			p.fail("update catalog of "+src.Name, err)
		}
	}
	p.emptyDirs(ix, src, sessions, emptied, gone)
}

func pastTense(kind string) string {
	if kind == KindDelete {
		return "deleted"
	}
	return "archived"
}

// retire carries out an archive or delete action. A session locked or changed
// since it was gathered is kept: the action turns into a skip.
func (p *pass) retire(g *gatherer, a *Action) error {
	c := a.cand
	if h, held := g.recheckLocks(c); held {
		a.Kind, a.PID, a.Reason = KindSkipInUse, h.PID, holdReason(h)+" (taken during the pass)"
		return nil
	}
	es, err := collect(g.root, c.Paths)
	if err == nil {
		for _, e := range es {
			if e.info.ModTime().After(c.Mtime) {
				err = fmt.Errorf("%s was modified: %w", e.abs, errChanged)
				break
			}
		}
	}
	if errors.Is(err, errChanged) || errors.Is(err, fs.ErrNotExist) {
		a.Kind, a.Reason = KindSkipInUse, "modified during the pass"
		return nil
	}
	if err != nil {
		return err
	}
	var meta *ArchiveMeta
	dir := ""
	if a.Kind == KindArchive {
		s := c.Session
		meta = &ArchiveMeta{ID: s.ID, Source: a.Source, Layout: g.layout.Name(), Project: s.Project, Type: s.Type,
			Root: g.root, File: s.File, ArchivedAt: indexer.FormatTime(time.Now())}
		meta.Reason, meta.Summary = a.Reason, summarize(s)
		dir = ArchiveDir(p.j.cfg.ArchiveDir, a.Source, s.Project)
	}
	kept, err := p.retireFiles(g.root, a, es, meta, dir)
	if kept != "" {
		a.Kind, a.Reason = KindSkipInUse, kept
	}
	return err
}

// removeEntries removes collected files, then their directories deepest first;
// a directory that gained an entry meanwhile is kept (ENOTEMPTY). Each is
// removed relative to the directory in says holds it.
func removeEntries(es []entry, in func(path string) (*os.Root, string)) error {
	remove := func(path string) error {
		d, rel := in(path)
		if d == nil {
			return fmt.Errorf("remove %s: not a path of the session", path)
		}
		if err := d.Remove(rel); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return err
		}
		return nil
	}
	dirs := map[string]bool{}
	var errs []error
	for _, e := range es {
		if e.info.IsDir() {
			continue
		}
		if err := remove(e.abs); err != nil {
			errs = append(errs, err)
		}
		dirs[filepath.Dir(e.abs)] = true
	}
	for i := len(es) - 1; i >= 0; i-- {
		if !es[i].info.IsDir() {
			continue
		}
		if err := remove(es[i].abs); err != nil {
			errs = append(errs, fmt.Errorf("%s kept: %w", es[i].abs, err))
		}
		dirs[filepath.Dir(es[i].abs)] = true
	}
	for d := range dirs {
		if _, err := os.Lstat(d); err == nil {
			if err := indexer.SyncDir(d); err != nil {
				errs = append(errs, err)
			}
		}
	}
	return errors.Join(errs...)
}

// removeStaleLock removes a lock file judged stale, after judging it again; ok
// is false when it is held by now (it is then left alone).
func removeStaleLock(g *gatherer, a *Action) (ok bool, err error) {
	l, exists, err := ReadLock(a.File)
	if err != nil || !exists {
		return false, err
	}
	if JudgeLock(g.now, l, g.staleAfter, g.proc).Held {
		return false, nil
	}
	if fi, err := os.Lstat(a.File); err == nil {
		a.Bytes = fi.Size()
	}
	if err := removeQuiet(a.File); err != nil {
		return false, err
	}
	return true, nil
}

// dryLockSize gives a dry run's remove-lock action the size removeStaleLock
// would report, so a preview prints what the real run does.
func dryLockSize(a *Action) {
	if fi, err := os.Lstat(a.File); err == nil {
		a.Bytes = fi.Size()
	}
}

// emptyDirs removes the project directories of a source left empty: immediate
// children of the root holding nothing, or nothing but sessionwatch's own native
// index. A directory this pass did not empty must also be older than
// active_grace, so an agent's fresh mkdir is not taken from under it. A
// concurrent create wins (ENOTEMPTY is fine).
func (p *pass) emptyDirs(ix *indexer.Indexer, src config.Source, sessions []*indexer.Session, emptied, gone map[string]bool) {
	j := p.j
	if !src.RemoveEmptyDirs || p.ctx.Err() != nil {
		return
	}
	_, native := ix.Layout().(indexer.NativeIndexer)
	ownIndex := native && src.NativeIndex
	j.mu.Lock()
	for _, s := range sessions {
		if s.Dir != "" {
			j.projectDirs[src.Name] = true
		}
	}
	hasDirs := native || j.projectDirs[src.Name]
	j.mu.Unlock()
	if !hasDirs {
		return
	}
	root := filepath.Clean(ix.Root())
	if fi, err := os.Lstat(root); err != nil || !fi.IsDir() {
		return
	}
	if real, err := filepath.EvalSymlinks(root); err != nil || real != root {
		return // a directory above the root became a symlink: never removed through
	}
	ents, err := os.ReadDir(root)
	if err != nil {
		p.fail("read "+root, err)
		return
	}
	// A directory still holding a session the pass keeps is not empty: no need
	// to read it.
	busy := map[string]bool{}
	for _, s := range sessions {
		if gone[s.File] {
			continue
		}
		if rel, err := filepath.Rel(root, s.File); err == nil && filepath.IsLocal(rel) {
			top, _, _ := strings.Cut(filepath.ToSlash(rel), "/")
			busy[top] = true
		}
	}
	grace := enabledDur(j.cfg.Janitor.ActiveGrace)
	var touched []string
	for _, e := range ents {
		if !e.IsDir() || strings.HasPrefix(e.Name(), indexer.TempPrefix) || busy[e.Name()] {
			continue // symlinks are not dirs here: never followed
		}
		dir := filepath.Join(root, e.Name())
		inner, err := os.ReadDir(dir)
		if err != nil {
			continue
		}
		index, empty := "", true
		for _, x := range inner {
			full := filepath.Join(dir, x.Name())
			switch {
			case gone[full]:
			case ownIndex && x.Name() == indexer.CatalogName && x.Type().IsRegular():
				index = full
			default:
				empty = false
			}
		}
		if !empty {
			continue
		}
		if !emptied[dir] && grace > 0 {
			fi, err := os.Lstat(dir)
			if err != nil || p.now.Sub(fi.ModTime()) < grace {
				continue
			}
		}
		a := Action{Kind: KindRmdir, Source: src.Name, File: dir, Reason: "empty project directory"}
		if index != "" {
			a.Reason = "project directory holding only its native index"
			if fi, err := os.Lstat(index); err == nil {
				a.Bytes = fi.Size()
			}
		}
		if !p.dry {
			if emptyDirHook != nil {
				emptyDirHook(dir)
			}
			if err := removeProjectDir(dir, index != ""); err != nil {
				touched = append(touched, dir) // the indexer restores what it needs
				if !errors.Is(err, fs.ErrExist) && !isNotEmpty(err) && !errors.Is(err, fs.ErrNotExist) && !errors.Is(err, errChanged) {
					p.fail("rmdir "+dir, err)
				}
				continue
			}
			touched = append(touched, dir)
			if err := indexer.SyncDir(root); err != nil {
				p.fail("rmdir "+dir, err)
			}
		}
		p.record(a)
	}
	if len(touched) > 0 {
		if err := ix.Update(touched); err != nil {
			p.fail("update catalog of "+src.Name, err)
		}
	}
}

// removeProjectDir removes dir, a project directory found empty, and with
// index its native index first. The index is removed through a descriptor of
// the directory, checked after the open to be the very directory at dir and
// not a symlink, and dir by rmdir(2), which never follows nor removes a
// symlink: a directory replaced meanwhile by a symlink (to anywhere) is left,
// and so is everything the symlink points at.
func removeProjectDir(dir string, index bool) error {
	if index {
		d, err := os.OpenRoot(dir)
		if err != nil {
			return err
		}
		defer d.Close()
		held, err := d.Stat(".")
		if err != nil {
			return err
		}
		if now, err := os.Lstat(dir); err != nil || !now.IsDir() || !os.SameFile(held, now) {
			return fmt.Errorf("%s was replaced: %w", dir, errChanged)
		}
		if err := d.Remove(indexer.CatalogName); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return err
		}
	}
	if err := syscall.Rmdir(dir); err != nil {
		if errors.Is(err, syscall.ENOTDIR) {
			return fmt.Errorf("%s was replaced: %w", dir, errChanged)
		}
		return &fs.PathError{Op: "rmdir", Path: dir, Err: err}
	}
	return nil
}

// emptyDirHook, set by tests, runs just before a project directory found
// empty is removed.
var emptyDirHook func(dir string)

func isNotEmpty(err error) bool {
	var pe *fs.PathError
	return errors.As(err, &pe) && strings.Contains(pe.Err.Error(), "not empty")
}
