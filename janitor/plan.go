package janitor

import (
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/sessionwatch/sessionwatch/config"
	"github.com/sessionwatch/sessionwatch/indexer"
)

// Action kinds, as written in Report.Actions and in the journal.
const (
	KindArchive       = "archive"        // session gzipped into the archive dir, originals removed
	KindDelete        = "delete"         // session files removed
	KindExpireArchive = "expire-archive" // archive older than archive_retention removed
	KindRemoveLock    = "remove-lock"    // stale lock file of a retired session removed
	KindRmdir         = "rmdir"          // empty project directory removed
	KindRestore       = "restore"        // archived session put back
	KindWarn          = "warn"           // project over warn_size or warn_count
	KindSkipInUse     = "skip-in-use"    // due, but in use or recently active
	KindSkip          = "skip"           // due, but corrupt, unsafe (symlink, outside root) or unsupported; a store left alone
	KindRemoveRecord  = "remove-record"  // collab terminal record whose tmux session is gone, kept in records.jsonl
	KindOrphan        = "orphan"         // live tmux session named like a collab session's that no record names
	KindKillOrphan    = "kill-orphan"    // such a session killed (kill_orphans)
)

// Action is one thing a pass does (or, in a dry run, would do).
type Action struct {
	Kind string `json:"action"`
	// ActionID identifies the action in the journal (a UUID), for the
	// actions that change the disk in steps: archive, delete, restore.
	ActionID string `json:"actionId,omitempty"`
	Source   string `json:"source"`
	ID       string `json:"id,omitempty"`
	Project  string `json:"project,omitempty"`
	// File is the session's transcript (or the lock file, directory or archive the
	// action is about).
	File string `json:"file,omitempty"`
	// Bytes is what the action removes (or restores) on disk.
	Bytes  int64  `json:"bytes"`
	Reason string `json:"reason"`
	// PID is the process that holds a skipped session.
	PID int `json:"pid,omitempty"`
	// Paths are every path a retirement removes: the transcript (or session
	// directory) first, then its companions.
	Paths []string `json:"paths,omitempty"`
	// Archive is the archive file written, restored from or expired.
	Archive string `json:"archive,omitempty"`
	// Hint is what the user can do about a warning.
	Hint string `json:"hint,omitempty"`
	// Error is set when carrying out the action failed; nothing was lost then.
	Error string `json:"error,omitempty"`

	cand    *Candidate // the session a retire, skip or remove-lock action is about
	touched bool       // carrying it out changed the disk (an archive written, a file removed)
}

// Hold is why a session is in use: who holds it and whether --force may override.
type Hold struct {
	PID int    // the holding process; 0 when unknown
	Why string // e.g. "lock /…/x.lock held", "registered as running", "file held open"
	// Hard holds (a live lock, a live registered session) are never overridden,
	// not even by `delete --force`; soft ones (a file held open) are.
	Hard bool
}

// Held reports whether there is a hold at all.
func (h Hold) Held() bool { return h.Why != "" }

// Candidate is a session plus the facts gathered about it in this pass.
type Candidate struct {
	Session *indexer.Session // catalog record: ID, Type, ParentID, LastActiveAt, Corrupt, Invalid, Project…
	// Paths are the session's paths on disk that a retirement removes: the
	// transcript (or session directory) first, then the companions that exist.
	Paths []string
	Bytes int64     // total size of Paths
	Mtime time.Time // newest modification time among Paths: the file mtime retention checks
	// Missing: the transcript is gone (the catalog lags); nothing to do.
	Missing bool
	// Hold is set when the session is in use.
	Hold Hold
	// Unsafe, when set, says why the janitor must never touch the session: a
	// symlink on the way, a path outside the source root, another filesystem, a
	// record inside a shared store file.
	Unsafe string
	// StaleLocks are lock files judged stale; they are removed with the session.
	StaleLocks []string
	// Restored is when `restore` brought the session back; it counts as activity,
	// so a restored session is not retired again at once.
	Restored time.Time
}

// Policy is what one source's pass enforces: the source's config plus the
// overrides of `clean`.
type Policy struct {
	Source      string
	Retention   time.Duration // 0 = off: never retire by age
	Action      string        // config.ActionArchive or config.ActionDelete
	MaxSessions int           // newest main sessions kept per project; 0 = no cap
	WarnSize    int64         // warn about a project over this many bytes; 0 = off
	WarnCount   int           // warn about a project with more sessions; 0 = off
	ActiveGrace time.Duration // sessions active within it are protected; 0 = off
	// InvalidOnly retires only sessions marked invalid or corrupt (corrupt ones
	// are always archived), ignoring retention and the count cap.
	InvalidOnly bool
	// OlderThan, when positive, replaces Retention for this pass (also on a
	// source whose retention is off); with InvalidOnly it is an extra age bound.
	OlderThan time.Duration
}

// retention is the age bound in force: the override, else the configured one.
func (p Policy) retention() time.Duration {
	if p.OlderThan > 0 {
		return p.OlderThan
	}
	return p.Retention
}

