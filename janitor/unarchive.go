package janitor

// Restoring an archive: every path put back, atomically, never over anything.

import (
	"archive/tar"
	"compress/gzip"
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

// target is one path a restore creates.
type target struct {
	abs string
	af  ArchivedFile
}

// restoreArchive puts every path of an archive back where it was, with its
// mode and mtime. It refuses (ErrExists) to overwrite anything, writes each file
// atomically and durably, and undoes what it created if anything fails. The
// archive itself is left for the caller to remove.
func restoreArchive(a Archived, actionID string) (restored []string, bytes int64, err error) {
	m := a.Meta
	root := m.Root
	if !filepath.IsAbs(root) || filepath.Clean(root) != root {
		return nil, 0, fmt.Errorf("archive %s: bad root %q", a.Path, root)
	}
	files := m.Files
	if m.Format == FormatTar {
		// The tar headers list every path: read them all before writing any.
		if files, err = tarIndex(a.Path); err != nil {
			return nil, 0, err
		}
	} else if len(files) != 1 || files[0].Dir {
		return nil, 0, fmt.Errorf("archive %s: want one file in a gzip archive", a.Path)
	}
	targets := map[string]target{}
	var order []string
	for _, af := range files {
		rel := filepath.FromSlash(af.rel())
		if !filepath.IsLocal(rel) {
			return nil, 0, fmt.Errorf("archive %s: refusing path %q outside the root", a.Path, af.rel())
		}
		abs := filepath.Join(root, rel)
		targets[af.rel()] = target{abs: abs, af: af}
		order = append(order, af.rel())
		if err := noSymlinkParents(root, abs); err != nil {
			return nil, 0, err
		}
		fi, err := os.Lstat(abs)
		switch {
		case errors.Is(err, fs.ErrNotExist):
		case err != nil:
			return nil, 0, fmt.Errorf("stat %s: %w", abs, err)
		case af.Dir && fi.IsDir():
			// Restoring into an existing directory is fine; its files must be new.
		default:
			return nil, 0, fmt.Errorf("%s %w", abs, ErrExists)
		}
	}

	f, err := os.Open(a.Path)
	if err != nil {
		return nil, 0, err
	}
	defer f.Close()
	gz, err := gzip.NewReader(f)
	if err != nil {
		return nil, 0, fmt.Errorf("read archive %s: %w", a.Path, err)
	}
	r := &restorer{root: root, id: actionID}
	defer func() {
		if err != nil {
			r.undo()
		}
	}()
	if m.Format == FormatGzip {
		if err := r.file(targets[order[0]], gz); err != nil {
			return nil, 0, err
		}
	} else {
		tr := tar.NewReader(gz)
		for {
			h, err := tr.Next()
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				return nil, 0, fmt.Errorf("read archive %s: %w", a.Path, err)
			}
			t, ok := targets[strings.TrimSuffix(h.Name, "/")]
			if !ok {
				return nil, 0, fmt.Errorf("archive %s: entry %q changed between two reads", a.Path, h.Name)
			}
			if t.af.Dir {
				err = r.dir(t)
			} else {
				err = r.file(t, tr)
			}
			if err != nil {
				return nil, 0, err
			}
		}
	}
	// Reading to the end checks the gzip checksum.
	if _, err := io.Copy(io.Discard, gz); err != nil {
		return nil, 0, fmt.Errorf("read archive %s: %w", a.Path, err)
	}
	if err := r.finish(); err != nil {
		return nil, 0, err
	}
	return r.files, r.bytes, nil
}

// tarIndex lists the entries of a tar.gz archive: directories and regular
// files only.
func tarIndex(path string) ([]ArchivedFile, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	gz, err := gzip.NewReader(f)
	if err != nil {
		return nil, fmt.Errorf("read archive %s: %w", path, err)
	}
	tr := tar.NewReader(gz)
	var out []ArchivedFile
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			return nil, fmt.Errorf("read archive %s: %w", path, err)
		}
		af := ArchivedFile{Rel: strings.TrimSuffix(h.Name, "/"), Mode: uint32(h.Mode) & 0o777, Size: h.Size, Mtime: h.ModTime.UnixNano()}
		switch h.Typeflag {
		case tar.TypeDir:
			af.Dir, af.Size = true, 0
		case tar.TypeReg:
		default:
			return nil, fmt.Errorf("read archive %s: unexpected entry type of %q", path, h.Name)
		}
		out = append(out, af)
	}
}

