//go:build !unix

package search

import (
	"io"
	"os"
)

// mapFile reads a segment file whole where mmap is not available.
func mapFile(f *os.File, size int64) ([]byte, func(), error) {
	data := make([]byte, size)
	if _, err := f.ReadAt(data, 0); err != nil && err != io.EOF {
		return nil, nil, err
	}
	return data, func() {}, nil
}
