package janitor

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/sessionwatch/sessionwatch/config"
	"github.com/sessionwatch/sessionwatch/indexer"
)

// HyperYOLO (SPEC §3.6) keeps every session as one record of a single store
// file. The janitor retires records, never the file: it plans from the catalog,
// and only when a record is due does it take the store's lock, re-read the
// store under it, plan again from what it read, append the retired records to
// <archive_dir>/<source>/records.jsonl (fsync'd), and rewrite the store the way
// HyperYOLO does — every other record keeps its value — before releasing the
// lock and updating the catalog.
//
// The lock protocol is HyperYOLO's (proper-lockfile with stale 30 s): the
// directory <store>.lock is held by whoever created it, and is busy while its
// mtime is younger than 30 s. A busy store is never edited; the pass reports
// "store busy" and the next pass retries. A lock dir 30 s old or more is stale
// and is replaced (rmdir, mkdir), as proper-lockfile does.

// HyperyoloLockStale is the age at which HyperYOLO's store lock directory is
// stale (proper-lockfile's "stale" option as HyperYOLO sets it).
const HyperyoloLockStale = 30 * time.Second

// hyperyoloTmpSuffix is the temp file HyperYOLO's protocol writes before the rename.
const hyperyoloTmpSuffix = ".tmp"

// ErrStoreBusy: a store's lock is held by its agent (or cannot be judged); it
// was not edited. Try again later.
var ErrStoreBusy = errors.New("store busy")

// storeLock is a held store lock directory. It is known by its inode and the
// mtime we last saw or set: an inode number can be reused at once by a
// directory made after ours was removed, a nanosecond mtime practically not.
type storeLock struct {
	path  string
	ino   uint64
	mtime time.Time // the lock dir's mtime as we created or last refreshed it
	last  time.Time // when that was
}

// ours reports whether fi is still our lock directory.
func (l *storeLock) ours(fi fs.FileInfo) bool {
	_, ino := identity(fi)
	return fi.IsDir() && ino == l.ino && fi.ModTime().Equal(l.mtime)
}

// lockStore takes <store>.lock the way proper-lockfile does: mkdir; when it
// exists, it is busy while younger than HyperyoloLockStale and replaced when
// older. Errors wrapping ErrStoreBusy say why the store must be left alone now.
func lockStore(store string) (*storeLock, error) {
	path := store + ".lock"
	for attempt := 0; attempt < 3; attempt++ {
		err := os.Mkdir(path, 0o700)
		if err == nil {
			fi, err := os.Lstat(path)
			if err != nil {
				return nil, fmt.Errorf("lock %s: %w", store, err)
			}
			_, ino := identity(fi)
			return &storeLock{path: path, ino: ino, mtime: fi.ModTime(), last: time.Now()}, nil
		}
		if !errors.Is(err, fs.ErrExist) {
			return nil, fmt.Errorf("lock %s: %w", store, err)
		}
		busy, err := lockBusy(path)
		if err != nil {
			return nil, err
		}
		if busy != "" {
			return nil, fmt.Errorf("%w: %s", ErrStoreBusy, busy)
		}
		// Stale: remove it (only an empty directory goes) and try again.
		if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("%w: stale lock %s cannot be removed: %v", ErrStoreBusy, path, err)
		}
	}
	return nil, fmt.Errorf("%w: lock %s keeps changing", ErrStoreBusy, path)
}

// lockBusy judges an existing lock path: why it is busy, or "" when it is a
// stale lock directory (or gone). Anything but a directory is busy: it is not
// HyperYOLO's and is never removed.
func lockBusy(path string) (string, error) {
	fi, err := os.Lstat(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return "", nil
	case err != nil:
		return "", fmt.Errorf("%w: stat lock %s: %v", ErrStoreBusy, path, err)
	case !fi.IsDir():
		return fmt.Sprintf("%s is not a lock directory (left alone)", path), nil
	}
	age := time.Since(fi.ModTime())
	if age < HyperyoloLockStale {
		return fmt.Sprintf("lock %s is %s old (busy under %s)", path, ageString(age.Round(time.Second)), HyperyoloLockStale), nil
	}
	return "", nil
}