// noSymlinkParents fails when a directory between root and path is a symlink.
func noSymlinkParents(root, path string) error {
	for d := filepath.Dir(path); len(d) > len(root); d = filepath.Dir(d) {
		fi, err := os.Lstat(d)
		if err == nil && fi.Mode()&fs.ModeSymlink != 0 {
			return fmt.Errorf("refusing to restore through the symlink %s", d)
		}
	}
	return nil
}

// restorer creates the paths of one restore and remembers them to undo.
type restorer struct {
	root        string
	id          string // the journal action: it names the temp files
	files       []string
	createdDirs []string // in creation order
	dirTimes    map[string]ArchivedFile
	syncDirs    map[string]bool
	bytes       int64
}

// mkdirs creates the missing directories up to dir (0700), remembering them.
func (r *restorer) mkdirs(dir string) error {
	var missing []string
	for d := dir; len(d) >= len(r.root); d = filepath.Dir(d) {
		if _, err := os.Lstat(d); err == nil {
			break
		}
		missing = append(missing, d)
		if d == r.root {
			break
		}
	}
	for i := len(missing) - 1; i >= 0; i-- {
		if err := os.Mkdir(missing[i], 0o700); err != nil && !errors.Is(err, fs.ErrExist) {
			return fmt.Errorf("create %s: %w", missing[i], err)
		}
		r.createdDirs = append(r.createdDirs, missing[i])
		r.markSync(filepath.Dir(missing[i]))
	}
	return nil
}

func (r *restorer) markSync(dir string) {
	if r.syncDirs == nil {
		r.syncDirs = map[string]bool{}
	}
	r.syncDirs[dir] = true
}

// dir restores a directory entry: created if missing, its mode and mtime set at
// the end (after its content is written).
func (r *restorer) dir(t target) error {
	if fi, err := os.Lstat(t.abs); err == nil && fi.IsDir() {
		return nil
	}
	if err := r.mkdirs(t.abs); err != nil {
		return err
	}
	if r.dirTimes == nil {
		r.dirTimes = map[string]ArchivedFile{}
	}
	r.dirTimes[t.abs] = t.af
	return nil
}

// file writes one file: a temp file in its directory, fsync, mode, mtime, then
// link(2) to its name, which fails rather than replace anything.
func (r *restorer) file(t target, src io.Reader) error {
	dir := filepath.Dir(t.abs)
	if err := r.mkdirs(dir); err != nil {
		return err
	}
	tmp, err := os.CreateTemp(dir, indexer.TempPrefix+"restore-"+r.id+"-*")
	if err != nil {
		return fmt.Errorf("restore %s: %w", t.abs, err)
	}
	defer os.Remove(tmp.Name())
	n, err := io.Copy(tmp, src)
	if err == nil && n != t.af.Size {
		err = fmt.Errorf("archive holds %d bytes, metadata says %d", n, t.af.Size)
	}
	if err == nil {
		err = tmp.Sync()
	}
	if err == nil {
		err = tmp.Chmod(fs.FileMode(t.af.Mode).Perm())
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("restore %s: %w", t.abs, err)
	}
	mt := time.Unix(0, t.af.Mtime)
	if err := os.Chtimes(tmp.Name(), mt, mt); err != nil {
		return fmt.Errorf("restore %s: %w", t.abs, err)
	}
	if err := os.Link(tmp.Name(), t.abs); err != nil {
		if errors.Is(err, fs.ErrExist) {
			return fmt.Errorf("%s %w", t.abs, ErrExists)
		}
		return fmt.Errorf("restore %s: %w", t.abs, err)
	}
	r.files = append(r.files, t.abs)
	r.bytes += n
	r.markSync(dir)
	return nil
}

// finish makes the restore durable: directory fsyncs, then directory mtimes.
func (r *restorer) finish() error {
	for d := range r.syncDirs {
		if err := indexer.SyncDir(d); err != nil {
			return err
		}
	}
	for i := len(r.createdDirs) - 1; i >= 0; i-- {
		d := r.createdDirs[i]
		if af, ok := r.dirTimes[d]; ok {
			os.Chmod(d, fs.FileMode(af.Mode).Perm()|0o700)
			mt := time.Unix(0, af.Mtime)
			os.Chtimes(d, mt, mt)
		}
	}
	return nil
}

// undo removes what a failed restore created.
func (r *restorer) undo() {
	for _, f := range r.files {
		os.Remove(f)
	}
	for i := len(r.createdDirs) - 1; i >= 0; i-- {
		os.Remove(r.createdDirs[i]) // only if empty
	}
}
