package janitor

// Actions by request: `delete` and `restore` of one session, and the pins that
// keep a restored session from being retired again at once.

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/google/uuid"
	"github.com/sessionwatch/sessionwatch/config"
	"github.com/sessionwatch/sessionwatch/indexer"
)

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
	// Permanent removes the files; otherwise the session is archived as the
	// janitor archives it (restorable).
	Permanent bool
}

// Delete retires one session by request: it archives its files (transcript,
// companions) as a pass would, or with Permanent removes them, by the same
// journaled steps a pass retires with; stale lock sidecars are removed and the
// catalog updated. It refuses (RefusedError) a session in use.
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
	kind, reason := KindArchive, "archived by request"
	if o.Permanent {
		kind, reason = KindDelete, "deleted by request"
	}
	switch {
	case c.Mtime.After(now) && !o.Force:
		return Report{}, &RefusedError{ID: s.ID, Why: "its file mtime is in the future"}
	case grace > 0 && now.Sub(c.Mtime) < grace && !o.Force:
		return Report{}, &RefusedError{ID: s.ID, Why: fmt.Sprintf("modified %s ago, within active_grace %s", ageString(now.Sub(c.Mtime)), durString(grace))}
	case o.Force && (c.Hold.Held() || c.Mtime.After(now) || grace > 0 && now.Sub(c.Mtime) < grace):
		reason += " (--force)"
	}
	rep := &Report{Time: now.UTC(), DryRun: o.DryRun, Warnings: []Warning{}, Actions: []Action{}}
	p := &pass{j: j, ctx: ctx, now: now, dry: o.DryRun, jr: newJournal(j.cfg.StateDir, o.DryRun), rep: rep,
		forceOpen: o.Force && c.Hold.Held()}
	// A stale lock goes first, so nothing can mistake the session for held
	// while its files disappear.
	for _, l := range c.StaleLocks {
		a := Action{Kind: KindRemoveLock, Source: en.Source, ID: s.ID, Project: s.Project, File: l, Reason: "stale lock of a deleted session", cand: &c}
		if o.DryRun {
			dryLockSize(&a)
		} else {
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
	a := Action{Kind: kind, Source: en.Source, ID: s.ID, Project: s.Project, File: s.File, Bytes: c.Bytes, Reason: reason, Paths: c.Paths, cand: &c}
	if !o.DryRun {
		// As a pass retires: locks checked again, intent journaled, the files
		// moved aside and (archive) made durable before anything is removed; a
		// session that changed meanwhile is put back.
		if err := p.retire(g, &a); err != nil {
			a.Error = err.Error()
			p.record(a)
			p.jr.close()
			if a.touched {
				ix.Update(c.Paths)
			}
			return *rep, fmt.Errorf("retire session %s: %w", s.ID, err)
		}
		if a.Kind != kind {
			p.jr.close()
			return *rep, &RefusedError{ID: s.ID, PID: a.PID, Why: a.Reason, Hard: a.PID > 0}
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
	// The restore is recorded (counts as activity) before its first file
	// lands: killed half-way, its intent stays open until the next start
	// (a running daemon recovered at its own start), and the daemon's passes
	// meanwhile must keep what it brought back rather than archive it again
	// beside the archive it came from. A pin on a file that never came back
	// is pruned by the next pass; a restore that fails takes it back.
	pins := loadPins(j.cfg.StateDir)
	prev, pinned := pins[m.File]
	pins[m.File] = now
	if err := savePins(j.cfg.StateDir, pins); err != nil {
		p.fail("record restore", err)
	}
	if crashed("pinned") {
		return Report{}, errCrashed
	}
	files, n, err := restoreArchive(ar, id)
	if err == nil && crashed("restored") {
		return Report{}, errCrashed
	}
	if err != nil {
		pins := loadPins(j.cfg.StateDir)
		if pinned {
			pins[m.File] = prev
		} else {
			delete(pins, m.File)
		}
		savePins(j.cfg.StateDir, pins)
		p.jr.write(JournalEntry{Time: indexer.FormatTime(time.Now()), Action: KindRestore, ActionID: id, Phase: PhaseRollback, Source: m.Source,
			ID: m.ID, File: m.File, Archive: ar.Path, Reason: err.Error()}, false)
		return Report{}, err
	}
	if err := removeQuiet(ar.Path); err != nil {
		p.fail("remove restored archive "+ar.Path, err)
	} else if err := indexer.SyncDir(filepath.Dir(ar.Path)); err != nil {
		p.fail("remove restored archive "+ar.Path, err)
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