// refresh checks the lock is still ours and renews its mtime, so nobody judges
// it stale while we work. A lock held so long that it may have been taken
// over (more than HyperyoloLockStale since the last refresh) is lost.
func (l *storeLock) refresh() error {
	fi, err := os.Lstat(l.path)
	if err != nil {
		return fmt.Errorf("%w: lock %s lost: %v", ErrStoreBusy, l.path, err)
	}
	if !l.ours(fi) {
		return fmt.Errorf("%w: lock %s was replaced", ErrStoreBusy, l.path)
	}
	now := time.Now()
	if now.Sub(l.last) >= HyperyoloLockStale {
		return fmt.Errorf("%w: lock %s held for %s without refresh", ErrStoreBusy, l.path, now.Sub(l.last).Round(time.Second))
	}
	if err := os.Chtimes(l.path, now, now); err != nil {
		return fmt.Errorf("refresh lock %s: %w", l.path, err)
	}
	if fi, err = os.Lstat(l.path); err != nil {
		return fmt.Errorf("%w: lock %s lost: %v", ErrStoreBusy, l.path, err)
	}
	l.mtime, l.last = fi.ModTime(), now
	return nil
}

// release removes the lock directory if it is still ours.
func (l *storeLock) release() {
	if l == nil {
		return
	}
	if fi, err := os.Lstat(l.path); err == nil && l.ours(fi) {
		os.Remove(l.path)
	}
}

// storeFile is a store file as read: its bytes and identity (nil info when it
// does not exist).
type storeFile struct {
	path string
	data []byte
	info fs.FileInfo
}

// readStore reads a store file without following a symlink. A missing file is
// no error (info nil); anything but a regular file is.
func readStore(path string) (storeFile, error) {
	sf := storeFile{path: path}
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0)
	if errors.Is(err, fs.ErrNotExist) {
		return sf, nil
	}
	if err != nil {
		return sf, fmt.Errorf("open %s: %w", path, err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return sf, fmt.Errorf("stat %s: %w", path, err)
	}
	if !fi.Mode().IsRegular() {
		return sf, fmt.Errorf("%s is not a regular file", path)
	}
	if sf.data, err = io.ReadAll(f); err != nil {
		return sf, fmt.Errorf("read %s: %w", path, err)
	}
	sf.info = fi
	return sf, nil
}

// sameFile reports whether path is still the file sf read (same inode, size and
// mtime), or still missing when sf found none.
func (sf storeFile) same() bool {
	fi, err := os.Lstat(sf.path)
	if sf.info == nil {
		return errors.Is(err, fs.ErrNotExist)
	}
	if err != nil {
		return false
	}
	_, a := identity(fi)
	_, b := identity(sf.info)
	return a == b && fi.Size() == sf.info.Size() && fi.ModTime().Equal(sf.info.ModTime())
}

// mode is the permission the rewritten file keeps (0600 for a new one).
func (sf storeFile) mode() fs.FileMode {
	if sf.info == nil {
		return 0o600
	}
	return sf.info.Mode().Perm()
}

// writeStore replaces a HyperYOLO store under its held lock, as HyperYOLO
// does: <store>.tmp, fsync, rename over the store, fsync the directory. It
// refuses when the store changed since it was read or the lock was lost.
func writeStore(sf storeFile, data []byte, lk *storeLock) error {
	tmp := sf.path + hyperyoloTmpSuffix
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_TRUNC|syscall.O_NOFOLLOW, sf.mode())
	if err != nil {
		return fmt.Errorf("write %s: %w", tmp, err)
	}
	if err := commitFile(f, sf, data, lk.refresh); err != nil {
		return fmt.Errorf("rewrite %s: %w", sf.path, err)
	}
	return nil
}

