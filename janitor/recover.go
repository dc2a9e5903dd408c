package janitor

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/sessionwatch/sessionwatch/indexer"
)

// Recovery is what start-up recovery did.
type Recovery struct {
	Finished   int      // interrupted actions carried to their end
	RolledBack int      // interrupted actions undone
	Temps      []string // abandoned temp files removed
	Errors     []string // what could not be resolved (the intent stays open)
}

// Recover finishes or rolls back every action the journal shows begun and
// never completed (a crash, a kill), and removes the temp files left in the
// archive directory: under the pass lock no other pass writes there, so every
// one of them is abandoned. It runs once per Janitor (the daemon's start, a
// command that runs the janitor) before anything else takes the pass lock.
func (j *Janitor) Recover(ctx context.Context) (Recovery, error) {
	release, err := lockPass(ctx, j.cfg.StateDir)
	if err != nil {
		return Recovery{}, err
	}
	defer release()
	return j.recoverLocked(), nil
}

// recoverOnce runs recovery the first time this Janitor holds the pass lock.
func (j *Janitor) recoverOnce() {
	j.mu.Lock()
	done := j.recovered
	j.recovered = true
	j.mu.Unlock()
	if !done {
		j.recoverLocked()
	}
}

func (j *Janitor) recoverLocked() Recovery {
	j.mu.Lock()
	j.recovered = true
	j.mu.Unlock()
	var rec Recovery
	jr := newJournal(j.cfg.StateDir, false)
	defer jr.close()
	open, err := openIntents(jr.path)
	if err != nil {
		rec.Errors = append(rec.Errors, err.Error())
	}
	touched := map[string][]string{} // source → store paths to re-index
	for _, e := range open {
		var done bool
		var why string
		var err error
		switch e.Action {
		case KindArchive, KindDelete:
			done, why, err = recoverRetire(e)
		case KindRestore:
			done, why, err = recoverRestore(e)
		default:
			continue
		}
		if err != nil {
			rec.Errors = append(rec.Errors, fmt.Sprintf("%s %s (action %s): %v", e.Action, e.ID, e.ActionID, err))
			j.log.Error("recovery failed", "action", e.Action, "id", e.ID, "actionId", e.ActionID, "err", err)
			continue
		}
		out := JournalEntry{Time: indexer.FormatTime(time.Now()), Action: e.Action, ActionID: e.ActionID, Source: e.Source, ID: e.ID,
			File: e.File, Bytes: e.Bytes, Project: e.Project, Archive: e.Archive, Reason: why}
		if done {
			rec.Finished++
			if e.Action == KindArchive {
				out.Archive = findArchive(e.ArchiveDir, e.ActionID)
			}
			if e.Action == KindRestore {
				// A restore counts as activity (Restore): finished now, it
				// is not retired again by the pass that follows.
				pins := loadPins(j.cfg.StateDir)
				pins[e.File] = j.opt.Now()
				if err := savePins(j.cfg.StateDir, pins); err != nil {
					rec.Errors = append(rec.Errors, fmt.Sprintf("record restore of %s: %v", e.ID, err))
				}
			}
		} else {
			rec.RolledBack++
			out.Phase = PhaseRollback
		}
		if err := jr.write(out, false); err != nil {
			rec.Errors = append(rec.Errors, err.Error())
		}
		j.log.Info("interrupted action recovered", "action", e.Action, "id", e.ID, "actionId", e.ActionID, "finished", done, "how", why)
		touched[e.Source] = append(touched[e.Source], e.Paths...)
	}
	rec.Temps = cleanArchiveTemps(j.cfg.ArchiveDir)
	for _, t := range rec.Temps {
		j.log.Info("abandoned temp file removed", "file", t)
	}
	if j.group != nil {
		for src, paths := range touched {
			if ix := j.group.Indexer(src); ix != nil {
				if err := ix.Update(paths); err != nil {
					rec.Errors = append(rec.Errors, err.Error())
				}
			}
		}
	}
	return rec
}

