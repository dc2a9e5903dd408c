package indexer

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
)

// listings holds the directory listings one walk read for a later walk of the
// same tree in the same pass: a full pass that reads on workers lists the tree
// for them (startPrefetchLocked), then walks it again to install what they read
// (walkLocked), and each directory is read once, not twice (5% of a cold
// reindex's CPU, on the walk's own thread). A listing is dropped once used.
type listings map[string][]fs.DirEntry

// walkTree is filepath.WalkDir(root, fn), the same calls in the same order,
// except that a directory whose listing is in from is listed from there (and
// the listing dropped) instead of being read again, and that a listing read
// whole is kept in into when into is not nil. A listing is as old as the walk
// that read it: a directory it names is entered only if its path is still a
// directory (os.Lstat), not one replaced since by a symlink, which is never
// walked through, or by a file; such a one is reported to fn as a directory
// that cannot be read (filepath.WalkDir's fresh listing of its parent would
// have shown no directory to walk there). plain says root is clean and not
// "/" or ".": a path below it is then root + "/" + names, clean as it is, not
// passed through filepath.Join's Clean.
func walkTree(root string, plain bool, from, into listings, fn fs.WalkDirFunc) error {
	info, err := os.Lstat(root)
	if err != nil {
		err = fn(root, nil, err)
	} else {
		w := treeWalk{plain: plain, from: from, into: into, fn: fn}
		err = w.walk(root, fs.FileInfoToDirEntry(info), false)
	}
	if err == filepath.SkipDir || err == filepath.SkipAll {
		return nil
	}
	return err
}

// errNotListedDir: a directory an earlier walk listed is no directory now.
var errNotListedDir = errors.New("no longer a directory (replaced since it was listed)")

type treeWalk struct {
	plain      bool
	from, into listings
	fn         fs.WalkDirFunc
}

// walk walks path, whose entry d was read from a listing of an earlier walk
// when old is set.
func (w *treeWalk) walk(path string, d fs.DirEntry, old bool) error {
	if err := w.fn(path, d, nil); err != nil || !d.IsDir() {
		if err == filepath.SkipDir && d.IsDir() {
			err = nil // skipped as asked
		}
		return err
	}
	if old {
		fi, err := os.Lstat(path)
		if err == nil && !fi.IsDir() {
			err = &fs.PathError{Op: "walk", Path: path, Err: errNotListedDir}
		}
		if err != nil {
			// As a directory that cannot be read: nothing below it is walked.
			if err = w.fn(path, d, err); err == filepath.SkipDir {
				err = nil
			}
			return err
		}
	}
	entries, cached := w.from[path]
	if cached {
		delete(w.from, path)
	} else {
		var err error
		entries, err = os.ReadDir(path)
		if err != nil {
			// A second call, to report the error (what was read is walked).
			if err = w.fn(path, d, err); err != nil {
				if err == filepath.SkipDir && d.IsDir() {
					err = nil
				}
				return err
			}
		} else if w.into != nil {
			w.into[path] = entries
		}
	}
	for _, d1 := range entries {
		var path1 string
		if w.plain {
			path1 = path + "/" + d1.Name() // a name is never "", "." or "..", nor holds a "/"
		} else {
			path1 = filepath.Join(path, d1.Name())
		}
		if err := w.walk(path1, d1, cached); err != nil {
			if err == filepath.SkipDir {
				break
			}
			return err
		}
	}
	return nil
}
