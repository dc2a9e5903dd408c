package indexer

import (
	"errors"
	"io"
)

// A full pass's workers and readahead (prefetch.go, readahead.go) open, stat,
// read and close every transcript of a cold store: a 100k-transcript store is
// 100k of each. They do it through a unitFile, which on Linux holds the bare
// descriptor (unitfile_linux.go) and makes only the calls the read needs: an
// *os.File would also try to register each regular file with the runtime's
// poller (a failing epoll_ctl per file), seek before reading, and keep a
// cleanup per file for the collector. Elsewhere it wraps an *os.File
// (unitfile_other.go). Either way the file is opened as os.OpenFile was asked
// to before: read only, never through a symlink, never blocking on a FIFO.

// unitStat is what the read of a transcript needs of its stat.
type unitStat struct {
	size, mtime int64 // mtime in nanoseconds since the epoch
	dev, ino    uint64
	regular     bool
	unlinked    bool // no name left (removed, or replaced by a rename), where the system says
}

// Read reads from the file's position (no seek is made: the position is the
// unitFile's own).
func (f *unitFile) Read(p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	n, err := f.pread(p, f.off)
	f.off += int64(n)
	if n == 0 && err == nil {
		err = io.EOF
	}
	return n, err
}

// errSeek is a seek to a negative position, or from the end.
var errSeek = errors.New("seek: invalid offset")

// Seek sets the position of the next Read, without a system call.
func (f *unitFile) Seek(offset int64, whence int) (int64, error) {
	switch whence {
	case io.SeekStart:
	case io.SeekCurrent:
		offset += f.off
	default:
		return f.off, errSeek
	}
	if offset < 0 {
		return f.off, errSeek
	}
	f.off = offset
	return offset, nil
}

// ReadAt reads len(p) bytes at off, as io.ReaderAt says (io.EOF when the file
// ends before).
func (f *unitFile) ReadAt(p []byte, off int64) (int, error) {
	n := 0
	for n < len(p) {
		m, err := f.pread(p[n:], off+int64(n))
		n += m
		if err != nil {
			return n, err
		}
		if m == 0 {
			return n, io.EOF
		}
	}
	return n, nil
}

// mtimeAt is the file's mtime for a read that ended at end, st being its stat
// before the read: readMtime's rule.
func (f *unitFile) mtimeAt(st unitStat, end int64) int64 {
	if end > st.size {
		if now, err := f.stat(); err == nil && now.size == end {
			return now.mtime
		}
	}
	return st.mtime
}