// openIntents reads the journal and returns the intents that no completion
// or rollback line closes, in journal order. Unparseable lines are skipped.
func openIntents(path string) ([]JournalEntry, error) {
	f, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read journal: %w", err)
	}
	defer f.Close()
	open := map[string]JournalEntry{}
	var order []string
	err = eachJournalLine(f, maxJournalLine, func(line []byte) {
		if !mayBeOfAnIntent(line) {
			return
		}
		var e JournalEntry
		if json.Unmarshal(line, &e) != nil || e.ActionID == "" {
			return
		}
		switch {
		case e.Phase == PhaseIntent:
			open[e.ActionID] = e
			order = append(order, e.ActionID)
		case e.Error != "" && e.Phase == "":
			// A retirement that failed part-way: recovery still owns it.
		default:
			delete(open, e.ActionID)
		}
	})
	var out []JournalEntry
	for _, id := range order {
		if e, ok := open[id]; ok {
			out = append(out, e)
			delete(open, id)
		}
	}
	if err != nil {
		err = fmt.Errorf("read journal: %w", err)
	}
	return out, err
}

// maxJournalLine bounds the memory a journal line may take while recovery
// reads it: no line the janitor writes comes near it.
const maxJournalLine = 16 << 20

// eachJournalLine calls fn with every line of r (without its CR LF or LF) of
// at most max bytes. A longer line (junk a crash or a bad disk left) is
// skipped, not the end: every intent after it must still be found, and the
// journal only grows, so stopping there would hide each intent written after
// it from every later start.
func eachJournalLine(r io.Reader, max int, fn func([]byte)) error {
	br := bufio.NewReaderSize(r, 64<<10)
	var line []byte
	long := false
	for {
		chunk, err := br.ReadSlice('\n')
		if !long {
			if len(line)+len(chunk) > max+2 {
				long, line = true, line[:0]
			} else {
				line = append(line, chunk...)
			}
		}
		if errors.Is(err, bufio.ErrBufferFull) {
			continue
		}
		if !long {
			line = bytes.TrimSuffix(line, []byte("\n"))
			line = bytes.TrimSuffix(line, []byte("\r"))
			if len(line) > 0 && len(line) <= max {
				fn(line)
			}
		}
		line, long = line[:0], false
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
	}
}

// mayBeOfAnIntent: line may be an intent or close one, as only the lines of
// an archive, delete or restore do (a phase, or their completion); every other
// action's line (rmdir, warn, …, each with an actionId of its own) is skipped
// unparsed.
func mayBeOfAnIntent(line []byte) bool {
	s := string(line)
	if !strings.Contains(s, `"actionId"`) {
		return false
	}
	for _, k := range []string{KindArchive, KindDelete, KindRestore} {
		if strings.Contains(s, `"action":"`+k+`"`) {
			return true
		}
	}
	return strings.Contains(s, `"phase"`)
}

