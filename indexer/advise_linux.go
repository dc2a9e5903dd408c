//go:build linux && (amd64 || arm64)

package indexer

import (
	"syscall"
	"unsafe"
)

// adviseAsync: the advice queues the reads and returns; one goroutine keeps
// the device busy.
const adviseAsync = true

const adviseWorkers = 1

// advise asks the kernel to read the head of f into the page cache
// (posix_fadvise(POSIX_FADV_WILLNEED), which does not wait for the device),
// unless its first byte is cached already (preadv2 with RWF_NOWAIT, which reads
// only what the page cache holds): then it is fast, and a run of those makes the
// readahead skip a stretch of a warm store. A pipe or socket takes no advice (ok
// false).
func advise(f *unitFile, _ []byte) (fast, ok bool) {
	var b [1]byte
	iov := syscall.Iovec{Base: &b[0], Len: 1}
	const rwfNoWait = 8
	n, _, errno := syscall.Syscall6(sysPreadv2, uintptr(f.fd), uintptr(unsafe.Pointer(&iov)), 1, 0, 0, rwfNoWait)
	if errno == 0 && n == 1 {
		return true, true
	}
	return false, willNeed(f)
}

// willNeed queues the read of the head of f (up to readaheadMax) into the
// page cache and returns; false: f takes no advice.
func willNeed(f *unitFile) bool {
	const fadvWillNeed = 3
	_, _, errno := syscall.Syscall6(syscall.SYS_FADVISE64, uintptr(f.fd), 0, readaheadMax, fadvWillNeed, 0, 0)
	return errno == 0
}