// lastActive is when the session was last active: its lastActiveAt (the file
// mtime if that does not parse), or its restore time if later.
func (c *Candidate) lastActive() time.Time {
	t := indexer.ParseTime(c.Session.LastActiveAt)
	if t.IsZero() {
		t = c.Mtime
	}
	if c.Restored.After(t) {
		t = c.Restored
	}
	return t
}

// olderThan reports whether both the session's last activity and its file mtime
// are more than d before now. Exactly d is not older.
func (c *Candidate) olderThan(now time.Time, d time.Duration) bool {
	return now.Sub(c.lastActive()) > d && now.Sub(c.Mtime) > d
}

// Plan decides one source's pass. It is a pure function of its arguments: the
// candidates are the source's sessions with their facts, in catalog order. It
// returns, in candidate order, a retirement (plus the removal of its stale
// locks) or a skip for every session that is due, then one warning per project
// over a limit. Sessions that are not due produce nothing.
//
// A session is due when it is older than the retention (both lastActiveAt and
// file mtime), when it is marked invalid and retention is on, or when it is
// past the count cap; with InvalidOnly, exactly when it is invalid or corrupt.
// A due session is skipped, never retired, when it is unsafe, corrupt (unless
// InvalidOnly), in use, has an mtime in the future, or was active within the
// grace period.
func Plan(now time.Time, cands []Candidate, p Policy) []Action {
	due := make([]string, len(cands)) // reason, "" = not due
	ret := p.retention()
	for i := range cands {
		c := &cands[i]
		if c.Missing || c.Session == nil {
			continue
		}
		s := c.Session
		switch {
		case p.InvalidOnly:
			if !s.Invalid && !s.Corrupt {
				continue
			}
			if p.OlderThan > 0 && !c.olderThan(now, p.OlderThan) {
				continue
			}
			if s.Corrupt {
				due[i] = "corrupt (unparseable), clean --invalid-only"
			} else {
				due[i] = "marked invalid, clean --invalid-only"
			}
		case ret > 0 && c.olderThan(now, ret):
			due[i] = fmt.Sprintf("inactive %s (retention %s)", ageString(now.Sub(c.lastActive())), durString(ret))
		case ret > 0 && s.Invalid:
			due[i] = "marked invalid by its agent"
		}
	}
	if p.MaxSessions > 0 && !p.InvalidOnly {
		capSessions(cands, due, p.MaxSessions)
	}

	var out []Action
	kept := make([]bool, len(cands))
	for i := range cands {
		c := &cands[i]
		if c.Missing || c.Session == nil {
			continue
		}
		if due[i] == "" {
			kept[i] = true
			continue
		}
		if a, skip := protect(now, c, p, due[i]); skip {
			kept[i] = true
			out = append(out, a)
			continue
		}
		s := c.Session
		kind := p.Action
		if kind != KindDelete {
			kind = KindArchive
		}
		if s.Corrupt {
			kind = KindArchive // what cannot be parsed is only ever archived
		}
		out = append(out, Action{Kind: kind, Source: p.Source, ID: s.ID, Project: s.Project, File: s.File,
			Bytes: c.Bytes, Reason: due[i], Paths: c.Paths, cand: c})
		for _, l := range c.StaleLocks {
			out = append(out, Action{Kind: KindRemoveLock, Source: p.Source, ID: s.ID, Project: s.Project, File: l,
				Reason: "stale lock of a retired session", cand: c})
		}
	}
	return append(out, warnings(cands, kept, p)...)
}

// protect returns the skip action for a due session that must not be retired.
func protect(now time.Time, c *Candidate, p Policy, due string) (Action, bool) {
	s := c.Session
	a := Action{Source: p.Source, ID: s.ID, Project: s.Project, File: s.File, Bytes: c.Bytes, cand: c}
	switch {
	case c.Unsafe != "":
		a.Kind, a.Reason = KindSkip, c.Unsafe
	case s.Corrupt && !p.InvalidOnly:
		a.Kind, a.Reason = KindSkip, "corrupt (unparseable): only 'clean --invalid-only' retires it"
	case c.Hold.Held():
		a.Kind, a.PID, a.Reason = KindSkipInUse, c.Hold.PID, holdReason(c.Hold)
	case c.Mtime.After(now):
		a.Kind, a.Reason = KindSkip, "file mtime is in the future ("+indexer.FormatTime(c.Mtime)+")"
	case p.ActiveGrace > 0 && now.Sub(c.Mtime) < p.ActiveGrace:
		a.Kind, a.Reason = KindSkipInUse, fmt.Sprintf("modified %s ago, within active_grace %s", ageString(now.Sub(c.Mtime)), durString(p.ActiveGrace))
	case p.ActiveGrace > 0 && !c.lastActive().After(now) && now.Sub(c.lastActive()) < p.ActiveGrace:
		a.Kind, a.Reason = KindSkipInUse, fmt.Sprintf("active %s ago, within active_grace %s", ageString(now.Sub(c.lastActive())), durString(p.ActiveGrace))
	default:
		return Action{}, false
	}
	a.Reason += " (due: " + due + ")"
	return a, true
}