// commitFile finishes an atomic replacement of sf.path: data into the open temp
// file f, fsync, the caller's last check (nil: none) and that sf is unchanged
// since it was read, rename over sf.path, fsync of the directory. The temp file
// is removed on any failure.
func commitFile(f *os.File, sf storeFile, data []byte, check func() error) error {
	tmp := f.Name()
	_, err := f.Write(data)
	if err == nil {
		err = f.Chmod(sf.mode())
	}
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil && check != nil {
		err = check()
	}
	if err == nil && !sf.same() {
		err = fmt.Errorf("%s: %w", sf.path, errChanged)
	}
	if err == nil {
		err = os.Rename(tmp, sf.path)
	}
	if err != nil {
		os.Remove(tmp)
		return err
	}
	return indexer.SyncDir(filepath.Dir(sf.path))
}

// recordPin is the restored.json key of a record: the store path and the key,
// joined by a NUL (which no path holds).
func recordPin(store, key string) string { return store + "\x00" + key }

// recordCandidates makes the candidates of a store's records. A record's
// "file mtime" is its own last activity, not the store's, which changes with
// every record. A record restored by the user is not retired again for being
// invalid by a scheduled pass (only by age, counted from the restore, or by
// clean --invalid-only).
func recordCandidates(sessions []*indexer.Session, store string, storeMtime time.Time, unsafe string, restored map[string]time.Time, invalidOnly bool) []Candidate {
	cands := make([]Candidate, 0, len(sessions))
	for _, s := range sessions {
		c := Candidate{Session: s, Paths: []string{store}, Bytes: s.SizeBytes, Unsafe: unsafe, Restored: restored[recordPin(store, s.ID)]}
		c.Mtime = indexer.ParseTime(s.LastActiveAt)
		if c.Mtime.IsZero() {
			c.Mtime = storeMtime
		}
		if !c.Restored.IsZero() && s.Invalid && !invalidOnly {
			cp := *s
			cp.Invalid = false
			c.Session = &cp
		}
		cands = append(cands, c)
	}
	return cands
}

// planRecords is Plan for a store's records, its reasons worded for records.
func planRecords(now time.Time, cands []Candidate, pol Policy) []Action {
	actions := Plan(now, cands, pol)
	for i := range actions {
		actions[i].Reason = recordReason(actions[i].Reason)
	}
	return actions
}

// recordReason words a plan's reason for a record: its "mtime" is its activity.
func recordReason(r string) string {
	r = strings.Replace(r, "file mtime is in the future", "lastActiveAt is in the future", 1)
	if strings.HasPrefix(r, "modified ") {
		r = "active " + strings.TrimPrefix(r, "modified ")
	}
	return r
}

// parseStore summarizes a store's records as the indexer does.
func parseStore(l indexer.Layout, sf storeFile) ([]*indexer.Session, error) {
	dl, ok := l.(indexer.DocumentLayout)
	if !ok {
		return nil, fmt.Errorf("layout %s does not parse documents", l.Name())
	}
	if sf.info == nil {
		return nil, nil
	}
	ss, err := dl.ParseDocument(indexer.FileFacts{Root: filepath.Dir(sf.path), Unit: filepath.Base(sf.path), Path: sf.path,
		Size: sf.info.Size(), Mtime: sf.info.ModTime()}, sf.data)
	if err != nil {
		return nil, err
	}
	for _, s := range ss {
		s.File = sf.path
	}
	return ss, nil
}

