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

const _AT_SYMLINK_NOFOLLOW = 0x100
