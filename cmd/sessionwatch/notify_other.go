//go:build !linux

package main

// monotonicUsec is 0 where there is no systemd: RELOADING=1 is only ever read by
// systemd, on Linux.
func monotonicUsec() int64 { return 0 }
