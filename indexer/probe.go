package indexer

import (
	"errors"
	"io/fs"
	"os"
	"strings"
)

// Unchanged reports whether the catalogs Load read are up to date with the files,
// by a stat of every unit and nothing else: no file is read or written and no
// consumer is consulted. list and show without a daemon call it before they
// refresh: when nothing changed (the common case) they list what Load read, and
// skip the refresh with its consumers altogether. Any doubt (a catalog session
// Load could not restore, a directory that cannot be listed) answers false.
//
// It walks the source as walkLocked does (same symlink, SkipDir, temp-file and
// Classify rules). On Linux it lists each directory with getdents and stats each
// known unit's file relative to the directory's descriptor (rawDir), with no
// allocation per file but its name; elsewhere, and in tests that ask for it, it
// lists through an os.Root, which stats each entry as it lists it (dir). A stat
// per file is the floor of this proof: an append changes neither a directory's
// listing nor its mtime, only the file's size and mtime.
func (ix *Indexer) Unchanged() bool {
	ix.mu.Lock()
	defer ix.mu.Unlock()
	return ix.unchangedLocked()
}

func (ix *Indexer) unchangedLocked() bool {
	if ix.unrestored > 0 || ix.rootPending {
		return false
	}
	p := prober{ix: ix, gen: ix.nextProbeGenLocked()}
	if ix.rootRel != "" {
		// A file root: its one unit, if the file is there.
		if urel, kind := ix.layout.Classify(ix.rootRel); kind != UnitNone {
			if _, err := os.Lstat(ix.opt.Root); err == nil && !p.unit(urel, kind, nil) {
				return false
			}
		}
	} else if !p.walk(ix.rootDir) {
		return false
	}
	return p.found == ix.units.len()
}

// onlyChildLayout is a layout with directories in which one child directory
// alone can hold units or lead to them: Unchanged's raw walk opens that child
// without listing the directory: Claude's <uuid>/ session directories, whose
// subagents/ is all that holds transcripts, and Gemini's and llxprt's project
// directories, whose chats/ is (half the directories of those stores). onlyChild
// must agree with SkipDir and Classify: in dir, every name but child is skipped
// if a directory and is no unit (FuzzOnlyChildAgrees).
type onlyChildLayout interface {
	onlyChild(dir string) (child string, only bool)
}

// onlyChildOf is l's onlyChild, if it has one.
func onlyChildOf(l Layout, dir string) (string, bool) {
	if oc, ok := l.(onlyChildLayout); ok {
		return oc.onlyChild(dir)
	}
	return "", false
}

// prober is one Unchanged walk.
type prober struct {
	ix    *Indexer
	gen   uint16 // marks the units found (unit.probed)
	found int    // distinct known units found, each unchanged

	seenEmpty map[string]bool // documents found to hold no session

	// marks, when not nil, holds the units found instead of unit.probed: a
	// part of a split walk, which others run at once (splitWalk).
	marks map[*unit]struct{}

	rel  []byte   // rawDir: the path of the entry at hand, relative to the root
	bufs [][]byte // rawDir: a listing buffer per depth
}

// dir probes the directory at path (rel to the root); false means a change.
func (p *prober) dir(path, rel string) bool {
	root, err := os.OpenRoot(path)
	if err != nil {
		// A root that does not exist holds nothing: unchanged if nothing was known.
		return rel == "." && errors.Is(err, fs.ErrNotExist) && p.ix.units.len() == 0
	}
	defer root.Close()
	f, err := root.Open(".")
	if err != nil {
		return false
	}
	ents, err := f.ReadDir(-1)
	f.Close()
	if err != nil {
		return false
	}
	for _, d := range ents {
		name := d.Name()
		r := name
		if rel != "." {
			r = rel + "/" + name
		}
		typ := d.Type()
		switch {
		case typ&fs.ModeSymlink != 0:
			// never followed
		case typ.IsDir():
			if p.ix.layout.SkipDir(r) {
				if urel, kind := p.ix.layout.Classify(r); kind != UnitNone && !p.unit(urel, kind, nil) {
					return false
				}
				continue
			}
			if !p.dir(path+"/"+name, r) {
				return false
			}
		case name == CatalogName || strings.HasPrefix(name, TempPrefix):
			// a native index, or a writer's temp file
		default:
			// A known unit's own file needs no classifying: the catalogs hold it.
			if u := p.ix.units.get(r); u != nil {
				if !p.unit(r, u.kind, d) {
					return false
				}
				continue
			}
			urel, kind := p.ix.layout.Classify(r)
			if kind != UnitNone && !p.unit(urel, kind, d) {
				return false
			}
		}
	}
	return true
}

