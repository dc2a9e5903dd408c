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

	"github.com/google/uuid"
	"github.com/sessionwatch/sessionwatch/indexer"
)

// A retirement moves a session out of its store so that no append is ever
// lost to it (SPEC §5.2) and a crash at any point leaves the session exactly
// once in the store or in the archive (SPEC §5.6):
//
//  1. Every regular file of the session is opened read-only and given a write
//     lease (lease_linux.go): the kernel grants it only while no other file
//     description has the file open, and then holds back every open(2) of it
//     until the lease is dropped, showing it as a broken lease. Where leases
//     are not available, /proc is searched for other openers instead.
//  2. The intent is journaled, fsync'd, with the action id and the staging names.
//  3. Each of the session's paths is renamed to a staging name in its own
//     directory (<dir>/.sessionwatch-tmp-retire-<actionId>-<n>), relative to
//     that directory, opened and checked to be inside the root with no
//     symlink on the way (openDirIn); the put-back and the removal go through
//     it too. From here an open by the session's path finds nothing, or
//     creates a new file that stays in the store; only an open already under
//     way can still reach the old file, and it shows as a broken lease.
//  4. The archive is written from the held descriptors (a delete writes none).
//  5. Just before removal: no lease broken, no other opener, sizes and mtimes
//     unchanged, nothing new in a staged directory, each staging name still
//     the file held, each directory still where it was. Otherwise every path
//     is put back and the archive removed: the session stays, and with it
//     every byte.
//  6. The staged paths are removed, then the completion is journaled.
//
// The one interleaving this cannot see is an open(2) that looked the path up
// before step 3 and is still inside the kernel, short of the lease check,
// after steps 4 and 5 (an archive and its fsync later).

// errHeldOpen: another process has (or is opening) one of the session's files.
var errHeldOpen = errors.New("held open by another process")

// leaseTries × leaseWait bound the wait for a file open elsewhere for a moment
// (the daemon's indexer reading it) before the session is left for next time.
const (
	leaseTries = 10
	leaseWait  = 5 * time.Millisecond
)

// retirement is one session being retired.
type retirement struct {
	id      string
	es      []entry // as collected, at their original paths; f set on regular files
	tops    []string
	staged  []string // staging name of each top path
	moved   int      // how many tops are staged
	noLease bool     // some file is not leased: /proc is checked instead
	// dirs holds the directory of each top path, opened and checked to be the
	// real directory inside the root (openDirIn): the renames and removals are
	// made relative to it, so a directory on the way swapped for a symlink
	// meanwhile never leads them elsewhere.
	dirs map[string]*os.Root
	root string
	// forced (delete --force): a file another process holds open is retired
	// anyway; its size and mtime are still checked, so a write that lands
	// before the last check puts the session back.
	forced bool
}

// openRetirement opens and leases every regular file of es. It fails with
// errHeldOpen when a file stays open elsewhere, errChanged when one changed
// since it was collected.
func openRetirement(root string, es []entry, forced bool) (*retirement, error) {
	r := &retirement{id: uuid.NewString(), root: root, es: append([]entry(nil), es...), forced: forced, dirs: map[string]*os.Root{}}
	for i := range r.es {
		e := &r.es[i]
		if e.top {
			dir := filepath.Dir(e.abs)
			r.tops = append(r.tops, e.abs)
			r.staged = append(r.staged, filepath.Join(dir, indexer.RetirePrefix+r.id+"-"+strconv.Itoa(len(r.tops)-1)))
			if r.dirs[dir] == nil {
				d, err := openDirIn(root, dir)
				if err != nil {
					r.close()
					return nil, err
				}
				r.dirs[dir] = d
			}
		}
		if !e.info.Mode().IsRegular() {
			continue
		}
		// O_NONBLOCK: a lease someone else holds fails the open at once.
		f, err := os.OpenFile(e.abs, os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0)
		if err != nil {
			r.close()
			return nil, fmt.Errorf("open %s: %w", e.abs, errChanged)
		}
		e.f = f
		if err := sameFile(f, *e); err != nil {
			r.close()
			return nil, err
		}
		ok, lerr := false, error(nil)
		for try := 0; try < leaseTries; try++ {
			if ok, lerr = takeLease(f); ok || lerr != nil {
				break
			}
			time.Sleep(leaseWait)
		}
		switch {
		case ok:
			e.leased = true
		case lerr != nil:
			r.noLease = true
		case forced:
			// Held open elsewhere: no lease, and no /proc veto either.
		default:
			r.close()
			return nil, fmt.Errorf("%s: %w", e.abs, errHeldOpen)
		}
	}
	return r, nil
}

