//go:build linux && (amd64 || arm64 || loong64 || riscv64)

package indexer

import (
	"bytes"
	"os"
	"slices"
	"syscall"
)

// startScanRaw selects Start's raw walk (startScan); tests turn it off to hold
// it to the answers of walkLocked.
var startScanRaw = true

// startScan is Start's walk over the catalogs Load read, made with the system
// calls themselves as Unchanged's raw walk is (probe_raw.go): each directory
// listed once with getdents, each known unit's file stat'ed relative to its
// directory's descriptor by the name getdents gave (no path resolved from the
// root, no path built, no Classify for a file the catalogs hold, no sorting).
// The listing (proveLocked) only looks: it marks the units whose stat is what
// they were built from (unit.probed) and notes everything else walkLocked
// would act on — a changed or new unit, a native index, a temp file. What
// walkLocked would then do is done by scanStartLocked, by the same calls.
// Any doubt (a directory that cannot be opened or listed, an entry gone
// between the listing and its stat) ends the listing, and Start walks with
// walkLocked instead, which reports such errors as it always did.
//
// The listing needs no consumer and no writer lock, so the daemon runs it
// (Group.ProveAll) as soon as the catalogs are loaded and the watches are in
// place, while the usage ledger and the search index still open: a change
// after a directory's listing is an event the daemon handles once ready. A
// listing is kept (ix.proof) until Start uses it, and dropped by any pass
// that writes before (its marks would be stale).
type startScan struct {
	ix      *Indexer
	gen     uint16          // marks the units found unchanged (unit.probed)
	natives map[string]bool // project dirs holding a native index
	temps   []string        // temp files of crashed writers' to remove (paths)
	pending []pendingUnit   // units walkLocked would bring up to date, in listing order
	queued  map[string]bool // their names
	rel     []byte          // the path of the entry at hand, relative to the root
	bufs    [][]byte        // a listing buffer per depth
}

type pendingUnit struct {
	urel string
	kind UnitKind
}

// proveLocked lists the source for Start (startScan); nil when it cannot tell
// and walkLocked must walk instead.
func (ix *Indexer) proveLocked() *startScan {
	if !startScanRaw || ix.rootRel != "" || ix.units.len() == 0 || ix.lite {
		return nil
	}
	fd, err := syscall.Open(ix.rootDir, syscall.O_RDONLY|syscall.O_DIRECTORY|syscall.O_NOFOLLOW|syscall.O_CLOEXEC, 0)
	if err != nil {
		return nil
	}
	s := &startScan{ix: ix, gen: ix.nextProbeGenLocked(), natives: map[string]bool{}, queued: map[string]bool{}}
	ok := s.dir(fd, 0)
	syscall.Close(fd)
	s.bufs, s.rel = nil, nil
	if !ok {
		ix.nextProbeGenLocked() // forget the marks
		return nil
	}
	return s
}

// scanStartLocked is walkLocked(".") for Start by a startScan: the one the
// daemon made early (ix.proof) if it still holds, else a new one. Its errors
// are logged, as walkLocked's are; ok is false when it could not tell and
// walkLocked must walk instead (nothing was changed then).
func (ix *Indexer) scanStartLocked() (natives map[string]bool, ok bool) {
	s := ix.proof
	ix.proof = nil
	early := s != nil && s.gen == ix.probeGen
	if !early {
		if s = ix.proveLocked(); s == nil {
			return nil, false
		}
	}
	// A consumer behind a unit the listing found unchanged is handed what it
	// lacks, as walkLocked's read would.
	if len(ix.consumers) > 0 {
		for u := range ix.units.all() {
			if u.probed == s.gen && ix.consumersBehindLocked(u) {
				u.probed = 0
				s.queue(u.rel, u.kind)
			}
		}
	}
	// What is read or removed below is reached by its path from the root. A
	// listing made early (while the consumers opened) saw each directory as it
	// was then: one replaced by a symlink since must not be followed, so each
	// directory on the way is a directory still, or the tree is walked afresh.
	if early && !s.dirsHold() {
		ix.nextProbeGenLocked() // forget the marks
		return nil, false
	}
	ix.rawStarts++
	for _, p := range s.temps {
		if fi, err := os.Lstat(p); err == nil && fi.Mode().IsRegular() && fi.ModTime().Before(processStart) {
			os.Remove(p)
		}
	}
	for _, p := range s.pending {
		if err := ix.updateUnitLocked(p.urel, p.kind); err != nil {
			ix.log.Warn("index failed", "file", ix.unitPath(p.urel), "err", err)
		}
	}
	var gone []string
	for u := range ix.units.all() {
		if u.probed != s.gen && !s.queued[u.rel] {
			gone = append(gone, u.rel)
		}
	}
	slices.Sort(gone)
	ix.removeUnitsLocked(gone)
	if !ix.refreshing {
		for d := range s.natives {
			ix.dirtyDirs[d] = true
		}
	}
	return s.natives, true
}

