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

const _AT_SYMLINK_NOFOLLOW = 0x100