// recoverRetire resolves an interrupted retirement. done reports whether it
// was finished (the session is in the archive, or deleted) rather than rolled
// back (the session is in the store), why says how.
//
//   - Nothing staged: either nothing moved yet (rolled back), or everything
//     staged was removed (finished: the archive, if any, holds it).
//   - All staged, the originals free: put back, drop the archive if one was
//     linked (rolled back). A later pass retires the session again.
//   - Otherwise, with the archive written: remove what is left staged (finished).
//   - Otherwise put back what can be; a path recreated meanwhile keeps its
//     staged copy and the intent stays open (an error).
func recoverRetire(e JournalEntry) (done bool, why string, err error) {
	if len(e.Staged) != len(e.Paths) {
		return false, "", errors.New("journal intent without staging names")
	}
	for _, tmp := range archiveTemps(e.ArchiveDir, e.ActionID) {
		removeQuiet(tmp)
	}
	arch := ""
	if e.Action == KindArchive {
		arch = findArchive(e.ArchiveDir, e.ActionID)
	}
	// A staged name and its original on one inode: a put-back (putBack links,
	// then unlinks the staged name) was cut short, so a rollback was under way
	// and the archive, if one is left, is a copy to drop. Finish the rollback;
	// taking the original for a recreated file would leave the session both in
	// the store and in the archive.
	rolling := false
	for i, st := range e.Staged {
		if sameInode(st, e.Paths[i]) {
			if err := removeQuiet(st); err != nil {
				return false, "", err
			}
			if err := indexer.SyncDir(filepath.Dir(st)); err != nil {
				return false, "", err
			}
			rolling = true
		}
	}
	if rolling {
		if err := dropArchive(arch); err != nil {
			return false, "", err
		}
		arch = ""
		var errs []error
		for i := len(e.Staged) - 1; i >= 0; i-- {
			if err := putBack(e.Staged[i], e.Paths[i]); err != nil {
				errs = append(errs, err)
			}
		}
		if err := errors.Join(errs...); err != nil {
			return false, "", err
		}
		return false, "interrupted: put back at start-up", nil
	}
	staged, free := 0, 0
	for i, s := range e.Staged {
		if _, err := os.Lstat(s); err == nil {
			staged++
		}
		if _, err := os.Lstat(e.Paths[i]); errors.Is(err, fs.ErrNotExist) {
			free++
		}
	}
	switch {
	case staged == 0 && (arch != "" || e.Action == KindDelete && anyGone(e.Paths)):
		return true, "finished at start-up after an interruption", nil
	case staged == 0:
		return false, "interrupted before anything moved", nil
	case staged == len(e.Staged) && free == len(e.Paths):
		// The archive goes first: a crash between the two steps then leaves
		// the session staged (rolled back again at the next start), never both
		// put back and archived (which would read as finished).
		if err := dropArchive(arch); err != nil {
			return false, "", err
		}
		if crashed("recover-archive-dropped") {
			return false, "", errCrashed
		}
		for i := len(e.Staged) - 1; i >= 0; i-- {
			if err := putBack(e.Staged[i], e.Paths[i]); err != nil {
				return false, "", err
			}
		}
		return false, "interrupted: put back at start-up", nil
	case arch != "" || e.Action == KindDelete:
		if err := removeStaged(e.Staged); err != nil {
			return false, "", err
		}
		return true, "finished at start-up after an interruption", nil
	}
	var errs []error
	for i := len(e.Staged) - 1; i >= 0; i-- {
		if err := putBack(e.Staged[i], e.Paths[i]); err != nil {
			errs = append(errs, err)
		}
	}
	if err := errors.Join(errs...); err != nil {
		return false, "", err
	}
	return false, "interrupted: put back at start-up", nil
}

// sameInode reports whether a and b both exist and are one file.
func sameInode(a, b string) bool {
	fa, err := os.Lstat(a)
	if err != nil {
		return false
	}
	fb, err := os.Lstat(b)
	return err == nil && os.SameFile(fa, fb)
}

// dropArchive removes an archive (if any) durably.
func dropArchive(arch string) error {
	if arch == "" {
		return nil
	}
	if err := removeQuiet(arch); err != nil {
		return err
	}
	return indexer.SyncDir(filepath.Dir(arch))
}

func anyGone(paths []string) bool {
	for _, p := range paths {
		if _, err := os.Lstat(p); errors.Is(err, fs.ErrNotExist) {
			return true
		}
	}
	return false
}