// hyperyolo runs the pass over a HyperYOLO source.
func (p *pass) hyperyolo(ix *indexer.Indexer, src config.Source, o Overrides) {
	j := p.j
	store := filepath.Clean(ix.Root())
	pol := j.policy(src, o)
	warnSize, warnCount := pol.WarnSize, pol.WarnCount
	pol.WarnSize, pol.WarnCount = 0, 0 // the store's own warning below: file size, record count
	sessions := ix.Sessions()
	fi, err := os.Lstat(store)
	if errors.Is(err, fs.ErrNotExist) {
		if len(sessions) > 0 && !p.dry {
			if err := ix.Update([]string{store}); err != nil {
				p.fail("update catalog of "+src.Name, err)
			}
		}
		return
	}
	if err != nil {
		p.fail("stat hyperyolo store", err)
		return
	}
	unsafe := ""
	if !fi.Mode().IsRegular() {
		unsafe = store + " is not a regular file (a symlink is never followed): the store is never edited"
	}

	// Plan from the catalog first: a pass with nothing due neither locks nor
	// reads the store.
	cands := recordCandidates(sessions, store, fi.ModTime(), unsafe, p.restored, pol.InvalidOnly)
	actions := planRecords(p.now, cands, pol)
	if !hasRetirement(actions) {
		p.recordActions(actions)
		p.storeWarning(src, store, fi.Size(), len(sessions), warnSize, warnCount)
		return
	}

	var lk *storeLock
	if p.dry {
		if busy, err := lockBusy(store + ".lock"); err != nil || busy != "" {
			p.storeBusy(src, store, busy, err)
			p.storeWarning(src, store, fi.Size(), len(sessions), warnSize, warnCount)
			return
		}
	} else {
		lk, err = lockStore(store)
		if err != nil {
			p.storeBusy(src, store, "", err)
			p.storeWarning(src, store, fi.Size(), len(sessions), warnSize, warnCount)
			return
		}
		defer lk.release()
	}

	// Under the lock: what the store holds now decides.
	sf, err := readStore(store)
	if err == nil && sf.info == nil {
		err = fmt.Errorf("%s: %w", store, fs.ErrNotExist)
	}
	var recs map[string]json.RawMessage
	var keys []string
	if err == nil {
		recs, keys, err = indexer.DecodeHyperyoloStore(sf.data)
	}
	var fresh []*indexer.Session
	if err == nil {
		fresh, err = parseStore(ix.Layout(), sf)
	}
	if err != nil {
		why := "store cannot be read: left alone (" + err.Error() + ")"
		p.record(Action{Kind: KindSkip, Source: src.Name, File: store, Reason: why})
		if j.noteChanged("file\x00"+store, why) {
			j.log.Warn("hyperyolo store left alone", "source", src.Name, "file", store, "err", err)
		}
		return
	}
	j.noteChanged("file\x00"+store, "")
	cands = recordCandidates(fresh, store, sf.info.ModTime(), unsafe, p.restored, pol.InvalidOnly)
	actions = planRecords(p.now, cands, pol)

	retire := map[string]bool{}
	var lines []RecordLine
	for i := range actions {
		a := &actions[i]
		if a.Kind != KindArchive && a.Kind != KindDelete {
			continue
		}
		retire[a.ID] = true
		if a.Kind == KindArchive {
			l, err := newRecordLine(src.Name, src.Layout, a.ID, store, a.Reason, recs[a.ID], time.Now())
			if err != nil {
				a.Error = err.Error()
				delete(retire, a.ID)
				continue
			}
			lines = append(lines, l)
		}
	}
	remaining := map[string]json.RawMessage{}
	for k, v := range recs {
		if !retire[k] {
			remaining[k] = v
		}
	}
	out, err := indexer.EncodeHyperyoloStore(remaining, keys)
	if err != nil {
		p.fail("encode hyperyolo store", err)
		return
	}
	size := int64(len(out))
	if len(retire) == 0 {
		size = sf.info.Size()
	}
	archive := filepath.Join(j.cfg.ArchiveDir, src.Name, RecordsName)
	if !p.dry && len(retire) > 0 {
		var failed error
		archived := false
		if len(lines) > 0 {
			if _, err := appendRecords(filepath.Dir(archive), lines); err != nil {
				failed = err
			} else {
				archived = true
			}
		}
		if failed == nil {
			failed = writeStore(sf, out, lk)
		}
		if failed != nil {
			p.fail("retire hyperyolo records", failed)
			size = sf.info.Size()
			for i := range actions {
				a := &actions[i]
				if retire[a.ID] && (a.Kind == KindArchive || a.Kind == KindDelete) {
					a.Error = failed.Error()
					a.touched = archived && a.Kind == KindArchive
					if a.touched {
						a.Archive = archive
					}
				}
			}
		}
	}
	for i := range actions {
		a := &actions[i]
		if a.Kind == KindArchive && a.Error == "" {
			a.Archive = archive
		}
	}
	p.recordActions(actions)
	if !p.dry && len(retire) > 0 {
		if err := ix.Update([]string{store}); err != nil {
			p.fail("update catalog of "+src.Name, err)
		}
	}
	p.storeWarning(src, store, size, len(fresh)-len(retire), warnSize, warnCount)
}

