//go:build !linux && !darwin

package indexer

import "io/fs"

// changeTime is fi's mtime where no status change time is at hand.
func changeTime(fi fs.FileInfo) int64 { return fi.ModTime().UnixNano() }
