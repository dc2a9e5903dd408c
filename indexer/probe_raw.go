//go:build linux && (amd64 || arm64 || loong64 || riscv64)

package indexer

import (
	"bytes"
	"sync/atomic"
	"syscall"
)

// probeRaw selects the walk of rawDir for Unchanged; tests turn it off to hold
// the portable walk (prober.dir) to the same answers.
var probeRaw = true

// probeTypeless makes rawDir ignore the types getdents gives, as on a file
// system that gives none (tests: both paths run wherever the tests do).
var probeTypeless = false

// walk probes the directory at path, the source root.
func (p *prober) walk(path string) bool {
	if !probeRaw {
		return p.dir(path, ".")
	}
	fd, err := syscall.Open(path, syscall.O_RDONLY|syscall.O_DIRECTORY|syscall.O_CLOEXEC, 0)
	if err != nil {
		// A root that does not exist holds nothing: unchanged if nothing was known.
		return err == syscall.ENOENT && p.ix.units.len() == 0
	}
	defer syscall.Close(fd)
	p.rel = p.rel[:0]
	return p.rawDir(fd, 0)
}

// Linux dirent64: d_ino, d_off (8 bytes each), d_reclen (2, read little-endian:
// the build tags name only little-endian architectures), d_type (1), d_name.
const (
	direntReclen = 16
	direntType   = 18
	direntName   = 19
)

// rawDir is prober.dir on a directory open at fd, whose path relative to the
// root is p.rel (empty for the root): the same rules and the same checks, made
// with the system calls themselves. The directory is listed with getdents into
// a buffer reused at each depth, its names looked up without a string each, and
// only the entries that need it are stat'ed, relative to fd (fstatat), once:
// a known unit's file (its identity, size and mtime) and, where the file system
// gives no type in the listing (DT_UNKNOWN: ext2/ext3 without the filetype
// feature, some network file systems), any entry whose type decides what is
// done with it. Nothing is resolved from the root and nothing is allocated per
// known file: fstatat takes the name where getdents put it, with its NUL.
func (p *prober) rawDir(fd, depth int) bool {
	return listRaw(fd, depth, &p.bufs, &p.rel, func(name, nameZ []byte, typ byte) bool {
		return p.rawEntry(fd, depth, name, nameZ, typ)
	})
}

// rawEntry is rawDir's check of one entry of the directory open at fd, whose
// path relative to the root is p.rel (the directory's, then the entry's).
func (p *prober) rawEntry(fd, depth int, name, nameZ []byte, typ byte) bool {
	{
		var st syscall.Stat_t
		statted := false
		if typ == syscall.DT_UNKNOWN {
			if p.stat(fd, name, nameZ, &st) != nil {
				return false // gone since the listing, or unreadable: a change, or doubt
			}
			statted = true
			typ = direntTypeOf(st.Mode)
		}
		switch typ {
		case syscall.DT_LNK:
			// never followed
		case syscall.DT_DIR:
			r := string(p.rel)
			if p.ix.layout.SkipDir(r) {
				if urel, kind := p.ix.layout.Classify(r); kind != UnitNone && !p.unit(urel, kind, nil) {
					return false
				}
				return true
			}
			sub, err := syscall.Openat(fd, string(name), syscall.O_RDONLY|syscall.O_DIRECTORY|syscall.O_NOFOLLOW|syscall.O_CLOEXEC, 0)
			if err != nil {
				return false
			}
			var ok bool
			if child, only := onlyChildOf(p.ix.layout, r); only {
				ok = p.rawChild(sub, child, depth+1)
			} else {
				ok = p.rawDir(sub, depth+1)
			}
			syscall.Close(sub)
			if !ok {
				return false
			}
		default:
			if string(name) == CatalogName || bytes.HasPrefix(name, tempPrefix) {
				return true // a native index, or a writer's temp file
			}
			// A known unit's own file needs no classifying: the catalogs hold it.
			if u := p.ix.units.getBytes(p.rel); u != nil {
				if !statted && p.stat(fd, name, nameZ, &st) != nil {
					return false
				}
				if !p.unitStat(u, &st) {
					return false
				}
				return true
			}
			r := string(p.rel)
			// Not its own known unit: as prober.dir does, with the unit's own
			// stat taken by path when it is one.
			if urel, kind := p.ix.layout.Classify(r); kind != UnitNone && !p.unit(urel, kind, nil) {
				return false
			}
		}
		return true
	}
}

