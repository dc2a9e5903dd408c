//go:build linux && (amd64 || arm64)

package indexer

import (
	"os"
	"syscall"
)

// haveSyncfs: syncfs(2) is there to make a whole batch durable at once.
const haveSyncfs = true

// syncfsDir runs syncfs(2) on the filesystem holding dir: every dirty page and
// inode of it, and its journal, reach the device before it returns.
func syncfsDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	if _, _, errno := syscall.Syscall(sysSyncfs, d.Fd(), 0, 0); errno != 0 {
		return errno
	}
	return nil
}
