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

// ClearBehind removes the marker once a full pass with the ledger attached
// has brought it up to every catalog.
func ClearBehind(stateDir string) error {
	dir := filepath.Join(stateDir, DirName)
	if err := os.Remove(filepath.Join(dir, BehindName)); err != nil {
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
