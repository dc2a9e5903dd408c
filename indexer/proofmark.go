package indexer

import (
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"time"
)

// A proof mark records when a whole source was last proven up to date: the
// time a LoadLite and Unchanged that answered true began. From then on, a
// directory of the store whose mtime is older than the mark has the entries
// it had then, all of them in the catalogs then (Unchanged finds no unit the
// catalogs lack, and none without sessions). ProveProject relies on it for a
// layout whose project's sessions are spread over the tree (spreadLayout),
// where no directory of the project's own says that a new session appeared.
//
// The file is <state_dir>/proofs/<source>, {"version":1,"source":S,
// "walkStart":<unix ns>}, written atomically by the holder of the writer lock
// (list and show without a daemon).

// proofSlack is how much older than the mark a directory's mtime must be: a
// file system stamps mtimes from a coarse clock that may lag the one the mark
// is read from by a tick (milliseconds); a second covers it with room.
const proofSlack = time.Second

type proofMark struct {
	Version   int    `json:"version"`
	Source    string `json:"source"`
	WalkStart int64  `json:"walkStart"`
}

func proofPath(stateDir, source string) string {
	return filepath.Join(stateDir, "proofs", source)
}

// MarkProven records that the source was proven up to date by a walk that
// began at start (LoadLite, then Unchanged answering true). Only layouts that
// need the mark (spreadLayout) write one; the caller holds the writer lock.
func (ix *Indexer) MarkProven(start time.Time) error {
	if _, ok := ix.layout.(spreadLayout); !ok {
		return nil
	}
	data, err := json.Marshal(proofMark{Version: 1, Source: ix.opt.Source, WalkStart: start.UnixNano()})
	if err != nil {
		return err
	}
	return WriteFileAtomic(proofPath(ix.opt.StateDir, ix.opt.Source), append(data, '\n'))
}

// readProofMark reads the source's proof mark; ok false when there is none
// that reads.
func readProofMark(stateDir, source string) (walkStart int64, ok bool) {
	data, err := readCappedRegular(proofPath(stateDir, source), 4096)
	if err != nil {
		return 0, false
	}
	var m proofMark
	if json.Unmarshal(data, &m) != nil || m.Version != 1 || m.Source != source || m.WalkStart <= 0 {
		return 0, false
	}
	return m.WalkStart, true
}

// spreadUnchangedLocked is ProveProject's proof for a spreadLayout: every
// directory of the tree down to the units' depth, the source's catalog
// directory and the project's catalog directories are older than the proof
// mark, and each of the project's known units is unchanged by its stat (p
// counts those found).
func (ix *Indexer) spreadUnchangedLocked(sl spreadLayout, projects []string, p *prober) bool {
	start, ok := readProofMark(ix.opt.StateDir, ix.opt.Source)
	if !ok {
		return false
	}
	limit := start - int64(proofSlack)
	catDir := CatalogDir(ix.opt.StateDir, ix.opt.Source)
	dirs := []string{catDir}
	for _, pr := range projects {
		key := ProjectKey(pr)
		dirs = append(dirs, filepath.Join(catDir, key), filepath.Join(catDir, collisionKey(key, pr)))
	}
	for i, d := range dirs {
		fi, err := os.Lstat(d)
		if i > 0 && errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil || fi.ModTime().UnixNano() >= limit {
			return false
		}
	}
	if !ix.dirsOlderLocked(ix.rootDir, ".", 0, sl.spreadDepth(), limit) {
		return false
	}
	for rel, u := range ix.units {
		if _, ok := p.visit(u); !ok || !ix.unitUnchangedLocked(rel, u.kind) {
			return false
		}
	}
	return true
}

// dirsOlderLocked reports whether the directory at path (rel to the root, at
// depth) and the directories below it that the walk would enter, down to
// depth last, all have an mtime before limit. Only directories above last are
// listed; no file is stat'ed.
func (ix *Indexer) dirsOlderLocked(path, rel string, depth, last int, limit int64) bool {
	f, err := os.Open(path)
	if err != nil {
		// A root that is not there holds nothing (nor did it, if the catalogs
		// hold nothing: the known units are stat'ed by the caller).
		return depth == 0 && errors.Is(err, fs.ErrNotExist)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil || !fi.IsDir() || fi.ModTime().UnixNano() >= limit {
		return false
	}
	if depth >= last {
		return true
	}
	ents, err := f.ReadDir(-1)
	if err != nil {
		return false
	}
	for _, d := range ents {
		if !d.IsDir() {
			continue // symlinks are never followed; files above last are no units
		}
		r := d.Name()
		if rel != "." {
			r = rel + "/" + r
		}
		if ix.layout.SkipDir(r) {
			continue
		}
		if depth+1 >= last {
			// Not listed: its stat (lstat, from the listing) is enough.
			fi, err := d.Info()
			if err != nil || fi.ModTime().UnixNano() >= limit {
				return false
			}
			continue
		}
		if !ix.dirsOlderLocked(path+string(filepath.Separator)+d.Name(), r, depth+1, last, limit) {
			return false
		}
	}
	return true
}