// removeStaged removes staged paths (trees) left by an interrupted retirement.
func removeStaged(staged []string) error {
	var errs []error
	for _, s := range staged {
		if _, err := os.Lstat(s); err != nil {
			continue
		}
		if err := os.RemoveAll(s); err != nil {
			errs = append(errs, err)
			continue
		}
		if err := indexer.SyncDir(filepath.Dir(s)); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// findArchive returns the archive in dir written by action id, or "".
func findArchive(dir, id string) string {
	if dir == "" || id == "" {
		return ""
	}
	ents, err := os.ReadDir(dir)
	if err != nil {
		return ""
	}
	for _, x := range ents {
		if !x.Type().IsRegular() || strings.HasPrefix(x.Name(), indexer.TempPrefix) || !strings.HasSuffix(x.Name(), ".gz") {
			continue
		}
		p := filepath.Join(dir, x.Name())
		if a, err := ReadArchive(p); err == nil && a.Meta.ActionID == id {
			return p
		}
	}
	return ""
}

// archiveTemps lists the temp archives an action left in dir.
func archiveTemps(dir, id string) []string {
	if dir == "" || id == "" {
		return nil
	}
	m, _ := filepath.Glob(filepath.Join(dir, indexer.TempPrefix+"archive-"+id+"-*"))
	return m
}

// ArchiveTemps lists the temp files in the archive directory (its source and
// project directories): what `doctor` reports and recovery removes.
func ArchiveTemps(archiveDir string) []string {
	var out []string
	for _, pat := range []string{"*", "*/*", "*/*/*"} {
		m, _ := filepath.Glob(filepath.Join(archiveDir, pat, indexer.TempPrefix+"*"))
		out = append(out, m...)
	}
	return out
}

// cleanArchiveTemps removes the archive directory's temp files; the caller
// holds the pass lock, under which alone they are written.
func cleanArchiveTemps(archiveDir string) []string {
	var out []string
	m := ArchiveTemps(archiveDir)
	m2, _ := filepath.Glob(filepath.Join(archiveDir, indexer.TempPrefix+"*"))
	for _, p := range append(m, m2...) {
		if fi, err := os.Lstat(p); err != nil || !fi.Mode().IsRegular() {
			continue
		}
		if removeQuiet(p) == nil {
			out = append(out, p)
		}
	}
	return out
}

// recoverRestore resolves an interrupted restore: when the archive is gone,
// or every file it holds is back in place (same size and mtime), it is
// finished (the archive removed); otherwise the files it created are removed
// and it is rolled back, so a new `restore` starts clean. Its temp files go
// either way.
func recoverRestore(e JournalEntry) (done bool, why string, err error) {
	prefix := indexer.TempPrefix + "restore-" + e.ActionID + "-"
	for _, p := range e.Paths {
		m, _ := filepath.Glob(filepath.Join(filepath.Dir(p), prefix+"*"))
		for _, t := range m {
			removeQuiet(t)
		}
		// A directory session: its files' temps are inside it.
		if fi, err := os.Lstat(p); err == nil && fi.IsDir() {
			filepath.WalkDir(p, func(q string, d fs.DirEntry, err error) error {
				if err == nil && d.Type().IsRegular() && strings.HasPrefix(d.Name(), prefix) {
					removeQuiet(q)
				}
				return nil
			})
		}
	}
	if _, err := os.Lstat(e.Archive); errors.Is(err, fs.ErrNotExist) {
		return true, "finished at start-up after an interruption", nil
	}
	ar, err := ReadArchive(e.Archive)
	if err != nil {
		return false, "", err
	}
	files := ar.Meta.Files
	if ar.Meta.Format == FormatTar {
		if files, err = tarIndex(ar.Path); err != nil {
			return false, "", err
		}
	}
	var ours []string
	all := true
	for _, af := range files {
		if af.Dir {
			continue
		}
		abs := filepath.Join(ar.Meta.Root, filepath.FromSlash(af.rel()))
		fi, err := os.Lstat(abs)
		if err == nil && fi.Mode().IsRegular() && fi.Size() == af.Size && fi.ModTime().UnixNano() == af.Mtime {
			ours = append(ours, abs)
		} else {
			all = false
		}
	}
	if all {
		if err := removeQuiet(ar.Path); err != nil {
			return false, "", err
		}
		indexer.SyncDir(filepath.Dir(ar.Path))
		return true, "finished at start-up after an interruption", nil
	}
	for _, p := range ours {
		if err := removeQuiet(p); err != nil {
			return false, "", err
		}
		indexer.SyncDir(filepath.Dir(p))
	}
	return false, "interrupted: undone at start-up; the archive stays", nil
}
