package usage

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/sessionwatch/sessionwatch/indexer"
)

// BehindName is the marker a writer leaves in the ledger's directory before it
// moves the catalogs without the ledger attached (reindex, clean or restore
// while a daemon runs: the daemon catches its ledger up at its next pass over
// each unit, which a kill can prevent). While it is there the ledger may be
// behind the catalogs, so a catalog proved current does not prove the ledger
// current: Stamped is false, and `usage` without a daemon runs a full pass
// (which hands the ledger whatever it lacks) before ClearBehind.
const BehindName = "behind"

// MarkBehind leaves the marker, durably, before the catalogs move.
func MarkBehind(stateDir string) error {
	dir := filepath.Join(stateDir, DirName)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	return indexer.WriteFileAtomic(filepath.Join(dir, BehindName), nil)
}

// Behind is the marker as a pass found it (nil: none), for ClearBehind.
type Behind struct{ fi os.FileInfo }

// BehindMark returns the marker as it is now, before a full pass.
func BehindMark(stateDir string) Behind {
	fi, err := os.Lstat(filepath.Join(stateDir, DirName, BehindName))
	if err != nil {
		return Behind{}
	}
	return Behind{fi}
}

// ClearBehind removes the marker once a full pass with the ledger attached has
// brought it up to every catalog; m is the marker as it was before that pass. A
// marker left again since (another inode: MarkBehind writes a new file) stays.
func ClearBehind(stateDir string, m Behind) error {
	if m.fi == nil {
		return nil
	}
	dir := filepath.Join(stateDir, DirName)
	path := filepath.Join(dir, BehindName)
	if fi, err := os.Lstat(path); err != nil || !os.SameFile(fi, m.fi) || !fi.ModTime().Equal(m.fi.ModTime()) {
		return nil
	}
	if err := os.Remove(path); err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		return err
	}
	return indexer.SyncDir(dir)
}

// behind reports whether the marker is there.
func behind(dir string) bool {
	_, err := os.Lstat(filepath.Join(dir, BehindName))
	return !errors.Is(err, fs.ErrNotExist)
}
