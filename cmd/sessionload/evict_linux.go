package main

import (
	"fmt"
	"os"
	"syscall"
)

// evict drops the given files' pages from the page cache with
// posix_fadvise(POSIX_FADV_DONTNEED), after writing back any dirty ones (sync), so
// the next read comes from the device. Only these files are affected: nothing
// system-wide like /proc/sys/vm/drop_caches.
func evict(files []string) error {
	syscall.Sync()
	const fadvDontNeed = 4
	for _, p := range files {
		f, err := os.Open(p)
		if err != nil {
			return err
		}
		_, _, errno := syscall.Syscall6(syscall.SYS_FADVISE64, f.Fd(), 0, 0, fadvDontNeed, 0, 0)
		f.Close()
		if errno != 0 {
			return fmt.Errorf("fadvise %s: %w", p, errno)
		}
	}
	return nil
}