// rootListing is the source root, open and listed once, whose entries the
// parts of a split walk share (splitWalk): each part takes the next entry not
// yet taken (next) until none is left, so that the parts end together however
// late each starts, and what they see together is what one walk would of the
// same listing, whatever changes after it. A part that finds a change stops
// the others (failed): the walk's answer is then false whatever they find.
type rootListing struct {
	fd      int
	entries []rootEntry
	next    atomic.Int64 // the next entry to take
	failed  atomic.Bool
}

// rootEntry is an entry of the root as getdents gave it.
type rootEntry struct {
	nameZ []byte // the name and its NUL
	typ   byte
}

// listRoot opens and lists the source root for a split walk. ok false when
// the walk cannot be split (no raw walk, a file root); then, or when the
// root is absent (fd -1), the caller walks as Unchanged does.
func (ix *Indexer) listRoot() (l *rootListing, ok bool) {
	if !probeRaw || ix.rootRel != "" {
		return nil, false
	}
	fd, err := syscall.Open(ix.rootDir, syscall.O_RDONLY|syscall.O_DIRECTORY|syscall.O_CLOEXEC, 0)
	if err != nil {
		return nil, false
	}
	l = &rootListing{fd: fd}
	var bufs [][]byte
	var rel []byte
	if !listRaw(fd, 0, &bufs, &rel, func(name, nameZ []byte, typ byte) bool {
		z := nameZ
		if z == nil {
			z = append(append([]byte(nil), name...), 0)
		}
		l.entries = append(l.entries, rootEntry{nameZ: z, typ: typ})
		return true
	}) {
		l.close()
		return nil, false
	}
	return l, true
}

func (l *rootListing) close() { syscall.Close(l.fd) }

// walkPart is a part of a split walk of the root listed as l: the entries
// it takes (rootListing.next), checked as rawDir checks them, until none is
// left or a part found a change.
func (p *prober) walkPart(l *rootListing) bool {
	for !l.failed.Load() {
		i := int(l.next.Add(1) - 1)
		if i >= len(l.entries) {
			return true
		}
		e := &l.entries[i]
		name := e.nameZ[:len(e.nameZ)-1]
		p.rel = append(p.rel[:0], name...)
		if !p.rawEntry(l.fd, 0, name, e.nameZ, e.typ) {
			l.failed.Store(true)
			return false
		}
	}
	return false
}

// listRaw lists the directory open at fd with getdents, into (*bufs)[depth] (a
// buffer kept per depth, grown as needed, for the next directory there), and
// calls fn for each entry but "." and "..", with *rel (the directory's path
// relative to the root, empty for the root) extended by the entry's name;
// *rel is restored after. nameZ is the name with its NUL, as fstatatZ takes
// it (nil if the record has none); typ is the listing's DT_ type (DT_UNKNOWN
// under probeTypeless). false: the listing failed or is malformed, or fn
// returned false (the rest is not listed).
func listRaw(fd, depth int, bufs *[][]byte, rel *[]byte, fn func(name, nameZ []byte, typ byte) bool) bool {
	for depth >= len(*bufs) { // a caller may skip a depth
		*bufs = append(*bufs, make([]byte, 0, 16<<10))
	}
	buf := (*bufs)[depth][:0]
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
	(*bufs)[depth] = buf
	base := len(*rel)
	defer func() { *rel = (*rel)[:base] }()
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
		r := (*rel)[:base]
		if base > 0 {
			r = append(r, '/')
		}
		*rel = append(r, name...)
		if !fn(name, nameZ, typ) {
			return false
		}
	}
	return true
}

