//go:build linux && (amd64 || arm64)

package indexer

import (
	"os"
	"syscall"
)

// adviseAsync: the advice queues the reads and returns; one goroutine keeps
// the device busy.
const adviseAsync = true

const adviseWorkers = 1

// advise asks the kernel to read the head of f into the page cache
// (posix_fadvise(POSIX_FADV_WILLNEED), which does not wait for the device).
// A pipe or socket takes no advice (ok false). It never says fast: a warm
// cache costs the advice only, and the file is opened once either way.
func advise(f *os.File, _ []byte) (fast, ok bool) {
	const fadvWillNeed = 3
	_, _, errno := syscall.Syscall6(syscall.SYS_FADVISE64, f.Fd(), 0, readaheadMax, fadvWillNeed, 0, 0)
	return false, errno == 0
}
