package indexer

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// Load restores the indexer's state from the catalogs in the state directory, so a
// restart resumes every file at its stored offset. Unreadable catalogs are skipped
// (and rebuilt by the next Reconcile).
func (ix *Indexer) Load() error {
	ix.mu.Lock()
	defer ix.mu.Unlock()
	if w := ix.opt.Writer; w != nil && !ix.opt.Check {
		// Load under the lock: no rewrite lands half-way, and the stamps read
		// here match the catalogs read.
		if err := w.Lock(context.Background()); err != nil {
			return err
		}
		defer w.Unlock()
		gens := w.generations()
		ix.gen, ix.genKnown = stamp{all: gens[allSources], source: gens[ix.opt.Source]}, true
	}
	if !ix.opt.Check {
		ix.adoptLegacyLocked()
	}
	return ix.loadLocked()
}

// LoadLite is Load without the accumulators' states: enough for Unchanged and
// Entries (list and show without a daemon, when nothing changed), at a fraction
// of the reading. An indexer loaded so refuses to write: every later pass that
// could (Reconcile, Refresh, Update, Verify, Retry) returns ErrLite.
func (ix *Indexer) LoadLite() error {
	ix.mu.Lock()
	defer ix.mu.Unlock()
	ix.lite = true
	return ix.loadLocked()
}

// ErrLite is returned by a pass over an indexer loaded with LoadLite.
var ErrLite = errors.New("indexer loaded without resume states: it cannot write")

func (ix *Indexer) loadLocked() error {
	dir := CatalogDir(ix.opt.StateDir, ix.opt.Source)
	entries, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("load catalogs: %w", err)
	}
	var lr *liteReader
	if ix.lite {
		lr = &liteReader{}
	}
	type loaded struct {
		c   *Catalog
		key string
	}
	var cats []loaded
	n := 0
	for _, e := range entries {
		if !e.IsDir() {
			continue
		}
		path := filepath.Join(dir, e.Name(), CatalogName)
		var c *Catalog
		var data, resume []byte
		if lr != nil {
			// Nothing is written after LoadLite: no output to record.
			c, err = lr.read(path)
		} else {
			c, data, resume, err = readCatalogFiles(path, true)
		}
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil || c.Source != ix.opt.Source || c.Layout != ix.layout.Name() {
			ix.log.Warn("catalog unreadable, rebuilding", "file", path, "err", err)
			continue
		}
		if lr == nil {
			ix.recordOutput(path, outputHash(data))
			if resume != nil {
				ix.recordOutput(resumePath(path), outputHash(resume))
			}
		}
		cats = append(cats, loaded{c, e.Name()})
		n += len(c.Sessions)
	}
	ix.units.reserve(ix.units.len() + n) // a table sized once
	var slab *unitSlab
	if lr != nil {
		// A listing's units live for milliseconds: allocated together.
		slab = newUnitSlab(n)
		ix.restored = make([]*Session, 0, n)
	}
	var from map[*unit]string // the catalog key each unit's sessions came from ("": several)
	if lr == nil {
		from = make(map[*unit]string, n)
	}
	for _, l := range cats {
		ix.keys[l.c.Project] = l.key
		for _, s := range l.c.Sessions {
			u := ix.restoreLocked(s, l.key, slab)
			if u != nil && from != nil {
				if k, ok := from[u]; ok && k != l.key {
					from[u] = ""
				} else {
					from[u] = l.key
				}
			}
		}
	}
	ix.rels = relArena{} // its last block stays with the units cut from it
	ix.setKeysLocked(ix.keys)
	// The sessions just read are what their catalog holds: parked again.
	for u, k := range from {
		ix.parkSessionsLocked(u, k)
	}
	return nil
}

// unitSlab holds the units (and their first session slots) that restoreLocked
// takes in turn, for LoadLite.
type unitSlab struct {
	units    []unit
	lives    []unitLive
	sessions []*Session
}

// newUnitSlab is a slab for n units.
func newUnitSlab(n int) *unitSlab {
	return &unitSlab{units: make([]unit, n), lives: make([]unitLive, n), sessions: make([]*Session, n)}
}

// restoreLocked adds a catalog session to its unit, made if new (from slab
// when one is given); it returns the unit, nil when the session has none.
func (ix *Indexer) restoreLocked(s *Session, key string, slab *unitSlab) *unit {
	if s.Tail == nil {
		ix.unrestored++
		return nil
	}
	rel, ok := ix.relOf(s.File)
	if !ok {
		ix.unrestored++
		return nil
	}
	urel, kind := ix.layout.Classify(rel)
	if kind == UnitNone {
		ix.unrestored++
		return nil
	}
	u := ix.units.get(urel)
	if u != nil && u.skey != 0 {
		// Already restored from another catalog and parked there: the unit
		// keeps its sessions in memory.
		ix.unparkKeysLocked(map[string]bool{ix.skeyOf(u): true})
	}
	if u == nil {
		if slab != nil && len(slab.units) > 0 {
			u, slab.units = &slab.units[0], slab.units[1:]
			u.live, slab.lives = &slab.lives[0], slab.lives[1:]
			u.live.sessions, slab.sessions = slab.sessions[:0:1], slab.sessions[1:]
		} else {
			u = &unit{}
			// A part of the session's file name: copied, as the unit
			// outlives the session (parked) and the rest of the name.
			urel = ix.rels.clone(urel)
		}
		u.rel, u.kind = urel, kind
		u.tail.set(s.Tail)
		ix.units.put(u)
	}
	if kind == UnitLines && !ix.lite {
		if _, ok := ix.layout.(LineLayout); !ok {
			return nil
		}
		// The accumulator is made and its state decoded when first needed (an
		// append, a native index): a restart over 100k unchanged sessions makes none.
		u.setState(s.Tail.State)
		u.parked = true
		u.setSkipped(s.SkippedLines)
	}
	s.Dir = ix.layout.ProjectDir(urel)
	u.setSessions(append(u.sessions(), s))
	if slab != nil {
		ix.restored = append(ix.restored, s)
	}
	ix.lazyLocked(u, key, true)
	return u
}

// readMtime is the mtime to remember with a file read to end, stat'ed as fi
// before the read. When the read went past fi's size (an append landed
// meanwhile), fi's mtime is older than the bytes read: remembered with the
// larger size, the next look would see the same size with another mtime and
// take the file for rewritten, reading it all again. So the file is stat'ed
// again, and its mtime taken when its size is what was read.
func readMtime(f *os.File, fi fs.FileInfo, end int64) int64 {
	if end > fi.Size() {
		if now, err := f.Stat(); err == nil && now.Size() == end {
			return now.ModTime().UnixNano()
		}
	}
	return fi.ModTime().UnixNano()
}

// relOf maps an absolute path to a slash-separated path relative to rootDir.
func (ix *Indexer) relOf(path string) (string, bool) {
	// The common case, a clean path below the root (every walked path and every
	// catalog's file), without filepath.Rel's allocations.
	if rest, ok := strings.CutPrefix(path, ix.rootDir); ok && len(rest) > 1 && rest[0] == filepath.Separator {
		if rest = rest[1:]; isClean(rest) && rest != ".." && !strings.HasPrefix(rest, ".."+string(filepath.Separator)) {
			return filepath.ToSlash(rest), true
		}
	}
	rel, err := filepath.Rel(ix.rootDir, path)
	if err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
		return "", false
	}
	return filepath.ToSlash(rel), true
}
