package janitor

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
	"time"

	"github.com/sessionwatch/sessionwatch/indexer"
)

// JournalName is the journal file in the state directory.
const JournalName = "journal.jsonl"

// JournalEntry is one line of <state_dir>/journal.jsonl (SPEC §5.6).
//
// An action that changes the disk in steps (archive, delete by retention,
// restore) writes two lines with the same actionId: its intent (phase
// "intent", fsync'd before anything is touched) and its completion (no phase),
// or, when it is undone, a "rollback" line. Start-up recovery (recover.go)
// finishes or rolls back every intent left without either.
type JournalEntry struct {
	Time     string `json:"time"`
	Action   string `json:"action"`
	ActionID string `json:"actionId,omitempty"`
	Phase    string `json:"phase,omitempty"` // PhaseIntent, PhaseRollback, or "" for a completed action
	Source   string `json:"source"`
	ID       string `json:"id"`
	File     string `json:"file"`
	Bytes    int64  `json:"bytes"`
	Reason   string `json:"reason"`
	Project  string `json:"project,omitempty"`
	Archive  string `json:"archive,omitempty"`
	PID      int    `json:"pid,omitempty"`
	Error    string `json:"error,omitempty"` // the action failed part-way (see archive)
	// Paths are the session paths a retirement moves (an intent) or a
	// restore creates.
	Paths []string `json:"paths,omitempty"`
	// Staged are the names Paths are moved to during a retirement, in order.
	Staged []string `json:"staged,omitempty"`
	// ArchiveDir is where a retirement writes its archive.
	ArchiveDir string `json:"archiveDir,omitempty"`
}

// Journal phases.
const (
	PhaseIntent   = "intent"
	PhaseRollback = "rollback"
)

// journal appends entries to the journal file, opened on first use. A dry-run
// journal writes nothing (and creates nothing).
type journal struct {
	path string
	dry  bool
	f    *os.File
	err  error
	// torn: the file may end inside a line (a crash or a full disk cut a
	// write short); the next line starts with a newline so it is never glued
	// onto the fragment and lost to recovery with it.
	torn bool
}

func newJournal(stateDir string, dry bool) *journal {
	return &journal{path: filepath.Join(stateDir, JournalName), dry: dry}
}

// add appends one action as one line, in a single write(2) on an O_APPEND file
// so concurrent writers (the daemon and a CLI) never interleave within a line.
func (j *journal) add(now time.Time, a Action) error {
	return j.write(JournalEntry{Time: indexer.FormatTime(now), Action: a.Kind, ActionID: a.ActionID, Source: a.Source, ID: a.ID, File: a.File,
		Bytes: a.Bytes, Reason: a.Reason, Project: a.Project, Archive: a.Archive, PID: a.PID, Error: a.Error}, false)
}

// intent journals what an action is about to do and makes it durable before
// the caller touches anything.
func (j *journal) intent(e JournalEntry) error {
	e.Phase = PhaseIntent
	return j.write(e, true)
}

func (j *journal) write(e JournalEntry, sync bool) error {
	if j.dry {
		return nil
	}
	if j.f == nil && j.err == nil {
		if err := os.MkdirAll(filepath.Dir(j.path), 0o700); err != nil {
			j.err = fmt.Errorf("open journal: %w", err)
		} else {
			j.f, j.err = os.OpenFile(j.path, os.O_RDWR|os.O_APPEND|os.O_CREATE, 0o600)
			if j.err == nil {
				j.torn = endsTorn(j.f)
			}
		}
	}
	if j.err != nil {
		return j.err
	}
	line, err := json.Marshal(e)
	if err != nil {
		return err
	}
	buf := append(line, '\n')
	if j.torn {
		buf = append([]byte{'\n'}, buf...)
	}
	if _, err := j.f.Write(buf); err != nil {
		j.torn = true
		return fmt.Errorf("write journal: %w", err)
	}
	j.torn = false
	if sync {
		if err := j.f.Sync(); err != nil {
			return fmt.Errorf("sync journal: %w", err)
		}
	}
	return nil
}

