package janitor

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
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
		if _, err := j.RunOnce(ctx, Overrides{}); err != nil && ctx.Err() == nil {
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
	if !dry {
		release, err := lockPass(ctx, j.cfg.StateDir)
		if err != nil {
			return Report{}, err
		}
		defer release()
		j.recoverOnce()
	}
	start := time.Now()
	now := j.opt.Now()
	rep := &Report{Time: now.UTC(), DryRun: dry, Warnings: []Warning{}, Actions: []Action{}}
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
	j.mu.Lock()
	j.last = rep
	j.mu.Unlock()
	j.log.Info("janitor pass done", "dryRun", dry, "retired", rep.Retired, "archived", rep.Archived, "deleted", rep.Deleted,
		"skippedInUse", rep.SkippedInUse, "bytesFreed", rep.BytesFreed, "warnings", len(rep.Warnings), "errors", len(rep.Errors), "took", rep.Took)
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
func (p *pass) record(a Action) {
	p.rep.Actions = append(p.rep.Actions, a)
	if a.Kind == KindSkip || a.Error != "" && !a.touched {
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
			if !p.dry {
				if ok, err := removeStaleLock(g, &a); err != nil {
					a.Error = err.Error()
					p.fail("remove lock "+a.File, err)
				} else if !ok {
					continue
				}
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
		dir = filepath.Join(p.j.cfg.ArchiveDir, a.Source, indexer.ProjectKey(s.Project))
	}
	kept, err := p.retireFiles(a, es, meta, dir)
	if kept != "" {
		a.Kind, a.Reason = KindSkipInUse, kept
	}
	return err
}

// removeEntries removes collected files, then their directories deepest first;
// a directory that gained an entry meanwhile is kept (ENOTEMPTY).
func removeEntries(es []entry) error {
	dirs := map[string]bool{}
	var errs []error
	for _, e := range es {
		if e.info.IsDir() {
			continue
		}
		if err := removeQuiet(e.abs); err != nil {
			errs = append(errs, err)
		}
		dirs[filepath.Dir(e.abs)] = true
	}
	for i := len(es) - 1; i >= 0; i-- {
		if !es[i].info.IsDir() {
			continue
		}
		if err := removeQuiet(es[i].abs); err != nil {
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
			if index != "" {
				removeQuiet(index)
			}
			if err := os.Remove(dir); err != nil {
				touched = append(touched, dir) // the indexer restores what it needs
				if !errors.Is(err, fs.ErrExist) && !isNotEmpty(err) && !errors.Is(err, fs.ErrNotExist) {
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

// expireArchives deletes archives older than janitor.archive_retention (by the
// archive file's mtime: the time it was archived), then archive directories
// left empty. Only files that read as sessionwatch archives are touched.
func (p *pass) expireArchives(sources []string) {
	ret := enabledDur(p.j.cfg.Janitor.ArchiveRetention)
	if ret <= 0 {
		return
	}
	for _, src := range sources {
		base := filepath.Join(p.j.cfg.ArchiveDir, src)
		p.expireRecords(src, filepath.Join(base, RecordsName), ret)
		keys, err := os.ReadDir(base)
		if err != nil {
			continue
		}
		for _, k := range keys {
			if !k.IsDir() {
				continue
			}
			dir := filepath.Join(base, k.Name())
			files, err := os.ReadDir(dir)
			if err != nil {
				continue
			}
			left := len(files)
			for _, f := range files {
				if !f.Type().IsRegular() || !strings.HasSuffix(f.Name(), ".gz") || strings.HasPrefix(f.Name(), indexer.TempPrefix) {
					continue
				}
				path := filepath.Join(dir, f.Name())
				fi, err := os.Lstat(path)
				if err != nil || p.now.Sub(fi.ModTime()) <= ret {
					continue
				}
				ar, err := ReadArchive(path)
				if err != nil {
					continue
				}
				a := Action{Kind: KindExpireArchive, Source: src, ID: ar.Meta.ID, Project: ar.Meta.Project, File: ar.Meta.File,
					Archive: path, Bytes: fi.Size(), Reason: fmt.Sprintf("archived %s ago (archive_retention %s)", ageString(p.now.Sub(fi.ModTime())), durString(ret))}
				if !p.dry {
					if err := removeQuiet(path); err != nil {
						p.fail("expire archive "+path, err)
						continue
					}
				}
				left--
				p.record(a)
			}
			if left == 0 && !p.dry {
				if os.Remove(dir) == nil {
					indexer.SyncDir(base)
					p.record(Action{Kind: KindRmdir, Source: src, File: dir, Reason: "empty archive directory"})
				}
			} else if !p.dry {
				indexer.SyncDir(dir)
			}
		}
	}
}

// expireRecords removes the lines of records.jsonl retired longer ago than
// ret (lines whose retiredAt does not parse are kept).
func (p *pass) expireRecords(src, path string, ret time.Duration) {
	recs, err := readRecords(path)
	if err != nil || len(recs) == 0 {
		return
	}
	old := map[string]ArchivedRecord{}
	for _, r := range recs {
		if t := indexer.ParseTime(r.RetiredAt); !t.IsZero() && p.now.Sub(t) > ret {
			old[string(r.Line)] = r
		}
	}
	if len(old) == 0 {
		return
	}
	if !p.dry {
		if _, err := rewriteRecords(path, func(line []byte) bool { _, ok := old[string(line)]; return ok }); err != nil {
			p.fail("expire archived records in "+path, err)
			return
		}
	}
	for _, r := range recs {
		if _, ok := old[string(r.Line)]; !ok {
			continue
		}
		p.record(Action{Kind: KindExpireArchive, Source: src, ID: r.ID, File: r.File, Archive: path, Bytes: int64(len(r.Line)) + 1,
			Reason: fmt.Sprintf("record archived %s ago (archive_retention %s)", ageString(p.now.Sub(indexer.ParseTime(r.RetiredAt))), durString(ret))})
	}
}

func isNotEmpty(err error) bool {
	var pe *fs.PathError
	return errors.As(err, &pe) && strings.Contains(pe.Err.Error(), "not empty")
}

// RefusedError is a session `delete` will not remove because it is in use.
type RefusedError struct {
	ID   string
	PID  int    // the holder, when known
	Why  string // what holds it
	Hard bool   // a live lock or registered session: --force does not override
}

// Error reads "session <id> is in use by pid N (<why>)".
func (e *RefusedError) Error() string {
	if e.PID > 0 {
		return fmt.Sprintf("session %s is in use by pid %d (%s)", e.ID, e.PID, e.Why)
	}
	return fmt.Sprintf("session %s is in use (%s)", e.ID, e.Why)
}

// DeleteOptions are the flags of `delete`.
type DeleteOptions struct {
	// Force overrides the softer protections: activity within active_grace, an
	// mtime in the future, a process holding a file open. Never a live lock or
	// a live registered session.
	Force  bool
	DryRun bool
}

// Delete removes one session's files (transcript, companions, stale lock
// sidecars), journals it and updates the catalog. It refuses (RefusedError) a
// session in use.
func (j *Janitor) Delete(ctx context.Context, en indexer.Entry, o DeleteOptions) (Report, error) {
	ix := j.group.Indexer(en.Source)
	if ix == nil {
		return Report{}, fmt.Errorf("%w: %q", ErrUnknownSource, en.Source)
	}
	switch ix.Layout().Name() {
	case config.LayoutHyperyolo:
		return j.deleteRecord(ctx, ix, en, o)
	case config.LayoutCollabTerminals:
		return Report{}, fmt.Errorf("refusing to delete session %s: a terminal record leaves %s through the janitor's tmux reconcile, once its tmux session is gone", en.ID, en.File)
	}
	if !o.DryRun {
		release, err := lockPass(ctx, j.cfg.StateDir)
		if err != nil {
			return Report{}, err
		}
		defer release()
		j.recoverOnce()
	}
	now := j.opt.Now()
	sessions := ix.Sessions()
	s := en.Session
	for _, cand := range sessions {
		if cand.File == en.File && cand.ID == en.ID {
			s = cand
		}
	}
	root := filepath.Clean(ix.Root())
	open := func() map[string]int { return scanOpenFiles([]string{root}, j.excluded()) }
	g := newGatherer(now, ix, sessions, open, enabledDur(j.cfg.Janitor.LockStaleAfter), nil)
	c := g.candidate(s)
	switch {
	case c.Missing:
		if !o.DryRun {
			ix.Update([]string{s.File})
		}
		return Report{}, fmt.Errorf("%w: %s no longer exists", indexer.ErrNotFound, s.File)
	case c.Unsafe != "":
		return Report{}, fmt.Errorf("refusing to delete session %s: %s", s.ID, c.Unsafe)
	case c.Hold.Hard:
		return Report{}, &RefusedError{ID: s.ID, PID: c.Hold.PID, Why: c.Hold.Why, Hard: true}
	case c.Hold.Held() && !o.Force:
		return Report{}, &RefusedError{ID: s.ID, PID: c.Hold.PID, Why: c.Hold.Why}
	}
	grace := enabledDur(j.cfg.Janitor.ActiveGrace)
	reason := "deleted by request"
	switch {
	case c.Mtime.After(now) && !o.Force:
		return Report{}, &RefusedError{ID: s.ID, Why: "its file mtime is in the future"}
	case grace > 0 && now.Sub(c.Mtime) < grace && !o.Force:
		return Report{}, &RefusedError{ID: s.ID, Why: fmt.Sprintf("modified %s ago, within active_grace %s", ageString(now.Sub(c.Mtime)), durString(grace))}
	case o.Force && (c.Hold.Held() || c.Mtime.After(now) || grace > 0 && now.Sub(c.Mtime) < grace):
		reason = "deleted by request (--force)"
	}
	rep := &Report{Time: now.UTC(), DryRun: o.DryRun, Warnings: []Warning{}, Actions: []Action{}}
	p := &pass{j: j, ctx: ctx, now: now, dry: o.DryRun, jr: newJournal(j.cfg.StateDir, o.DryRun), rep: rep}
	// A stale lock goes first, so nothing can mistake the session for held
	// while its files disappear.
	for _, l := range c.StaleLocks {
		a := Action{Kind: KindRemoveLock, Source: en.Source, ID: s.ID, Project: s.Project, File: l, Reason: "stale lock of a deleted session", cand: &c}
		if !o.DryRun {
			ok, err := removeStaleLock(g, &a)
			if err != nil {
				return *rep, fmt.Errorf("remove stale lock %s: %w", l, err)
			}
			if !ok {
				return *rep, &RefusedError{ID: s.ID, Why: "lock " + l + " was taken meanwhile", Hard: true}
			}
		}
		p.record(a)
	}
	a := Action{Kind: KindDelete, Source: en.Source, ID: s.ID, Project: s.Project, File: s.File, Bytes: c.Bytes, Reason: reason, Paths: c.Paths, cand: &c}
	if !o.DryRun {
		if h, held := g.recheckLocks(&c); held {
			return *rep, &RefusedError{ID: s.ID, PID: h.PID, Why: h.Why, Hard: true}
		}
		es, err := collect(root, c.Paths)
		if err != nil {
			return *rep, fmt.Errorf("delete session %s: %w", s.ID, err)
		}
		a.touched = true
		if err := removeEntries(es); err != nil {
			a.Error = err.Error()
			p.record(a)
			return *rep, fmt.Errorf("delete session %s: %w", s.ID, err)
		}
	}
	p.record(a)
	if err := p.jr.close(); err != nil {
		p.fail("journal", err)
	}
	if !o.DryRun {
		if err := ix.Update(c.Paths); err != nil {
			p.fail("update catalog", err)
		}
	}
	tally(rep)
	return *rep, nil
}

// Restore brings an archived session back to its original paths with their
// modes and mtimes, refusing to overwrite anything (ErrExists). The archive is
// removed only once the restored files are durable; the session's indexer (if
// its source is enabled) is updated, and the restore counts as activity so the
// next pass does not retire it again at once.
func (j *Janitor) Restore(ctx context.Context, ar Archived) (Report, error) {
	if ar.Record != nil {
		return j.restoreRecord(ctx, ar)
	}
	release, err := lockPass(ctx, j.cfg.StateDir)
	if err != nil {
		return Report{}, err
	}
	defer release()
	j.recoverOnce()
	if _, err := os.Lstat(ar.Path); err != nil {
		return Report{}, fmt.Errorf("restore %s: %w", ar.Path, err)
	}
	now := j.opt.Now()
	rep := &Report{Time: now.UTC(), Warnings: []Warning{}, Actions: []Action{}}
	p := &pass{j: j, ctx: ctx, now: now, jr: newJournal(j.cfg.StateDir, false), rep: rep}
	defer p.jr.close()
	// The intent names every path the restore may create, so a restore killed
	// half-way is finished or undone at the next start (recover.go).
	id := uuid.NewString()
	m := ar.Meta
	var targets []string
	for _, af := range m.Files {
		targets = append(targets, filepath.Join(m.Root, filepath.FromSlash(af.rel())))
	}
	if err := p.jr.intent(JournalEntry{Time: indexer.FormatTime(time.Now()), Action: KindRestore, ActionID: id, Source: m.Source, ID: m.ID,
		File: m.File, Project: m.Project, Archive: ar.Path, Paths: targets, Reason: "restore from the archive"}); err != nil {
		return Report{}, err
	}
	files, n, err := restoreArchive(ar, id)
	if err == nil && crashed("restored") {
		return Report{}, errCrashed
	}
	if err != nil {
		p.jr.write(JournalEntry{Time: indexer.FormatTime(time.Now()), Action: KindRestore, ActionID: id, Phase: PhaseRollback, Source: m.Source,
			ID: m.ID, File: m.File, Archive: ar.Path, Reason: err.Error()}, false)
		return Report{}, err
	}
	if err := removeQuiet(ar.Path); err != nil {
		p.fail("remove restored archive "+ar.Path, err)
	} else if err := indexer.SyncDir(filepath.Dir(ar.Path)); err != nil {
		p.fail("remove restored archive "+ar.Path, err)
	}
	pins := loadPins(j.cfg.StateDir)
	pins[ar.Meta.File] = now
	if err := savePins(j.cfg.StateDir, pins); err != nil {
		p.fail("record restore", err)
	}
	p.record(Action{Kind: KindRestore, ActionID: id, Source: m.Source, ID: m.ID, Project: m.Project, File: m.File, Bytes: n,
		Archive: ar.Path, Paths: files, Reason: "restored from the archive"})
	if err := p.jr.close(); err != nil {
		p.fail("journal", err)
	}
	if ix := j.group.Indexer(m.Source); ix != nil {
		if err := ix.Update(files); err != nil {
			p.fail("update catalog", err)
		}
	}
	j.log.Info("session restored", "source", m.Source, "id", m.ID, "file", m.File, "archive", ar.Path)
	return *rep, nil
}

// pinsName is the state file recording restored sessions (file → restore time).
const pinsName = "restored.json"

func loadPins(stateDir string) map[string]time.Time {
	out := map[string]time.Time{}
	data, err := os.ReadFile(filepath.Join(stateDir, pinsName))
	if err != nil {
		return out
	}
	var raw map[string]string
	if json.Unmarshal(data, &raw) != nil {
		return out
	}
	for f, ts := range raw {
		if t := indexer.ParseTime(ts); !t.IsZero() {
			out[f] = t
		}
	}
	return out
}

func savePins(stateDir string, pins map[string]time.Time) error {
	path := filepath.Join(stateDir, pinsName)
	if len(pins) == 0 {
		return removeQuiet(path)
	}
	raw := map[string]string{}
	for f, t := range pins {
		raw[f] = indexer.FormatTime(t)
	}
	data, err := json.MarshalIndent(raw, "", "  ")
	if err != nil {
		return err
	}
	return indexer.WriteFileAtomic(path, append(data, '\n'))
}

// prunePins forgets restored sessions whose file is gone (records: whose
// store no longer holds them).
func prunePins(stateDir string, pins map[string]time.Time) {
	changed := false
	stores := map[string]map[string]bool{}
	for f := range pins {
		if pinGone(f, stores) {
			delete(pins, f)
			changed = true
		}
	}
	if changed {
		savePins(stateDir, pins)
	}
}
