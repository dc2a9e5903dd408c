package main

import (
	"syscall"
	"unsafe"
)

// monotonicUsec is CLOCK_MONOTONIC in microseconds, sent with RELOADING=1.
func monotonicUsec() int64 {
	var ts syscall.Timespec
	const clockMonotonic = 1
	if _, _, errno := syscall.Syscall(syscall.SYS_CLOCK_GETTIME, clockMonotonic, uintptr(unsafe.Pointer(&ts)), 0); errno != 0 {
		return 0
	}
	return int64(ts.Sec)*1e6 + int64(ts.Nsec)/1e3
}
