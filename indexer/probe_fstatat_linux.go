//go:build linux && (arm64 || loong64 || riscv64)

package indexer

import "syscall"

// fstatat stats name in the directory open at fd, not following a symlink.
func fstatat(fd int, name string, st *syscall.Stat_t) error {
	for {
		if err := syscall.Fstatat(fd, name, st, _AT_SYMLINK_NOFOLLOW); err != syscall.EINTR {
			return err
		}
	}
}

// fstatatZ is fstatat of a name given with its terminating NUL.
func fstatatZ(fd int, nameZ []byte, st *syscall.Stat_t) error {
	if len(nameZ) == 0 || nameZ[len(nameZ)-1] != 0 {
		return syscall.EINVAL
	}
	return fstatat(fd, string(nameZ[:len(nameZ)-1]), st)
}

const _AT_SYMLINK_NOFOLLOW = 0x100
