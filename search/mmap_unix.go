//go:build unix

package search

import (
	"os"
	"syscall"
)

// mapFile maps a segment file read-only; a segment is never changed once written,
// and a merged-away one stays mapped until the reader closes it.
func mapFile(f *os.File, size int64) ([]byte, func(), error) {
	if size == 0 || int64(int(size)) != size {
		return nil, nil, errCorrupt
	}
	data, err := syscall.Mmap(int(f.Fd()), 0, int(size), syscall.PROT_READ, syscall.MAP_SHARED)
	if err != nil {
		return nil, nil, err
	}
	return data, func() { syscall.Munmap(data) }, nil
}