// endsTorn reports whether f's last byte is not a newline: a write before was
// cut short. Complete lines appear whole (one write(2) on an O_APPEND file).
func endsTorn(f *os.File) bool {
	fi, err := f.Stat()
	if err != nil || fi.Size() == 0 {
		return false
	}
	var b [1]byte
	if _, err := f.ReadAt(b[:], fi.Size()-1); err != nil {
		return true
	}
	return b[0] != '\n'
}

// close makes the pass's lines durable.
func (j *journal) close() error {
	if j.f == nil {
		return j.err
	}
	err := j.f.Sync()
	if cerr := j.f.Close(); err == nil {
		err = cerr
	}
	j.f = nil
	if err != nil {
		return fmt.Errorf("sync journal: %w", err)
	}
	return nil
}

// ReadJournal parses a journal file and returns the actions carried out (the
// completion lines: intents and rollbacks left out); malformed lines are an
// error naming the line.
func ReadJournal(path string) ([]JournalEntry, error) {
	all, err := ReadJournalAll(path)
	var out []JournalEntry
	for _, e := range all {
		if e.Phase == "" {
			out = append(out, e)
		}
	}
	return out, err
}

// ReadJournalAll parses every line of a journal file, intents included. A
// malformed line (a write a crash cut short) is skipped, not the end: the
// error names the first one, and every well-formed line is returned.
func ReadJournalAll(path string) ([]JournalEntry, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var out []JournalEntry
	var first error
	for i, line := range splitLines(data) {
		var e JournalEntry
		if err := json.Unmarshal(line, &e); err != nil {
			if first == nil {
				first = fmt.Errorf("journal line %d: %w", i+1, err)
			}
			continue
		}
		out = append(out, e)
	}
	return out, first
}

func splitLines(b []byte) [][]byte {
	var out [][]byte
	for len(b) > 0 {
		i := 0
		for i < len(b) && b[i] != '\n' {
			i++
		}
		if i > 0 {
			out = append(out, b[:i])
		}
		if i == len(b) {
			break
		}
		b = b[i+1:]
	}
	return out
}

// PassLockName is the flock that serializes janitor passes across processes.
const PassLockName = "janitor.lock"

// lockPass takes the exclusive flock on <state_dir>/janitor.lock, waiting (and
// polling, so ctx can end the wait) while another pass holds it. The returned
// function releases it.
func lockPass(ctx context.Context, stateDir string) (func(), error) {
	if err := os.MkdirAll(stateDir, 0o700); err != nil {
		return nil, fmt.Errorf("create state dir: %w", err)
	}
	path := filepath.Join(stateDir, PassLockName)
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", path, err)
	}
	for {
		err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		if err == nil {
			break
		}
		if !errors.Is(err, syscall.EWOULDBLOCK) {
			f.Close()
			return nil, fmt.Errorf("lock %s: %w", path, err)
		}
		select {
		case <-ctx.Done():
			holder := readPID(path)
			f.Close()
			return nil, fmt.Errorf("%w (pid %s): %w", ErrBusy, holder, ctx.Err())
		case <-time.After(50 * time.Millisecond):
		}
	}
	f.Truncate(0)
	f.WriteAt([]byte(strconv.Itoa(os.Getpid())+"\n"), 0)
	return func() { f.Close() }, nil
}

// ErrBusy: another janitor pass held the pass lock for longer than we waited.
var ErrBusy = errors.New("another janitor pass is running")

func readPID(path string) string {
	data, err := os.ReadFile(path)
	if err != nil || len(data) == 0 {
		return "?"
	}
	if n, err := strconv.Atoi(string(trimNL(data))); err == nil {
		return strconv.Itoa(n)
	}
	return "?"
}

func trimNL(b []byte) []byte {
	for len(b) > 0 && (b[len(b)-1] == '\n' || b[len(b)-1] == ' ') {
		b = b[:len(b)-1]
	}
	return b
}

// removeQuiet removes a path, treating "already gone" as success.
func removeQuiet(path string) error {
	if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	return nil
}