// sameFile checks that a held file is still the one collected: same inode,
// size and mtime.
func sameFile(f *os.File, e entry) error {
	fi, err := f.Stat()
	if err != nil {
		return fmt.Errorf("stat %s: %w", e.abs, err)
	}
	_, ino := identity(fi)
	_, want := identity(e.info)
	if ino != want || fi.Size() != e.info.Size() || !fi.ModTime().Equal(e.info.ModTime()) {
		return fmt.Errorf("%s was modified: %w", e.abs, errChanged)
	}
	return nil
}

// close drops the leases and closes the files.
func (r *retirement) close() {
	for i := range r.es {
		if f := r.es[i].f; f != nil {
			if r.es[i].leased {
				dropLease(f)
			}
			f.Close()
			r.es[i].f = nil
		}
	}
	for dir, d := range r.dirs {
		d.Close()
		delete(r.dirs, dir)
	}
}

// openDirIn opens dir, a directory inside root, and checks that what it opened
// is the directory at that path now, with no symlink from root down to it:
// whatever is renamed or swapped afterwards, operations relative to it act in
// that directory.
func openDirIn(root, dir string) (*os.Root, error) {
	if !strings.HasPrefix(dir, root+string(filepath.Separator)) && dir != root {
		return nil, fmt.Errorf("%s is outside %s: %w", dir, root, errChanged)
	}
	d, err := os.OpenRoot(dir)
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", dir, errChanged)
	}
	if err := stillAt(root, dir, d); err != nil {
		d.Close()
		return nil, err
	}
	return d, nil
}

// stillAt checks that d is the directory at dir, reached from root through
// directories only (no symlink on the way, the root included: it was resolved
// to a real directory when the indexer was built, and a root that became a
// symlink since is never retired through, as newGatherer says).
func stillAt(root, dir string, d *os.Root) error {
	held, err := d.Stat(".")
	if err != nil {
		return fmt.Errorf("stat %s: %w", dir, err)
	}
	if fi, err := os.Lstat(dir); err != nil || !fi.IsDir() || !os.SameFile(fi, held) {
		return fmt.Errorf("%s was moved or replaced: %w", dir, errChanged)
	}
	for c := dir; c != root && len(c) > len(root); {
		c = filepath.Dir(c)
		if fi, err := os.Lstat(c); err != nil || !fi.IsDir() {
			return fmt.Errorf("%s was moved or replaced: %w", c, errChanged)
		}
	}
	return nil
}

// in is the directory held for a path of the retirement (at its original or
// staging name, or inside one) and the path relative to it.
func (r *retirement) in(path string) (*os.Root, string) {
	for i, t := range r.tops {
		dir := filepath.Dir(t)
		for _, top := range []string{t, r.staged[i]} {
			if path == top || strings.HasPrefix(path, top+string(filepath.Separator)) {
				return r.dirs[dir], path[len(dir)+1:]
			}
		}
	}
	return nil, ""
}

// intent is the journal line written before anything moves.
func (r *retirement) intent(a *Action, archiveDir string) JournalEntry {
	return JournalEntry{Time: indexer.FormatTime(time.Now()), Action: a.Kind, ActionID: r.id, Source: a.Source, ID: a.ID, File: a.File,
		Bytes: a.Bytes, Reason: a.Reason, Project: a.Project, Paths: r.tops, Staged: r.staged, ArchiveDir: archiveDir}
}

// stage renames every top path to its staging name.
func (r *retirement) stage() error {
	for i, t := range r.tops {
		d := r.dirs[filepath.Dir(t)]
		if err := d.Rename(filepath.Base(t), filepath.Base(r.staged[i])); err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return fmt.Errorf("%s: %w", t, errChanged)
			}
			return fmt.Errorf("move %s aside: %w", t, err)
		}
		r.moved = i + 1
	}
	return nil
}

// unstage puts back what stage moved.
func (r *retirement) unstage() error {
	var errs []error
	for i := r.moved - 1; i >= 0; i-- {
		if err := putBackIn(r.dirs[filepath.Dir(r.tops[i])], r.staged[i], r.tops[i]); err != nil {
			errs = append(errs, err)
		}
	}
	r.moved = 0
	return errors.Join(errs...)
}

