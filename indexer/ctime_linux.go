package indexer

import (
	"io/fs"
	"syscall"
)

// changeTime is fi's status change time (ctime, unix ns), else its mtime. No
// call can set a ctime: a tool that sets a directory's mtime back (rsync -a,
// cp -a, tar x) leaves it at the time of the change.
func changeTime(fi fs.FileInfo) int64 {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return st.Ctim.Nano()
	}
	return fi.ModTime().UnixNano()
}
