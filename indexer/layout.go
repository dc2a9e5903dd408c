package indexer

import (
	"fmt"
	"sort"
	"time"
)

// UnitKind says how the indexer reads a unit (a file it parses).
type UnitKind uint8

const (
	// UnitNone: the path is not part of any session.
	UnitNone UnitKind = iota
	// UnitLines: a JSONL transcript holding one session, read incrementally.
	UnitLines
	// UnitDocument: a file re-parsed whole when it changes; it may hold many sessions.
	UnitDocument
)

// FileFacts is what the indexer knows about a unit's file when it summarizes it.
type FileFacts struct {
	Root  string    // absolute source root
	Unit  string    // unit path relative to Root, slash-separated
	Path  string    // absolute path
	Size  int64     // bytes
	Mtime time.Time // modification time
}

// Layout is one agent's on-disk format (SPEC §3). A layout is one file in this
// package implementing Layout plus LineLayout or DocumentLayout.
type Layout interface {
	// Name is the layout name used in the config ("wave", "claude", …).
	Name() string
	// Classify maps a slash-separated path relative to the root (a file, or a
	// directory that is itself a session) to the unit it belongs to.
	Classify(rel string) (unit string, kind UnitKind)
	// SkipDir reports whether a directory (relative to the root) can hold no unit, so
	// it is neither watched nor walked.
	SkipDir(rel string) bool
	// ProjectDir is the project directory (relative to the root) a unit's sessions
	// belong to: where a native index lives and whose sessions share a project
	// fallback. "" for layouts without project directories.
	ProjectDir(unit string) string
}

// LineLayout is a Layout whose units are JSONL transcripts.
type LineLayout interface {
	Layout
	// NewAccumulator returns an empty state for a unit; it must be a pointer that
	// round-trips through encoding/json.
	NewAccumulator(unit string) Accumulator
}

// Accumulator is a layout's incremental summary of one transcript, a pure function
// of the lines folded into it so far.
type Accumulator interface {
	// Line folds one complete line that holds a JSON object. An error means the line
	// is skipped (and counted); the state must then be unchanged.
	Line(line []byte) error
	// Summarize fills the summary fields of s (ID, Type, timestamps, prompt, counts,
	// Tail.OwnProject…) from the state and the file facts.
	Summarize(s *Session, f FileFacts)
}

// DocumentLayout is a Layout whose units are parsed whole.
type DocumentLayout interface {
	Layout
	// ParseDocument returns the sessions a unit holds. Each session's Tail.State may
	// carry the layout's details; the indexer fills File (if empty), SizeBytes (if
	// zero) and the stat fields of Tail.
	ParseDocument(f FileFacts, data []byte) ([]*Session, error)
}

// ProjectResolver is implemented by layouts whose sessions may not name their project:
// DirProject gives the project of a project directory (relative to root) when none
// of its sessions names one.
type ProjectResolver interface {
	DirProject(root, dir string) string
}

// NativeIndexer is implemented by layouts with a native index in each project dir.
type NativeIndexer interface {
	// NativeIndex renders the native index of one project directory from its
	// sessions (at least one), appended to dst (the daemon's flushes reuse their
	// buffers); the file is <root>/<dir>/CatalogName.
	NativeIndex(dst []byte, root, dir string, sessions []*Session) ([]byte, error)
}

var layouts = map[string]Layout{}

// register adds a layout; each layout file calls it from init.
func register(l Layout) {
	if _, dup := layouts[l.Name()]; dup {
		panic("indexer: layout registered twice: " + l.Name())
	}
	layouts[l.Name()] = l
}

// LookupLayout returns the layout with that name.
func LookupLayout(name string) (Layout, error) {
	l, ok := layouts[name]
	if !ok {
		return nil, fmt.Errorf("unknown layout %q", name)
	}
	return l, nil
}

// LayoutNames lists the implemented layouts, sorted.
func LayoutNames() []string {
	var names []string
	for n := range layouts {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// Locker is implemented by layouts whose sessions have lock files (SPEC §3.5): the
// lock files that, when held, mark one session in use. The janitor and the CLI
// judge them (pid liveness, age); a stale one is removed with its session.
type Locker interface {
	LockFiles(s *Session) []string
}

// LiveLister is implemented by layouts whose agent registers its running sessions
// (Claude Code's ~/.claude/sessions/<pid>.json): LiveSessions maps a session id to
// the pid that claims it. The caller checks that the pid is alive.
type LiveLister interface {
	LiveSessions(root string) (map[string]int, error)
}

// Relater is implemented by layouts where one unit's presence changes the sessions
// of another (Gemini's legacy session-*.json beside its session-*.jsonl): Related
// lists the units to re-read whenever unit changes, appears or disappears.
type Relater interface {
	Related(unit string) []string
}

// Companioner is implemented by layouts whose sessions own more than their
// transcript (Claude Code's <uuid>/ directory with subagents and tool results, and
// <uuid>.cast recordings): Companions lists those existing-or-not absolute paths,
// which are retired, archived and restored together with the session.
type Companioner interface {
	Companions(s *Session) []string
}

// DependencyStamper is implemented by layouts whose units depend on files besides
// their own (a Mogzi session's attachments count toward its size): DepStamp
// summarizes those files from their stat alone, and a changed stamp makes the
// indexer re-parse the unit even when the unit's own file is unchanged.
type DependencyStamper interface {
	DepStamp(root, unit string) string
}

// MembersLiner is an Accumulator that can fold a line from its members scanned
// once (Members), as Line would fold m.Line().
type MembersLiner interface {
	LineMembers(m *Members) error
}