func hasRetirement(actions []Action) bool {
	for _, a := range actions {
		if a.Kind == KindArchive || a.Kind == KindDelete {
			return true
		}
	}
	return false
}

// recordActions logs and records the actions planned for a store's records.
func (p *pass) recordActions(actions []Action) {
	j := p.j
	for _, a := range actions {
		switch a.Kind {
		case KindArchive, KindDelete:
			if a.Error != "" {
				break
			}
			msg := "session " + pastTense(a.Kind)
			if p.dry {
				msg = "dry run: session would be " + pastTense(a.Kind)
			}
			j.log.Info(msg, "source", a.Source, "id", a.ID, "file", a.File, "bytes", a.Bytes, "reason", a.Reason, "archive", a.Archive)
		case KindRemoveLock:
			continue // a record has no lock of its own
		case KindWarn:
			p.rep.Warnings = append(p.rep.Warnings, Warning{Source: a.Source, Project: a.Project, Bytes: a.Bytes, Message: a.Reason, Hint: a.Hint})
			j.log.Warn("project over its limits", "source", a.Source, "project", a.Project, "reason", a.Reason, "hint", a.Hint)
		default:
			j.log.Debug("session due but kept", "source", a.Source, "id", a.ID, "reason", a.Reason, "pid", a.PID)
		}
		p.record(a)
	}
}

// storeBusy reports a store that was left alone because of its lock.
func (p *pass) storeBusy(src config.Source, store, busy string, err error) {
	reason := "store busy: " + busy
	if err != nil {
		reason = err.Error()
		if !strings.HasPrefix(reason, ErrStoreBusy.Error()) {
			p.fail("lock hyperyolo store "+store, err)
			return
		}
	}
	reason += ": retried at the next pass"
	p.record(Action{Kind: KindSkip, Source: src.Name, File: store, Reason: reason})
	p.j.log.Info("hyperyolo store busy, retried at the next pass", "source", src.Name, "file", store, "reason", reason)
}

// storeWarning warns when a store file is over warn_size bytes or holds more
// than warn_count records (the file's size, not the sum of its records).
func (p *pass) storeWarning(src config.Source, store string, size int64, records int, warnSize int64, warnCount int) {
	var over []string
	if warnCount > 0 && records > warnCount {
		over = append(over, fmt.Sprintf("%d records (warn_count %d)", records, warnCount))
	}
	if warnSize > 0 && size > warnSize {
		over = append(over, fmt.Sprintf("%d bytes (warn_size %s)", size, config.Size(warnSize)))
	}
	if len(over) == 0 {
		return
	}
	w := Warning{Source: src.Name, Bytes: size, Sessions: records,
		Message: fmt.Sprintf("store %s holds %s", store, strings.Join(over, " and ")),
		Hint: fmt.Sprintf("set a shorter retention or a max_sessions for source %q, or run 'sessionwatch clean --source %s --invalid-only --dry-run' to see the invalid records",
			src.Name, src.Name)}
	p.rep.Warnings = append(p.rep.Warnings, w)
	p.j.log.Warn("store over its limits", "source", src.Name, "file", store, "reason", w.Message, "hint", w.Hint)
	p.record(Action{Kind: KindWarn, Source: src.Name, File: store, Bytes: size, Reason: w.Message, Hint: w.Hint})
}