// putBack moves a staged path back to its original name, never replacing
// anything there (a file by link(2), which fails on an existing name).
func putBack(staged, orig string) error {
	d, err := os.OpenRoot(filepath.Dir(orig))
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("put back %s: %w", orig, err)
	}
	defer d.Close()
	return putBackIn(d, staged, orig)
}

// putBackIn is putBack relative to d, the directory of both names.
func putBackIn(d *os.Root, staged, orig string) error {
	sname, oname := filepath.Base(staged), filepath.Base(orig)
	fi, err := d.Lstat(sname)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	if fi.IsDir() {
		if _, err := d.Lstat(oname); err == nil {
			return fmt.Errorf("%s was created again meanwhile: the session is kept at %s", orig, staged)
		}
		if err := d.Rename(sname, oname); err != nil {
			return fmt.Errorf("put back %s: %w", orig, err)
		}
		return syncRoot(d, orig)
	}
	if err := d.Link(sname, oname); err != nil {
		if errors.Is(err, fs.ErrExist) {
			return fmt.Errorf("%s was created again meanwhile: the session is kept at %s", orig, staged)
		}
		return fmt.Errorf("put back %s: %w", orig, err)
	}
	if crashed("putback-linked") {
		return errCrashed
	}
	if err := d.Remove(sname); err != nil {
		return err
	}
	return syncRoot(d, orig)
}

// syncRoot fsyncs the directory d holds (path, for the error, names a file
// in it).
func syncRoot(d *os.Root, path string) error {
	f, err := d.Open(".")
	if err == nil {
		err = f.Sync()
		f.Close()
	}
	if err != nil {
		return fmt.Errorf("sync dir %s: %w", filepath.Dir(path), err)
	}
	return nil
}

// stagedEntries are the entries at their staging paths (rel unchanged).
func (r *retirement) stagedEntries() []entry {
	out := make([]entry, len(r.es))
	top := -1
	for i, e := range r.es {
		if e.top {
			top++
		}
		if top >= 0 {
			e.abs = r.staged[top] + strings.TrimPrefix(e.abs, r.tops[top])
		}
		out[i] = e
	}
	return out
}

// quiet checks that nothing writes or has written to the session since it
// was collected: no lease broken, no other opener (where not leased), every
// file unchanged, no entry added to a staged directory.
func (r *retirement) quiet() error {
	inodes := map[[2]uint64]bool{}
	for _, e := range r.es {
		if e.f == nil {
			continue
		}
		if e.leased && leaseBroken(e.f) {
			return fmt.Errorf("%s is being opened: %w", e.abs, errHeldOpen)
		}
		if err := sameFile(e.f, e); err != nil {
			return err
		}
		if !e.leased && !r.forced {
			dev, ino := identity(e.info)
			inodes[[2]uint64{dev, ino}] = true
		}
	}
	if len(inodes) > 0 {
		if pid := openedBy(inodes); pid > 0 {
			return fmt.Errorf("held open by pid %d: %w", pid, errHeldOpen)
		}
	}
	// The directories held are still where they were, inside the root.
	for dir, d := range r.dirs {
		if err := stillAt(r.root, dir, d); err != nil {
			return err
		}
	}
	// Each staging name must hold the very file or directory that was held
	// and checked: a path replaced (renamed over by its agent, or reached
	// through a parent swapped for a symlink) between the open and the rename
	// moved something else aside, which is put back, never removed.
	for i, top := range r.staged[:r.moved] {
		want := r.es[topIndex(r.es, i)].info
		fi, err := r.dirs[filepath.Dir(top)].Lstat(filepath.Base(top))
		if err != nil {
			return fmt.Errorf("%s: %w", r.tops[i], errChanged)
		}
		dev, ino := identity(fi)
		wdev, wino := identity(want)
		if dev != wdev || ino != wino || fi.Mode().Type() != want.Mode().Type() {
			return fmt.Errorf("%s was replaced: %w", r.tops[i], errChanged)
		}
	}
	ses := r.stagedEntries()
	for i, top := range r.staged[:r.moved] {
		if !r.es[topIndex(r.es, i)].info.IsDir() {
			continue
		}
		now, err := collectAs(top)
		if err != nil {
			return fmt.Errorf("%s: %w", top, errChanged)
		}
		var was []uint64
		for _, e := range ses {
			if e.abs == top || strings.HasPrefix(e.abs, top+string(filepath.Separator)) {
				_, ino := identity(e.info)
				was = append(was, ino)
			}
		}
		if fmt.Sprint(was) != fmt.Sprint(now) {
			return fmt.Errorf("%s gained or lost an entry: %w", r.tops[i], errChanged)
		}
	}
	return nil
}

