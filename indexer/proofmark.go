package indexer

import (
	"encoding/json"
	"errors"
	"hash/fnv"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"time"
)

// A proof mark records a whole source proven up to date: the time a LoadLite
// and Unchanged that answered true began (walkStart), and a stamp of the
// directories of the store down to the units' depth (their names and status
// change times, dirsStampLocked), each older than walkStart by proofSlack. While
// the stamp is the same, no directory has had an entry added, removed or
// renamed since the proof, so each has the entries it had then, all of them in
// the catalogs then (Unchanged finds no unit the catalogs lack, and none without
// sessions). ProveProject relies on it for a layout whose project's sessions
// are spread over the tree (spreadLayout), where no directory of the project's
// own says that a new session appeared.
//
// The stamp compares change times for equality, not against walkStart: a
// directory changed after the mark has another change time also when the clock
// was stepped back since (a mark of a clock that ran ahead is newer than the
// change), and a change time, unlike an mtime, is not set back by a tool that
// keeps the source's mtimes (rsync -a, cp -a, tar x).
//
// The file is <state_dir>/proofs/<source>, {"version":2,"source":S,
// "walkStart":<unix ns>,"dirs":"<stamp>"}, written atomically by the holder of
// the writer lock (list and show without a daemon).

// proofSlack is how much older than the mark a directory's mtime must be: a
// file system stamps mtimes from a coarse clock that may lag the one the mark
// is read from by a tick (milliseconds); a second covers it with room.
const proofSlack = time.Second

type proofMark struct {
	Version   int    `json:"version"`
	Source    string `json:"source"`
	WalkStart int64  `json:"walkStart"`
	Dirs      string `json:"dirs"`
}

const proofMarkVersion = 2

func proofPath(stateDir, source string) string {
	return filepath.Join(stateDir, "proofs", source)
}

// MarkProven records that the source was proven up to date by a walk that
// began at start (LoadLite, then Unchanged answering true). Only layouts that
// need the mark (spreadLayout) write one; the caller holds the writer lock. A
// directory changed within proofSlack of start (or after it) may have changed
// after the walk listed it: then no mark is written, and the next whole proof
// tries again.
func (ix *Indexer) MarkProven(start time.Time) error {
	sl, ok := ix.layout.(spreadLayout)
	if !ok {
		return nil
	}
	ix.mu.Lock()
	stamp, newest, ok := ix.dirsStampLocked(sl.spreadDepth())
	ix.mu.Unlock()
	if !ok || newest >= start.UnixNano()-int64(proofSlack) {
		return nil
	}
	data, err := json.Marshal(proofMark{Version: proofMarkVersion, Source: ix.opt.Source, WalkStart: start.UnixNano(), Dirs: stamp})
	if err != nil {
		return err
	}
	return WriteFileAtomic(proofPath(ix.opt.StateDir, ix.opt.Source), append(data, '\n'))
}

// readProofMark reads the source's proof mark; ok false when there is none
// that reads.
func readProofMark(stateDir, source string) (walkStart int64, stamp string, ok bool) {
	data, err := readCappedRegular(proofPath(stateDir, source), 4096)
	if err != nil {
		return 0, "", false
	}
	var m proofMark
	if json.Unmarshal(data, &m) != nil || m.Version != proofMarkVersion || m.Source != source || m.WalkStart <= 0 || m.Dirs == "" {
		return 0, "", false
	}
	return m.WalkStart, m.Dirs, true
}

// spreadUnchangedLocked is ProveProject's proof for a spreadLayout: the
// directories of the tree down to the units' depth are as the proof mark
// stamped them, the source's catalog directory and the project's catalog
// directories are older than the mark (by their change times), and each of the
// project's known units is unchanged by its stat (p counts those found).
func (ix *Indexer) spreadUnchangedLocked(sl spreadLayout, projects []string, p *prober) bool {
	start, want, ok := readProofMark(ix.opt.StateDir, ix.opt.Source)
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
		if err != nil || max(fi.ModTime().UnixNano(), changeTime(fi)) >= limit {
			return false
		}
	}
	if stamp, _, ok := ix.dirsStampLocked(sl.spreadDepth()); !ok || stamp != want {
		return false
	}
	for u := range ix.units.all() {
		if _, ok := p.visit(u); !ok || !ix.unitUnchangedLocked(u.rel, u.kind) {
			return false
		}
	}
	return true
}

// dirsStampLocked stamps the root and the directories below it that the walk
// would enter, down to depth last: a hash of each one's path and change time,
// in the walk's order, and the newest change time. Only directories above last
// are listed; no file is stat'ed. ok false: a directory that cannot be read.
func (ix *Indexer) dirsStampLocked(last int) (stamp string, newest int64, ok bool) {
	h := fnv.New64a()
	var b []byte
	add := func(rel string, fi fs.FileInfo) {
		c := changeTime(fi)
		newest = max(newest, c, fi.ModTime().UnixNano())
		b = append(append(b[:0], rel...), 0)
		b = strconv.AppendInt(b, c, 10)
		b = append(b, 0)
		b = strconv.AppendInt(b, fi.ModTime().UnixNano(), 10)
		h.Write(append(b, '\n'))
	}
	var walk func(path, rel string, depth int) bool
	walk = func(path, rel string, depth int) bool {
		f, err := os.Open(path)
		if err != nil {
			if depth == 0 && errors.Is(err, fs.ErrNotExist) {
				// A root that is not there holds nothing (nor did it, if
				// the catalogs hold nothing: the known units are stat'ed by
				// the caller).
				h.Write([]byte("\x00absent\n"))
				return true
			}
			return false
		}
		defer f.Close()
		fi, err := f.Stat()
		if err != nil || !fi.IsDir() {
			return false
		}
		add(rel, fi)
		if depth >= last {
			return true
		}
		ents, err := f.ReadDir(-1) // sorted by name
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
				if err != nil {
					return false
				}
				add(r, fi)
				continue
			}
			if !walk(path+string(filepath.Separator)+d.Name(), r, depth+1) {
				return false
			}
		}
		return true
	}
	if !walk(ix.rootDir, ".", 0) {
		return "", 0, false
	}
	return strconv.FormatUint(h.Sum64(), 16), newest, true
}