// deleteRecord removes one HyperYOLO record by request (`delete REF`), under
// the store's lock. It refuses, as Delete does, a record active within
// active_grace or with a lastActiveAt in the future unless forced, and a busy
// store (ErrStoreBusy).
func (j *Janitor) deleteRecord(ctx context.Context, ix *indexer.Indexer, en indexer.Entry, o DeleteOptions) (Report, error) {
	store := filepath.Clean(ix.Root())
	if !o.DryRun {
		release, err := lockPass(ctx, j.cfg.StateDir)
		if err != nil {
			return Report{}, err
		}
		defer release()
	}
	now := j.opt.Now()
	var lk *storeLock
	var err error
	if o.DryRun {
		if busy, err := lockBusy(store + ".lock"); err != nil {
			return Report{}, err
		} else if busy != "" {
			return Report{}, fmt.Errorf("%w: %s", ErrStoreBusy, busy)
		}
	} else {
		if lk, err = lockStore(store); err != nil {
			return Report{}, err
		}
		defer lk.release()
	}
	sf, err := readStore(store)
	if err != nil {
		return Report{}, fmt.Errorf("refusing to delete session %s: %w", en.ID, err)
	}
	recs, keys, err := indexer.DecodeHyperyoloStore(sf.data)
	if err != nil {
		return Report{}, fmt.Errorf("refusing to delete session %s: %w", en.ID, err)
	}
	raw, ok := recs[en.ID]
	if !ok || sf.info == nil {
		if !o.DryRun {
			ix.Update([]string{store})
		}
		return Report{}, fmt.Errorf("%w: record %s is no longer in %s", indexer.ErrNotFound, en.ID, store)
	}
	fresh, err := parseStore(ix.Layout(), sf)
	if err != nil {
		return Report{}, fmt.Errorf("refusing to delete session %s: %w", en.ID, err)
	}
	var last time.Time
	for _, s := range fresh {
		if s.ID == en.ID {
			last = indexer.ParseTime(s.LastActiveAt)
		}
	}
	grace := enabledDur(j.cfg.Janitor.ActiveGrace)
	kind, reason := KindArchive, "archived by request"
	if o.Permanent {
		kind, reason = KindDelete, "deleted by request"
	}
	recent := !last.IsZero() && grace > 0 && now.Sub(last) < grace
	switch {
	case last.After(now) && !o.Force:
		return Report{}, &RefusedError{ID: en.ID, Why: "its lastActiveAt is in the future"}
	case recent && !o.Force:
		return Report{}, &RefusedError{ID: en.ID, Why: fmt.Sprintf("active %s ago, within active_grace %s", ageString(now.Sub(last)), durString(grace))}
	case o.Force && (last.After(now) || recent):
		reason += " (--force)"
	}
	rep := &Report{Time: now.UTC(), DryRun: o.DryRun, Warnings: []Warning{}, Actions: []Action{}}
	p := &pass{j: j, ctx: ctx, now: now, dry: o.DryRun, jr: newJournal(j.cfg.StateDir, o.DryRun), rep: rep}
	a := Action{Kind: kind, Source: en.Source, ID: en.ID, File: store, Bytes: int64(len(raw)), Reason: reason, Paths: []string{store}}
	if !o.DryRun {
		if kind == KindArchive {
			// As a pass archives a record: its line is durable in records.jsonl
			// before the store is rewritten without it.
			l, err := newRecordLine(en.Source, ix.Layout().Name(), en.ID, store, reason, raw, time.Now())
			if err == nil {
				a.Archive, err = appendRecords(filepath.Join(j.cfg.ArchiveDir, en.Source), []RecordLine{l})
			}
			if err != nil {
				return *rep, fmt.Errorf("archive session %s: %w", en.ID, err)
			}
			a.touched = true
		}
		delete(recs, en.ID)
		out, err := indexer.EncodeHyperyoloStore(recs, keys)
		if err == nil {
			err = writeStore(sf, out, lk)
		}
		if err != nil {
			if a.touched {
				a.Error = err.Error()
				p.record(a)
				p.jr.close()
			}
			return *rep, fmt.Errorf("%s session %s: %w", kind, en.ID, err)
		}
		a.touched = true
	}
	p.record(a)
	if err := p.jr.close(); err != nil {
		p.fail("journal", err)
	}
	if !o.DryRun {
		if err := ix.Update([]string{store}); err != nil {
			p.fail("update catalog", err)
		}
	}
	tally(rep)
	return *rep, nil
}

