//go:build !linux

package indexer

import (
	"errors"
	"io"
	"io/fs"
	"os"
	"syscall"
)

// unitFile is a transcript open for a pass's read: here an *os.File, read at
// the unitFile's own position.
type unitFile struct {
	f   *os.File
	off int64
}

// openUnitFile opens the transcript at path for reading: never through a
// symlink, never waiting on a FIFO (the caller reads only a regular file).
func openUnitFile(path string) (*unitFile, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, err
	}
	return &unitFile{f: f}, nil
}

// stat is fstat of the open file.
func (f *unitFile) stat() (unitStat, error) {
	fi, err := f.f.Stat()
	if err != nil {
		return unitStat{}, err
	}
	dev, ino := statIdentity(fi)
	return unitStat{size: fi.Size(), mtime: fi.ModTime().UnixNano(), dev: dev, ino: ino,
		regular: fi.Mode().IsRegular(), unlinked: unlinked(fi)}, nil
}

// pread reads at off: fewer bytes than asked only at the end of the file (0:
// at or past it), or with an error.
func (f *unitFile) pread(p []byte, off int64) (int, error) {
	n, err := f.f.ReadAt(p, off)
	if errors.Is(err, io.EOF) {
		err = nil
	}
	return n, err
}

// Close closes the file, once: a second Close does nothing (as on Linux).
func (f *unitFile) Close() error {
	if err := f.f.Close(); !errors.Is(err, os.ErrClosed) {
		return err
	}
	return nil
}

// unlinked reports whether the file fi describes has no name left: a file
// opened ahead that was removed, or replaced by a rename, before its worker
// read it.
func unlinked(fi fs.FileInfo) bool {
	st, ok := fi.Sys().(*syscall.Stat_t)
	return ok && st.Nlink == 0
}
