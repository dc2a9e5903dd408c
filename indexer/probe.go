package indexer

import (
	"os"
)

// Unchanged reports whether the catalogs Load read are up to date with the files,
// by a stat of every unit and nothing else: no file is read or written and no
// consumer is consulted. list and show without a daemon call it before they
// refresh: when nothing changed (the common case) they list what Load read, and
// skip the refresh with its consumers altogether. An error (or any doubt: a
// catalog session Load could not restore, a walk error) answers false.
func (ix *Indexer) Unchanged() bool {
	ix.mu.Lock()
	defer ix.mu.Unlock()
	if ix.unrestored > 0 || ix.rootPending {
		return false
	}
	ix.probing, ix.probeChanged = true, false
	defer func() { ix.probing, ix.probeChanged = false, false }()
	if _, err := ix.walkLocked("."); err != nil {
		return false
	}
	return !ix.probeChanged
}

// visitUnitLocked is what a walk does with each unit it finds: bring it up to
// date, or, in a probing walk, only note whether it changed.
func (ix *Indexer) visitUnitLocked(urel string, kind UnitKind) error {
	if !ix.probing {
		return ix.updateUnitLocked(urel, kind)
	}
	if !ix.probeChanged && !ix.unitUnchangedLocked(urel, kind) {
		ix.probeChanged = true
	}
	return nil
}

// unitUnchangedLocked reports whether a unit's file is, by its stat (and its
// dependency stamp), what the unit was built from; the same test the reads make
// before they skip a file.
func (ix *Indexer) unitUnchangedLocked(urel string, kind UnitKind) bool {
	u := ix.units[urel]
	if u == nil || len(u.sessions) == 0 {
		return false
	}
	fi, err := os.Lstat(ix.unitPath(urel))
	if err != nil || !fi.Mode().IsRegular() {
		return false
	}
	dev, ino := statIdentity(fi)
	t := &u.tail
	if dev != t.Dev || ino != t.Ino || fi.Size() != t.Size || fi.ModTime().UnixNano() != t.Mtime {
		return false
	}
	switch kind {
	case UnitLines:
		return u.acc != nil && fi.Size() >= t.Offset
	case UnitDocument:
		if ds, ok := ix.layout.(DependencyStamper); ok {
			return ds.DepStamp(ix.rootDir, urel) == t.Dep
		}
		return true
	}
	return false
}
