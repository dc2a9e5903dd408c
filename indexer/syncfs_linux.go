//go:build linux && (amd64 || arm64)

package indexer

import (
	"os"
	"syscall"
)

// haveSyncfs: syncfs(2) is there to make a whole batch durable at once, and it
// reports a page that could not be written back. It does since Linux 5.8;
// before, it returned 0 regardless, and a batch would be renamed over the old
// outputs on a failed write-back: older kernels sync each file and directory.
var haveSyncfs = syncfsReportsErrors()

func syncfsReportsErrors() bool {
	var u syscall.Utsname
	if syscall.Uname(&u) != nil {
		return false
	}
	b := make([]byte, 0, len(u.Release))
	for _, c := range u.Release {
		if c == 0 {
			break
		}
		b = append(b, byte(c))
	}
	return kernelAtLeast(string(b), 5, 8)
}

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
