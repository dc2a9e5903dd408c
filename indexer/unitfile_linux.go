//go:build linux

package indexer

import (
	"io/fs"
	"syscall"
)

// unitFile is a transcript open for a pass's read: the bare descriptor and the
// position of the next Read.
type unitFile struct {
	fd   int
	off  int64
	path string // for errors
}

// openUnitFile opens the transcript at path for reading: never through a
// symlink (ELOOP), never waiting on a FIFO (O_NONBLOCK: the caller reads only
// a regular file), closed on exec.
func openUnitFile(path string) (*unitFile, error) {
	for {
		fd, err := syscall.Open(path, syscall.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK|syscall.O_CLOEXEC, 0)
		if err == nil {
			return &unitFile{fd: fd, path: path}, nil
		}
		if err != syscall.EINTR {
			return nil, &fs.PathError{Op: "open", Path: path, Err: err}
		}
	}
}

// stat is fstat of the open file.
func (f *unitFile) stat() (unitStat, error) {
	var st syscall.Stat_t
	for {
		err := syscall.Fstat(f.fd, &st)
		if err == nil {
			break
		}
		if err != syscall.EINTR {
			return unitStat{}, &fs.PathError{Op: "fstat", Path: f.path, Err: err}
		}
	}
	return unitStat{
		size:     st.Size,
		mtime:    int64(st.Mtim.Sec)*1e9 + int64(st.Mtim.Nsec),
		dev:      uint64(st.Dev),
		ino:      uint64(st.Ino),
		regular:  st.Mode&syscall.S_IFMT == syscall.S_IFREG,
		unlinked: st.Nlink == 0,
	}, nil
}

// pread reads at off: fewer bytes than asked only at the end of the file (0:
// at or past it), or with an error.
func (f *unitFile) pread(p []byte, off int64) (int, error) {
	for {
		n, err := syscall.Pread(f.fd, p, off)
		if err == syscall.EINTR {
			continue
		}
		if err != nil {
			return 0, &fs.PathError{Op: "read", Path: f.path, Err: err}
		}
		return n, nil
	}
}

// Close closes the descriptor, once: a second Close does nothing.
func (f *unitFile) Close() error {
	if f.fd < 0 {
		return nil
	}
	fd := f.fd
	f.fd = -1
	return syscall.Close(fd)
}
