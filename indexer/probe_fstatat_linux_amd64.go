package indexer

import (
	"syscall"
	"unsafe"
)

// fstatat stats name in the directory open at fd, not following a symlink
// (syscall exports Fstatat only on some architectures).
func fstatat(fd int, name string, st *syscall.Stat_t) error {
	p, err := syscall.BytePtrFromString(name)
	if err != nil {
		return err
	}
	for {
		_, _, errno := syscall.Syscall6(syscall.SYS_NEWFSTATAT, uintptr(fd), uintptr(unsafe.Pointer(p)), uintptr(unsafe.Pointer(st)), _AT_SYMLINK_NOFOLLOW, 0, 0)
		if errno != syscall.EINTR {
			if errno != 0 {
				return errno
			}
			return nil
		}
	}
}

// fstatatZ is fstatat of a name given with its terminating NUL (a getdents
// entry's d_name as listed), passed to the kernel as it is: no copy.
func fstatatZ(fd int, nameZ []byte, st *syscall.Stat_t) error {
	if len(nameZ) == 0 || nameZ[len(nameZ)-1] != 0 {
		return syscall.EINVAL
	}
	for {
		_, _, errno := syscall.Syscall6(syscall.SYS_NEWFSTATAT, uintptr(fd), uintptr(unsafe.Pointer(&nameZ[0])), uintptr(unsafe.Pointer(st)), _AT_SYMLINK_NOFOLLOW, 0, 0)
		if errno != syscall.EINTR {
			if errno != 0 {
				return errno
			}
			return nil
		}
	}
}

const _AT_SYMLINK_NOFOLLOW = 0x100