// atFDCWD is Linux's AT_FDCWD: a name relative to the working directory.
const atFDCWD = -0x64

// openRawDir opens name (relative to dirfd) as a directory, never through a
// symlink. fd is -1 when there is nothing to probe there: ok then says whether
// that is certain (nothing there, a symlink, not a directory) or doubt
// (unreadable).
func openRawDir(dirfd int, name string) (fd int, ok bool) {
	f, err := syscall.Openat(dirfd, name, syscall.O_RDONLY|syscall.O_DIRECTORY|syscall.O_NOFOLLOW|syscall.O_CLOEXEC, 0)
	switch err {
	case nil:
		return f, true
	case syscall.ENOENT, syscall.ELOOP, syscall.ENOTDIR:
		return -1, true
	}
	return -1, false
}

// rawChild probes, in the directory open at fd (p.rel), only its child
// directory child, without listing fd: the layout says nothing else in it is a
// unit or leads to one (onlyChildLayout). What rawDir would find by listing
// fd, it finds by opening child: a real directory is probed; nothing there, a
// symlink (never followed) or anything not a directory holds nothing.
func (p *prober) rawChild(fd int, child string, depth int) bool {
	sub, found := openRawDir(fd, child)
	if sub < 0 {
		return found
	}
	defer syscall.Close(sub)
	base := len(p.rel)
	p.rel = append(append(p.rel, '/'), child...)
	ok := p.rawDir(sub, depth+1)
	p.rel = p.rel[:base]
	return ok
}

// stat stats an entry of the directory open at fd: by its listed name and NUL
// when getdents gave one (nameZ), with no copy; else by name.
func (p *prober) stat(fd int, name, nameZ []byte, st *syscall.Stat_t) error {
	if nameZ != nil {
		return fstatatZ(fd, nameZ, st)
	}
	return fstatat(fd, string(name), st)
}

// unitStat is prober.unit for a known unit found by its own file, stat'ed as st.
func (p *prober) unitStat(u *unit, st *syscall.Stat_t) bool {
	if seen, ok := p.visit(u); seen || !ok {
		return ok
	}
	if st.Mode&syscall.S_IFMT != syscall.S_IFREG {
		return false
	}
	t := &u.tail
	if uint64(st.Dev) != t.Dev || uint64(st.Ino) != t.Ino || int64(st.Size) != t.Size || int64(st.Mtim.Sec)*1e9+int64(st.Mtim.Nsec) != t.Mtime {
		return false
	}
	return tailUnchanged(p.ix, u, u.rel, u.kind, int64(st.Size))
}

var tempPrefix = []byte(TempPrefix)

// dtOther is the type of an entry that is neither a directory, a symlink nor a
// regular file (a fifo, a socket, a device): treated as a file, which a unit's
// check then finds not regular.
const dtOther = 0xff

// direntTypeOf maps a stat mode to the d_type getdents would have given.
func direntTypeOf(mode uint32) byte {
	switch mode & syscall.S_IFMT {
	case syscall.S_IFDIR:
		return syscall.DT_DIR
	case syscall.S_IFLNK:
		return syscall.DT_LNK
	case syscall.S_IFREG:
		return syscall.DT_REG
	}
	return dtOther
}

// walkSub probes the directory rel (relative to the root, not "."), as the
// walk from the root would when it reaches it. Nothing there (or a symlink,
// never followed, or no directory) holds nothing.
func (p *prober) walkSub(rel string) bool {
	if !probeRaw {
		return p.dirSub(rel)
	}
	fd, ok := openRawDir(atFDCWD, p.ix.rootDir+"/"+rel)
	if fd < 0 {
		return ok
	}
	defer syscall.Close(fd)
	p.rel = append(p.rel[:0], rel...)
	if child, only := onlyChildOf(p.ix.layout, rel); only {
		return p.rawChild(fd, child, 0)
	}
	return p.rawDir(fd, 0)
}