// topIndex is the index in es of the n-th top path.
func topIndex(es []entry, n int) int {
	for i, e := range es {
		if e.top {
			if n == 0 {
				return i
			}
			n--
		}
	}
	return 0
}

// collectAs lists the inodes under dir in walk order.
func collectAs(dir string) ([]uint64, error) {
	var out []uint64
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		_, ino := identity(info)
		out = append(out, ino)
		return nil
	})
	return out, err
}

// openedBy returns a process, other than this one, holding one of the inodes
// (device, inode) open, by stat'ing every /proc/<pid>/fd/<n>; 0 if none.
func openedBy(inodes map[[2]uint64]bool) int {
	self := os.Getpid()
	procs, err := os.ReadDir("/proc")
	if err != nil {
		return 0
	}
	for _, p := range procs {
		pid, err := strconv.Atoi(p.Name())
		if err != nil || pid == self {
			continue
		}
		dir := "/proc/" + p.Name() + "/fd"
		fds, err := os.ReadDir(dir)
		if err != nil {
			continue
		}
		for _, fd := range fds {
			fi, err := os.Stat(dir + "/" + fd.Name())
			if err != nil {
				continue
			}
			if dev, ino := identity(fi); inodes[[2]uint64{dev, ino}] {
				return pid
			}
		}
	}
	return 0
}

// retireFiles carries out the protocol above for collected entries: archive
// them into dir (archive != nil) or delete them. kept is set (and the error
// nil) when the session turned out busy or changed and stays in the store.
func (p *pass) retireFiles(root string, a *Action, es []entry, archive *ArchiveMeta, dir string) (kept string, err error) {
	r, err := openRetirement(root, es, p.forceOpen)
	switch {
	case errors.Is(err, errHeldOpen):
		return "held open by another process", nil
	case errors.Is(err, errChanged):
		return "modified during the pass", nil
	case err != nil:
		return "", err
	}
	defer r.close()
	a.ActionID = r.id
	if err := p.jr.intent(r.intent(a, dir)); err != nil {
		return "", err
	}
	if crashed("intent") {
		return "", errCrashed
	}
	undo := func(why string, cause error) (string, error) {
		if a.Archive != "" {
			removeQuiet(a.Archive)
			indexer.SyncDir(filepath.Dir(a.Archive))
			a.Archive = ""
		}
		if err := r.unstage(); err != nil {
			// The intent stays open: recovery tries again at the next start.
			return "", fmt.Errorf("%s, and putting it back failed: %w", why, err)
		}
		p.jr.write(JournalEntry{Time: indexer.FormatTime(time.Now()), Action: a.Kind, ActionID: r.id, Phase: PhaseRollback,
			Source: a.Source, ID: a.ID, File: a.File, Reason: why}, false)
		if cause != nil && !errors.Is(cause, errChanged) && !errors.Is(cause, errHeldOpen) {
			return "", cause
		}
		return why, nil
	}
	if err := r.stage(); err != nil {
		return undo("modified during the pass", err)
	}
	if crashed("staged") {
		return "", errCrashed
	}
	if err := r.quiet(); err != nil {
		return undo(keptWhy(err), err)
	}
	ses := r.stagedEntries()
	if archive != nil {
		archive.ActionID = r.id
		path, _, err := writeArchive(dir, filepath.Base(r.tops[0]), *archive, ses)
		if err != nil {
			return undo(keptWhy(err), err)
		}
		a.Archive = path
	}
	if crashed("archived") {
		return "", errCrashed
	}
	if err := r.quiet(); err != nil {
		return undo(keptWhy(err), err)
	}
	a.touched = true
	if err := removeEntries(ses, r.in); err != nil {
		// Some staged paths may remain; recovery finishes them (the archive
		// holds every byte).
		return "", err
	}
	if crashed("removed") {
		return "", errCrashed
	}
	return "", nil
}

// errCrashed ends an action stopped by crashHook.
var errCrashed = errors.New("crashed (test)")

// crashHook, set by tests, stops a retirement or restore dead at a step, as a
// SIGKILL would: nothing after it runs, no clean-up.
var crashHook func(step string) bool

func crashed(step string) bool { return crashHook != nil && crashHook(step) }

// keptWhy is the reason a retirement let the session stay.
func keptWhy(err error) string {
	if errors.Is(err, errHeldOpen) {
		return "opened while being retired"
	}
	return "modified while being retired"
}
