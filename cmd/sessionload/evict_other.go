//go:build !linux

package main

import "errors"

// evict needs posix_fadvise, which only the Linux build calls; elsewhere the
// evicted-cache measurements are refused rather than silently run warm.
func evict(files []string) error {
	return errors.New("evicting files from the page cache needs Linux (posix_fadvise)")
}
