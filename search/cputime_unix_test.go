//go:build unix

package search

import "syscall"

// processCPU is the CPU time (user and system) the process has used, in
// nanoseconds: benchmarks report it per op beside the wall time, which other
// processes on a shared machine stretch.
func processCPU() int64 {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return ru.Utime.Nano() + ru.Stime.Nano()
}
