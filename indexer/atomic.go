package indexer

import (
	"fmt"
	"os"
	"path/filepath"
)

// TempPrefix starts the name of every temporary file sessionwatch writes, so the
// watcher can ignore events on them.
const TempPrefix = ".sessionwatch-tmp-"

// RetirePrefix names a session path the janitor moved aside while retiring it
// (janitor/retire.go). Such a file may hold the only copy of a session: only
// the janitor's journal recovery removes or restores it, never a temp sweep.
const RetirePrefix = TempPrefix + "retire-"

// WriteFileAtomic writes data to path so that readers see either the old or the new
// content, never a mix: a temp file in the same directory, fsync, rename, fsync of
// the directory. The file gets mode 0600; missing parents are created 0700.
func WriteFileAtomic(path string, data []byte) error {
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("create dir %s: %w", dir, err)
	}
	f, err := os.CreateTemp(dir, TempPrefix+filepath.Base(path)+"-*")
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	tmp := f.Name()
	ok := false
	defer func() {
		if !ok {
			f.Close()
			os.Remove(tmp)
		}
	}()
	if err := f.Chmod(0o600); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if _, err := f.Write(data); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := f.Sync(); err != nil {
		return fmt.Errorf("sync %s: %w", path, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return fmt.Errorf("rename %s: %w", path, err)
	}
	ok = true
	return SyncDir(dir)
}

// SyncDir fsyncs a directory so a rename or removal in it is durable.
func SyncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("sync dir %s: %w", dir, err)
	}
	defer d.Close()
	if err := d.Sync(); err != nil {
		return fmt.Errorf("sync dir %s: %w", dir, err)
	}
	return nil
}

// CleanTemp removes temporary files that a crash left behind in dir (not recursive).
func CleanTemp(dir string) {
	matches, _ := filepath.Glob(filepath.Join(dir, TempPrefix+"*"))
	for _, m := range matches {
		os.Remove(m)
	}
}
