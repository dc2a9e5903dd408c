//go:build !linux || !(amd64 || arm64)

package indexer

import (
	"io"
	"time"
)

// adviseAsync: without posix_fadvise, the readahead reads the bytes itself,
// waiting for them: several goroutines keep several reads in flight.
const adviseAsync = false

const adviseWorkers = 16

// readaheadFast is a read that waited on no device: the page cache had it.
const readaheadFast = 50 * time.Microsecond

// advise reads the head of f (up to readaheadMax) into buf, which it throws
// away, without moving f's offset, and reports whether the reads were fast
// (cached). A file that cannot be read takes no advice (ok false).
func advise(f *unitFile, buf []byte) (fast, ok bool) {
	if st, err := f.stat(); err != nil || !st.regular {
		return true, false
	}
	start := time.Now()
	var n int64
	for n < readaheadMax {
		m, err := f.ReadAt(buf, n)
		n += int64(m)
		if err == io.EOF || m == 0 {
			break
		}
		if err != nil {
			return true, false
		}
	}
	// A cached file is copied at a GB/s or more.
	return time.Since(start) < readaheadFast+time.Duration(n), true
}
