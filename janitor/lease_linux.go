package janitor

import (
	"errors"
	"os"
	"syscall"
)

// takeLease puts a write lease (fcntl F_SETLEASE F_WRLCK) on f. The kernel
// grants it only while no other file description has the file open, and from
// then on any open(2) of the file, by any path and any process, blocks until
// the lease is released and shows as a pending break (leaseBroken). ok is
// false when the file is open elsewhere (EAGAIN); err is set when leases are
// not available here (another owner, a filesystem without them).
func takeLease(f *os.File) (ok bool, err error) {
	_, _, e := syscall.Syscall(syscall.SYS_FCNTL, f.Fd(), syscall.F_SETLEASE, syscall.F_WRLCK)
	switch {
	case e == 0:
		return true, nil
	case errors.Is(e, syscall.EAGAIN):
		return false, nil
	}
	return false, e
}

// leaseBroken reports whether someone has started to open a leased file: the
// kernel then asks the holder to give the lease up (F_GETLEASE no longer
// reads F_WRLCK).
func leaseBroken(f *os.File) bool {
	r, _, e := syscall.Syscall(syscall.SYS_FCNTL, f.Fd(), syscall.F_GETLEASE, 0)
	return e != 0 || int(r) != syscall.F_WRLCK
}

// dropLease releases a lease; closing the file does too.
func dropLease(f *os.File) {
	syscall.Syscall(syscall.SYS_FCNTL, f.Fd(), syscall.F_SETLEASE, syscall.F_UNLCK)
}
