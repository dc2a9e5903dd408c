package janitor

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/google/uuid"
	"github.com/sessionwatch/sessionwatch/config"
	"github.com/sessionwatch/sessionwatch/indexer"
)

// FirstRunMarker is the file in the state dir written after the janitor's
// first pass on this machine (preview or not). A machine where the janitor
// "never ran" is one whose state dir holds neither it nor the journal: any
// non-dry action (a pass, `delete`, `restore`) leaves a journal, so a state dir
// that has one has seen sessionwatch change something before.
const FirstRunMarker = "janitor.first-run"

// KindPass is the journal action of the line ending a pass (PassEntry).
const KindPass = "pass"

// PassEntry is the line every pass that is not a dry run (and a first-run
// preview) appends to the journal when it ends, so `status` can tell the last
// pass by anyone (the daemon's or a `clean`) and what it did, even when it
// changed nothing. Its first fields are those of every journal line.
type PassEntry struct {
	Time         string `json:"time"`
	Action       string `json:"action"` // KindPass
	ActionID     string `json:"actionId"`
	Source       string `json:"source"` // "" for every source, else clean --source
	ID           string `json:"id"`     // ""
	File         string `json:"file"`   // ""
	Bytes        int64  `json:"bytes"`  // bytes freed
	Reason       string `json:"reason"` // the counts in words
	Preview      bool   `json:"preview,omitempty"`
	Retired      int    `json:"retired"`
	Archived     int    `json:"archived"`
	Deleted      int    `json:"deleted"`
	SkippedInUse int    `json:"skippedInUse"`
	Errors       int    `json:"errors"`
}

// neverRan reports whether the janitor has never run with this state dir: no
// journal and no first-run marker.
func neverRan(stateDir string) bool {
	for _, name := range []string{JournalName, FirstRunMarker} {
		if _, err := os.Lstat(filepath.Join(stateDir, name)); !errors.Is(err, fs.ErrNotExist) {
			return false
		}
	}
	return true
}

// previewFirst reports whether a pass the user did not ask for must only
// preview: janitor.first_run is not "apply" and the janitor never ran here.
// It is called with the pass lock held, so two first passes cannot both apply.
func (j *Janitor) previewFirst(o Overrides) bool {
	return o.Auto && j.cfg.Janitor.FirstRun != config.FirstRunApply && neverRan(j.cfg.StateDir)
}

// endPass appends the pass's PassEntry to the journal (one write, fsync'd)
// and writes the first-run marker if there is none yet.
func (j *Janitor) endPass(rep *Report, source string) error {
	e := PassEntry{Time: indexer.FormatTime(rep.Time), Action: KindPass, ActionID: uuid.NewString(), Source: source, Bytes: rep.BytesFreed,
		Preview: rep.Preview, Retired: rep.Retired, Archived: rep.Archived, Deleted: rep.Deleted,
		SkippedInUse: rep.SkippedInUse, Errors: len(rep.Errors)}
	e.Reason = fmt.Sprintf("retired %d (archived %d, deleted %d), skipped in use %d", e.Retired, e.Archived, e.Deleted, e.SkippedInUse)
	if e.Preview {
		e.Reason = fmt.Sprintf("first-run preview, nothing changed: would retire %d (archive %d, delete %d)", e.Retired, e.Archived, e.Deleted)
	}
	line, err := json.Marshal(e)
	if err != nil {
		return err
	}
	path := filepath.Join(j.cfg.StateDir, JournalName)
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		return fmt.Errorf("open journal: %w", err)
	}
	_, err = f.Write(append(line, '\n'))
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("write journal: %w", err)
	}
	marker := filepath.Join(j.cfg.StateDir, FirstRunMarker)
	if _, err := os.Lstat(marker); errors.Is(err, fs.ErrNotExist) {
		return indexer.WriteFileAtomic(marker, []byte("first janitor pass "+e.Time+"\n"))
	}
	return nil
}

// passHint is the hint of a pass's summary log line: how to see and undo what
// it retired, or (a preview) how to apply it.
func passHint(rep *Report, stateDir string) string {
	switch {
	case rep.Preview:
		return "this is the first janitor pass on this machine, so nothing was changed; see the list with 'sessionwatch clean --dry-run', " +
			"apply it now with 'sessionwatch clean' (the next scheduled pass applies it too), or set janitor.first_run to \"apply\""
	case rep.Archived > 0:
		h := "see them with 'sessionwatch list --archived --all'; undo with 'sessionwatch restore REF --all'"
		if rep.Deleted > 0 {
			h += "; deleted sessions (action delete) cannot be restored: " + filepath.Join(stateDir, JournalName) + " names them"
		}
		return h
	default:
		return "deleted sessions (action delete) cannot be restored: " + filepath.Join(stateDir, JournalName) + " names them"
	}
}

// lastPassTail is how much of the journal's end LastPass reads at first.
const lastPassTail = 64 << 10

// LastPass returns the journal's last PassEntry: the last janitor pass that
// was not a dry run, by any process. ok is false when there is none (or no
// journal). It reads the journal from its end; lines it cannot parse are
// skipped, and unknown fields are ignored.
func LastPass(stateDir string) (e PassEntry, ok bool, err error) {
	f, err := os.Open(filepath.Join(stateDir, JournalName))
	if errors.Is(err, fs.ErrNotExist) {
		return PassEntry{}, false, nil
	}
	if err != nil {
		return PassEntry{}, false, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return PassEntry{}, false, err
	}
	size := fi.Size()
	for n := int64(lastPassTail); ; n *= 4 {
		off := max(size-n, 0)
		buf := make([]byte, size-off)
		if _, err := f.ReadAt(buf, off); err != nil && !errors.Is(err, io.EOF) {
			return PassEntry{}, false, err
		}
		if off > 0 {
			// The first line may be cut: start after its end.
			i := bytes.IndexByte(buf, '\n')
			if i < 0 {
				continue
			}
			buf = buf[i+1:]
		}
		lines := splitLines(buf)
		for i := len(lines) - 1; i >= 0; i-- {
			if !bytes.Contains(lines[i], []byte(`"`+KindPass+`"`)) {
				continue
			}
			var p PassEntry
			if json.Unmarshal(lines[i], &p) == nil && p.Action == KindPass {
				return p, true, nil
			}
		}
		if off == 0 {
			return PassEntry{}, false, nil
		}
	}
}