// noSessions reports whether a document unit the catalogs do not know holds no
// session (Gemini's legacy .json beside its .jsonl) or fails to parse (a refresh
// reports that and changes nothing). Such a document is read, as a refresh would.
func (p *prober) noSessions(urel string) bool {
	dl, ok := p.ix.layout.(DocumentLayout)
	if !ok || p.seenEmpty[urel] {
		return ok
	}
	path := p.ix.unitPath(urel)
	fi, err := os.Lstat(path)
	if err != nil || !fi.Mode().IsRegular() {
		return false
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return false
	}
	ss, err := dl.ParseDocument(FileFacts{Root: p.ix.rootDir, Unit: urel, Path: path, Size: int64(len(data)), Mtime: fi.ModTime()}, data)
	if err == nil && len(ss) > 0 {
		return false
	}
	if p.seenEmpty == nil {
		p.seenEmpty = map[string]bool{}
	}
	p.seenEmpty[urel] = true
	return true
}

// unit checks one unit found by the walk; d is the entry of its own file when
// the walk found it by that file (urel is the path walked), else nil.
func (p *prober) unit(urel string, kind UnitKind, d fs.DirEntry) bool {
	ix := p.ix
	u := ix.units.get(urel)
	if u == nil {
		// Not in the catalogs: new, unless it is a document that holds no
		// session (a refresh reads it every time and changes nothing).
		return kind == UnitDocument && p.noSessions(urel)
	}
	if seen, ok := p.visit(u); seen || !ok {
		return ok
	}
	if d == nil || !strings.HasSuffix(urel, "/"+d.Name()) && urel != d.Name() {
		// Found through another path (a file it depends on): checked by its own.
		return ix.unitUnchangedLocked(urel, kind)
	}
	// A directory read through an os.Root has stat'ed each entry relative to
	// the directory's descriptor already: Info costs nothing more.
	fi, err := d.Info()
	if err != nil || !fi.Mode().IsRegular() {
		return false
	}
	dev, ino := statIdentity(fi)
	t := &u.tail
	if dev != t.Dev || ino != t.Ino || fi.Size() != t.Size || fi.ModTime().UnixNano() != t.Mtime {
		return false
	}
	return tailUnchanged(ix, u, urel, kind, fi.Size())
}

// visit marks a known unit found by this walk. seen: it was found before (a
// unit can be found through several paths), ok then true; a unit without
// sessions is not seen and not ok (a refresh would change it).
func (p *prober) visit(u *unit) (seen, ok bool) {
	if !u.hasSessions() {
		return false, false
	}
	if p.marks != nil {
		if _, seen := p.marks[u]; seen {
			return true, true
		}
		p.marks[u] = struct{}{}
		p.found++
		return false, true
	}
	if u.probed == p.gen {
		return true, true
	}
	u.probed = p.gen
	p.found++
	return false, true
}

// tailUnchanged is the rest of the unchanged test once the stat matched.
func tailUnchanged(ix *Indexer, u *unit, urel string, kind UnitKind, size int64) bool {
	switch kind {
	case UnitLines:
		// Restored with its state (LoadLite leaves the states unread: their
		// presence is all Unchanged needs).
		return (u.hasState() || ix.lite) && size >= u.tail.Offset
	case UnitDocument:
		if ds, ok := ix.layout.(DependencyStamper); ok {
			return ds.DepStamp(ix.rootDir, urel) == u.tail.Dep()
		}
		return true
	}
	return false
}

// unitUnchangedLocked reports whether a unit's file is, by its stat (and its
// dependency stamp), what the unit was built from; the same test the reads make
// before they skip a file.
func (ix *Indexer) unitUnchangedLocked(urel string, kind UnitKind) bool {
	u := ix.units.get(urel)
	if u == nil || !u.hasSessions() {
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
	return tailUnchanged(ix, u, urel, kind, fi.Size())
}