// restoreRecord puts an archived HyperYOLO record back into its store under
// the store's lock, refusing (ErrExists) when the store holds that key again.
// Its line leaves records.jsonl only once the store is durable; the restore
// counts as the record's activity.
func (j *Janitor) restoreRecord(ctx context.Context, ar Archived) (Report, error) {
	rec := ar.Record
	store := filepath.Clean(rec.File)
	if !filepath.IsAbs(store) {
		return Report{}, fmt.Errorf("archived record %s: bad store path %q", rec.ID, rec.File)
	}
	release, err := lockPass(ctx, j.cfg.StateDir)
	if err != nil {
		return Report{}, err
	}
	defer release()
	now := j.opt.Now()
	if err := mkdirAllSynced(filepath.Dir(store)); err != nil {
		return Report{}, err
	}
	lk, err := lockStore(store)
	if err != nil {
		return Report{}, err
	}
	defer lk.release()
	sf, err := readStore(store)
	if err != nil {
		return Report{}, fmt.Errorf("restore record %s: %w", rec.ID, err)
	}
	recs, keys, err := indexer.DecodeHyperyoloStore(sf.data)
	if err != nil {
		return Report{}, fmt.Errorf("restore record %s: %w", rec.ID, err)
	}
	if _, ok := recs[rec.ID]; ok {
		return Report{}, fmt.Errorf("record %s in %s %w", rec.ID, store, ErrExists)
	}
	recs[rec.ID] = rec.Record
	out, err := indexer.EncodeHyperyoloStore(recs, append(keys, rec.ID))
	if err == nil {
		err = writeStore(sf, out, lk)
	}
	if err != nil {
		return Report{}, fmt.Errorf("restore record %s: %w", rec.ID, err)
	}
	lk.release()
	rep := &Report{Time: now.UTC(), Warnings: []Warning{}, Actions: []Action{}}
	p := &pass{j: j, ctx: ctx, now: now, jr: newJournal(j.cfg.StateDir, false), rep: rep}
	if _, err := rewriteRecords(ar.Path, func(line []byte) bool { return string(line) == string(rec.Line) }); err != nil {
		p.fail("remove restored record from "+ar.Path, err)
	}
	pins := loadPins(j.cfg.StateDir)
	pins[recordPin(store, rec.ID)] = now
	if err := savePins(j.cfg.StateDir, pins); err != nil {
		p.fail("record restore", err)
	}
	p.record(Action{Kind: KindRestore, Source: rec.Source, ID: rec.ID, File: store, Bytes: int64(len(rec.Record)),
		Archive: ar.Path, Paths: []string{store}, Reason: "restored from the archive"})
	if err := p.jr.close(); err != nil {
		p.fail("journal", err)
	}
	if ix := j.group.Indexer(rec.Source); ix != nil {
		if err := ix.Update([]string{store}); err != nil {
			p.fail("update catalog", err)
		}
	}
	j.log.Info("record restored", "source", rec.Source, "id", rec.ID, "file", store, "archive", ar.Path)
	return *rep, nil
}

// pinGone reports whether a restored.json entry no longer names anything: a
// file that is gone, or a record whose store no longer holds its key. stores
// caches the stores read.
func pinGone(pin string, stores map[string]map[string]bool) bool {
	store, key, isRecord := strings.Cut(pin, "\x00")
	if !isRecord {
		_, err := os.Lstat(pin)
		return errors.Is(err, fs.ErrNotExist)
	}
	keys, ok := stores[store]
	if !ok {
		sf, err := readStore(store)
		if err != nil {
			stores[store] = nil // cannot tell: keep the pin
			return false
		}
		keys = map[string]bool{}
		if sf.info != nil {
			recs, _, err := indexer.DecodeHyperyoloStore(sf.data)
			if err != nil {
				stores[store] = nil
				return false
			}
			for k := range recs {
				keys[k] = true
			}
		}
		stores[store] = keys
	}
	return keys != nil && !keys[key]
}
