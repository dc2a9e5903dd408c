//go:build linux && (amd64 || arm64 || loong64 || riscv64)

package indexer

import (
	"bytes"
	"slices"
	"syscall"
	"time"
)

// startScanRaw selects Start's raw walk (startScan); tests turn it off to hold
// it to the answers of walkLocked.
var startScanRaw = true

// startScan is Start's walk over the catalogs Load read, made with the system
// calls themselves as Unchanged's raw walk is (probe_raw.go): each directory
// listed once with getdents, each known unit's file stat'ed relative to its
// directory's descriptor by the name getdents gave (no path resolved from the
// root, no path built, no Classify for a file the catalogs hold, no sorting).
// What walkLocked would find unchanged by its stat is marked (unit.probed);
// everything else it would do — read a changed or new unit, classify an
// unknown file, remove a stale temp file — is done as walkLocked does it, by
// the same calls. Any doubt (a directory that cannot be opened or listed, an
// entry gone between the listing and its stat) answers false, and Start walks
// with walkLocked instead, which reports such errors as it always did.
type startScan struct {
	ix      *Indexer
	gen     uint32          // marks the units found unchanged (unit.probed)
	natives map[string]bool // project dirs holding a native index
	pending []pendingUnit   // units walkLocked would bring up to date, in walk order
	queued  map[string]bool // their names
	rel     []byte          // the path of the entry at hand, relative to the root
	bufs    [][]byte        // a listing buffer per depth
}

type pendingUnit struct {
	urel string
	kind UnitKind
}

// scanStartLocked is walkLocked(".") for Start by a startScan (its errors are
// logged, as walkLocked's are); ok is false when it could not tell and
// walkLocked must walk instead (nothing was changed then).
func (ix *Indexer) scanStartLocked() (natives map[string]bool, ok bool) {
	if !startScanRaw || ix.rootRel != "" || len(ix.units) == 0 {
		return nil, false
	}
	fd, err := syscall.Open(ix.rootDir, syscall.O_RDONLY|syscall.O_DIRECTORY|syscall.O_NOFOLLOW|syscall.O_CLOEXEC, 0)
	if err != nil {
		return nil, false
	}
	ix.probeGen++
	s := &startScan{ix: ix, gen: ix.probeGen, natives: map[string]bool{}, queued: map[string]bool{}}
	ok = s.dir(fd, 0)
	syscall.Close(fd)
	if !ok {
		ix.probeGen++ // forget the marks
		return nil, false
	}
	for _, p := range s.pending {
		if err := ix.updateUnitLocked(p.urel, p.kind); err != nil {
			ix.log.Warn("index failed", "file", ix.unitPath(p.urel), "err", err)
		}
	}
	var gone []string
	for urel, u := range ix.units {
		if u.probed != s.gen && !s.queued[urel] {
			gone = append(gone, urel)
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

// seen reports whether the walk found the unit already (unchanged or queued).
func (s *startScan) seen(urel string) bool {
	if s.queued[urel] {
		return true
	}
	u := s.ix.units[urel]
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
	for depth >= len(s.bufs) {
		s.bufs = append(s.bufs, make([]byte, 0, 16<<10))
	}
	buf := s.bufs[depth][:0]
	for {
		if cap(buf)-len(buf) < 4<<10 {
			buf = append(buf[:cap(buf)], 0)[:len(buf)]
		}
		n, err := syscall.Getdents(fd, buf[len(buf):cap(buf)])
		if err == syscall.EINTR {
			continue
		}
		if err != nil {
			return false
		}
		if n <= 0 {
			break
		}
		buf = buf[:len(buf)+n]
	}
	s.bufs[depth] = buf
	base := len(s.rel)
	defer func() { s.rel = s.rel[:base] }()
	for off := 0; off+direntName <= len(buf); {
		reclen := int(buf[off+direntReclen]) | int(buf[off+direntReclen+1])<<8
		if reclen <= direntName || off+reclen > len(buf) {
			return false
		}
		name := buf[off+direntName : off+reclen]
		var nameZ []byte
		if i := bytes.IndexByte(name, 0); i >= 0 {
			name, nameZ = name[:i], name[:i+1]
		}
		typ := buf[off+direntType]
		if probeTypeless {
			typ = syscall.DT_UNKNOWN
		}
		off += reclen
		if len(name) == 0 || string(name) == "." || string(name) == ".." {
			continue
		}
		s.rel = s.rel[:base]
		if base > 0 {
			s.rel = append(s.rel, '/')
		}
		s.rel = append(s.rel, name...)
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
				continue
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
				continue
			}
			if bytes.HasPrefix(name, tempPrefix) {
				if ix.opt.CleanTemps && !ix.opt.Check && !bytes.HasPrefix(name, retirePrefix) {
					// removeStaleTemp's test, relative to fd.
					if !stat() {
						return false
					}
					if st.Mode&syscall.S_IFMT == syscall.S_IFREG && time.Unix(st.Mtim.Sec, st.Mtim.Nsec).Before(processStart) {
						syscall.Unlinkat(fd, string(name))
					}
				}
				continue
			}
			// A known unit's own file needs no classifying: the catalogs hold it.
			if u := ix.units[string(s.rel)]; u != nil {
				if u.probed == s.gen || s.queued[u.rel] {
					continue
				}
				if !stat() {
					return false
				}
				if s.unchanged(u, &st) {
					u.probed = s.gen
				} else {
					s.queue(u.rel, u.kind)
				}
				continue
			}
			if urel, kind := ix.layout.Classify(string(s.rel)); kind != UnitNone {
				s.queue(urel, kind)
			}
		}
	}
	return true
}

// unchanged is the test by which walkLocked's read of a known unit (its own
// file stat'ed as st) returns at once: the same file, size and mtime as the
// unit was built from (for a document, the same dependency stamp; for a line
// unit, with its state held or parked) and no consumer behind it.
func (s *startScan) unchanged(u *unit, st *syscall.Stat_t) bool {
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
		if dep != t.Dep {
			return false
		}
	default:
		return false
	}
	return !ix.consumersBehindLocked(u)
}

var retirePrefix = []byte(RetirePrefix)