// holdReason says who holds a session: "in use by pid N: <why>".
func holdReason(h Hold) string {
	if h.PID > 0 {
		return fmt.Sprintf("in use by pid %d: %s", h.PID, h.Why)
	}
	return "in use: " + h.Why
}

// capSessions marks as due the main sessions of each project beyond the newest
// max (by last activity), and the subagents of those. Subagents do not count
// toward the cap: `list` shows main sessions, and a subagent goes with its parent.
func capSessions(cands []Candidate, due []string, max int) {
	byProject := map[string][]int{}
	for i := range cands {
		c := &cands[i]
		if c.Missing || c.Session == nil || c.Session.Type == indexer.TypeSubagent {
			continue
		}
		byProject[c.Session.Project] = append(byProject[c.Session.Project], i)
	}
	capped := map[[2]string]bool{} // (project, main id) beyond the cap
	for project, idx := range byProject {
		sort.SliceStable(idx, func(a, b int) bool {
			ta, tb := cands[idx[a]].lastActive(), cands[idx[b]].lastActive()
			if !ta.Equal(tb) {
				return ta.After(tb)
			}
			return cands[idx[a]].Session.ID < cands[idx[b]].Session.ID
		})
		for rank, i := range idx {
			if rank < max {
				continue
			}
			capped[[2]string{project, cands[i].Session.ID}] = true
			if due[i] == "" {
				due[i] = fmt.Sprintf("over max_sessions %d (newest %d kept)", max, max)
			}
		}
	}
	for i := range cands {
		s := cands[i].Session
		if s == nil || cands[i].Missing || s.Type != indexer.TypeSubagent || s.ParentID == "" || due[i] != "" {
			continue
		}
		if capped[[2]string{s.Project, s.ParentID}] {
			due[i] = fmt.Sprintf("parent %s over max_sessions %d", short(s.ParentID), max)
		}
	}
}

// warnings returns one warn action per project whose kept sessions exceed the
// size or count limit.
func warnings(cands []Candidate, kept []bool, p Policy) []Action {
	if p.WarnSize <= 0 && p.WarnCount <= 0 {
		return nil
	}
	type total struct {
		n     int
		bytes int64
	}
	totals := map[string]*total{}
	var order []string
	for i := range cands {
		if !kept[i] {
			continue
		}
		s := cands[i].Session
		t := totals[s.Project]
		if t == nil {
			t = &total{}
			totals[s.Project] = t
			order = append(order, s.Project)
		}
		t.n++
		t.bytes += s.SizeBytes
	}
	sort.Strings(order)
	var out []Action
	for _, project := range order {
		t := totals[project]
		var over []string
		if p.WarnCount > 0 && t.n > p.WarnCount {
			over = append(over, fmt.Sprintf("%d sessions (warn_count %d)", t.n, p.WarnCount))
		}
		if p.WarnSize > 0 && t.bytes > p.WarnSize {
			over = append(over, fmt.Sprintf("%s (warn_size %s)", humanBytes(t.bytes), config.Size(p.WarnSize)))
		}
		if len(over) == 0 {
			continue
		}
		name := project
		if name == "" {
			name = "(no project)"
		}
		out = append(out, Action{Kind: KindWarn, Source: p.Source, Project: project, Bytes: t.bytes,
			Reason: fmt.Sprintf("project %s holds %s", name, strings.Join(over, " and ")),
			Hint: fmt.Sprintf("set a retention or max_sessions for source %q, or run 'sessionwatch clean --source %s --older-than 30d --dry-run' to see what would go",
				p.Source, p.Source)})
	}
	return out
}

// durString renders a configured span the way the config file writes it ("14d").
func durString(d time.Duration) string { return config.NewDuration(d).String() }

// ageString renders an age roughly: "3d4h", "5h12m", "42s".
func ageString(d time.Duration) string {
	switch {
	case d < 0:
		return "-" + ageString(-d)
	case d >= 2*config.Day:
		days := d / config.Day
		if h := (d % config.Day) / time.Hour; h > 0 {
			return fmt.Sprintf("%dd%dh", days, h)
		}
		return fmt.Sprintf("%dd", days)
	case d >= time.Hour:
		if m := (d % time.Hour) / time.Minute; m > 0 {
			return fmt.Sprintf("%dh%dm", d/time.Hour, m)
		}
		return fmt.Sprintf("%dh", d/time.Hour)
	case d >= time.Minute:
		if s := (d % time.Minute) / time.Second; s > 0 {
			return fmt.Sprintf("%dm%ds", d/time.Minute, s)
		}
		return fmt.Sprintf("%dm", d/time.Minute)
	}
	return d.Truncate(time.Millisecond).String()
}

// humanBytes renders a byte count with binary units: "512 B", "1.5 MiB".
func humanBytes(n int64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	div, exp := int64(unit), 0
	for m := n / unit; m >= unit; m /= unit {
		div *= unit
		exp++
	}
	return fmt.Sprintf("%.1f %ciB", float64(n)/float64(div), "KMGTPE"[exp])
}

// short is the first 8 characters of an id, as `list` shows it.
func short(id string) string {
	if len(id) > 8 {
		return id[:8]
	}
	return id
}