// dirsHold reports whether every directory on the way from the root to a unit
// the listing queued, to a temp file it is to remove, or to a native index it
// found, is still a directory (not a symlink, not gone).
func (s *startScan) dirsHold() bool {
	ix := s.ix
	checked := map[string]bool{"": true} // the root (pathDir of a top-level name is "")
	hold := func(dir string) bool {
		if !checked[dir] {
			if !ix.realDirLocked(dir) {
				return false
			}
			checked[dir] = true
		}
		return true
	}
	for _, p := range s.pending {
		if !hold(pathDir(p.urel)) {
			return false
		}
	}
	for _, p := range s.temps {
		rel, ok := ix.relOf(p)
		if !ok || !hold(pathDir(rel)) {
			return false
		}
	}
	for d := range s.natives {
		if !hold(d) {
			return false
		}
	}
	return true
}

// Prove lists the source for the daemon's Start ahead of it (startScan), while
// the consumers are not attached yet: it reads no transcript and writes
// nothing. Only the daemon calls it, between Load and Start, with the watches
// in place.
func (ix *Indexer) Prove() {
	ix.mu.Lock()
	defer ix.mu.Unlock()
	ix.proof = ix.proveLocked()
}

// seen reports whether the walk found the unit already (unchanged or queued).
func (s *startScan) seen(urel string) bool {
	if s.queued[urel] {
		return true
	}
	u := s.ix.units.get(urel)
	return u != nil && u.probed == s.gen
}

// queue has the unit brought up to date after the listing, as walkLocked would
// on finding it.
func (s *startScan) queue(urel string, kind UnitKind) {
	if s.seen(urel) {
		return
	}
	s.queued[urel] = true
	s.pending = append(s.pending, pendingUnit{urel, kind})
}

// dir lists the directory open at fd, whose path relative to the root is s.rel.
func (s *startScan) dir(fd, depth int) bool {
	ix := s.ix
	return listRaw(fd, depth, &s.bufs, &s.rel, func(name, nameZ []byte, typ byte) bool {
		var st syscall.Stat_t
		statted := false
		stat := func() bool {
			if !statted {
				var err error
				if nameZ != nil {
					err = fstatatZ(fd, nameZ, &st)
				} else {
					err = fstatat(fd, string(name), &st)
				}
				if err != nil {
					return false
				}
				statted = true
			}
			return true
		}
		if typ == syscall.DT_UNKNOWN {
			if !stat() {
				return false
			}
			typ = direntTypeOf(st.Mode)
		}
		switch typ {
		case syscall.DT_LNK:
			// never followed
		case syscall.DT_DIR:
			r := string(s.rel)
			if ix.layout.SkipDir(r) {
				if urel, kind := ix.layout.Classify(r); kind != UnitNone {
					s.queue(urel, kind)
				}
				return true
			}
			sub, err := syscall.Openat(fd, string(name), syscall.O_RDONLY|syscall.O_DIRECTORY|syscall.O_NOFOLLOW|syscall.O_CLOEXEC, 0)
			if err != nil {
				return false
			}
			ok := s.dir(sub, depth+1)
			syscall.Close(sub)
			if !ok {
				return false
			}
		default:
			if string(name) == CatalogName {
				s.natives[pathDir(string(s.rel))] = true
				return true
			}
			if bytes.HasPrefix(name, tempPrefix) {
				if ix.opt.CleanTemps && !ix.opt.Check && !bytes.HasPrefix(name, retirePrefix) {
					// Removed as removeStaleTemp would, once the writer lock is held.
					s.temps = append(s.temps, ix.unitPath(string(s.rel)))
				}
				return true
			}
			// A known unit's own file needs no classifying: the catalogs hold it.
			if u := ix.units.getBytes(s.rel); u != nil {
				if u.probed == s.gen || s.queued[u.rel] {
					return true
				}
				if !stat() {
					return false
				}
				if s.statUnchanged(u, &st) {
					u.probed = s.gen
				} else {
					s.queue(u.rel, u.kind)
				}
				return true
			}
			if urel, kind := ix.layout.Classify(string(s.rel)); kind != UnitNone {
				s.queue(urel, kind)
			}
		}
		return true
	})
}

// statUnchanged is the test by which walkLocked's read of a known unit (its
// own file stat'ed as st) returns at once: the same file, size and mtime as the
// unit was built from (for a document, the same dependency stamp; for a line
// unit, with its state held or parked), less the consumers' positions, which
// scanStartLocked compares.
func (s *startScan) statUnchanged(u *unit, st *syscall.Stat_t) bool {
	ix := s.ix
	if st.Mode&syscall.S_IFMT != syscall.S_IFREG {
		return false
	}
	t := &u.tail
	size, mtime := int64(st.Size), int64(st.Mtim.Sec)*1e9+int64(st.Mtim.Nsec)
	if uint64(st.Dev) != t.Dev || uint64(st.Ino) != t.Ino || size != t.Size || mtime != t.Mtime {
		return false
	}
	switch u.kind {
	case UnitLines:
		if !u.hasState() || size < t.Offset || ix.verifying {
			return false
		}
	case UnitDocument:
		dep := ""
		if ds, ok := ix.layout.(DependencyStamper); ok {
			dep = ds.DepStamp(ix.rootDir, u.rel)
		}
		if dep != t.Dep() {
			return false
		}
	default:
		return false
	}
	return true
}

var retirePrefix = []byte(RetirePrefix)
