package indexer

import (
	"bytes"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"syscall"
)

// ProveProject is LoadLite and Unchanged for one project: it reads the
// catalogs of projects (the candidates of one directory, ProjectCandidates)
// and proves them up to date by looking only where that project's rows can
// change, and returns their sessions. list and show without a daemon call it
// before anything else, so that listing one project costs O(its sessions),
// not O(the store's).
//
// Where a layout files a project's sessions in directories of their own
// (wave, claude, gemini, llxprt: projectDirLayout), those directories are
// walked as Unchanged walks the root: the directories of the sessions the
// catalogs hold and the ones the layout names for the project (where its new
// sessions would appear); any file there the catalogs do not hold is a change.
// Where a project's sessions are spread over the tree (codex's date
// directories: spreadLayout), the project's known files are stat'ed, and the
// tree's directories (not their files) are listed and stat'ed: none may have
// changed (an entry added, removed or renamed) since the last proof of the
// whole source (its proof mark, MarkProven), nor may the source's catalog
// directory or the project's own. A layout whose sessions have no project
// (mogzi, hyperyolo) has nothing in scope and is not looked at.
//
// ok false means a change or any doubt (a catalog that does not read, a layout
// without either property, a directory that cannot be listed, a file of
// another project in this project's directory): the caller then proves the
// whole source (ProveLean, on a fresh indexer: this one is spent).
// ProveProject writes nothing.
//
// What it cannot see, by design, is what happens outside the project's
// directories: a session of another directory whose own project became this
// one (an append that changed its cwd), or a new session of this project
// filed in another project's directory. (In Codex's tree, where every
// directory is outside the project's, the sessions of no project yet, whose
// first line was not whole when read, are stat'ed with the project's: an
// append can make them the project's.) Those rows appear at the next full
// refresh (a list of that other project, list --all, reindex) or at once with
// a daemon, as other projects' catalogs do.
func (ix *Indexer) ProveProject(projects []string) (entries []Entry, ok bool) {
	ix.mu.Lock()
	defer ix.mu.Unlock()
	if len(projects) == 0 || ix.rootPending || ix.rootRel != "" || ix.units.len() > 0 {
		return nil, false
	}
	if _, ok := ix.layout.(projectlessLayout); ok {
		// Its sessions belong to no project ("") and a directory's candidates
		// are absolute paths: none of its rows is in scope.
		return nil, !slices.Contains(projects, "")
	}
	sl, spread := ix.layout.(spreadLayout)
	namer, byDir := ix.layout.(projectDirLayout)
	if !spread && !byDir {
		return nil, false
	}
	ix.lite = true
	want := wantProjects(projects)
	look := projects
	if spread && !want[""] {
		// A session of no project yet (its first line, which names the
		// project, not yet whole when it was read) becomes this project's by
		// an append, in a directory that does not change: its file is stat'ed
		// as the project's are, and it is not listed.
		look = append(slices.Clip(projects), "")
	}
	files, err := catalogPaths(ix.opt.StateDir, []string{ix.opt.Source}, look)
	if err != nil {
		return nil, false
	}
	var lr liteReader
	var cats []*Catalog
	n := 0
	for _, f := range files {
		c, err := lr.read(f)
		if errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR) {
			continue
		}
		if err != nil || c.Source != ix.opt.Source || c.Layout != ix.layout.Name() {
			return nil, false // a refresh would rebuild it
		}
		if !want[c.Project] && (c.Project != "" || len(look) == len(projects)) {
			continue // another project's, under the colliding key
		}
		cats = append(cats, c)
		n += len(c.Sessions)
	}
	slab := newUnitSlab(n)
	ix.restored = make([]*Session, 0, n)
	for _, c := range cats {
		for _, s := range c.Sessions {
			ix.restoreLocked(s, "", slab)
		}
	}
	if ix.unrestored > 0 {
		return nil, false
	}
	p := prober{ix: ix, gen: ix.nextProbeGenLocked()}
	if spread {
		if !ix.spreadUnchangedLocked(sl, look, &p) {
			return nil, false
		}
	} else {
		dirs := map[string]bool{}
		for u := range ix.units.all() {
			dirs[ix.layout.ProjectDir(u.rel)] = true
		}
		for _, pr := range projects {
			for _, d := range namer.projectDirNames(ix.rootDir, pr) {
				dirs[d] = true
			}
		}
		sorted := make([]string, 0, len(dirs))
		for d := range dirs {
			if d == "" || d == "." || !isClean(d) || ix.layout.SkipDir(d) {
				return nil, false // not a project directory walked from the root
			}
			sorted = append(sorted, d)
		}
		slices.Sort(sorted)
		for _, d := range sorted {
			if !p.walkSub(d) {
				return nil, false
			}
		}
	}
	if p.found != ix.units.len() {
		return nil, false // a known session's file is gone
	}
	entries = make([]Entry, 0, len(ix.restored))
	for _, s := range ix.restored {
		if want[s.Project] {
			entries = append(entries, Entry{Session: s, Source: ix.opt.Source, Layout: ix.layout.Name(), Project: s.Project})
		}
	}
	return entries, true
}

// projectDirLayout is a layout that files a project's sessions in project
// directories of their own (ProjectDir), whose names it can derive from the
// project: projectDirNames names those directories (relative to root; they
// need not exist) where a new session of project would appear.
type projectDirLayout interface {
	projectDirNames(root, project string) []string
}

// spreadLayout is a layout without project directories (ProjectDir is always
// ""), whose sessions of one project may be anywhere in the tree, a tree of
// fixed depth: spreadDepth is the depth of the directories that hold the
// units (codex: YYYY/MM/DD is 3), which hold no directory that leads to one.
type spreadLayout interface {
	spreadDepth() int
}

// projectlessLayout is a layout whose sessions belong to no project (mogzi,
// hyperyolo): Project is always "".
type projectlessLayout interface {
	projectless()
}

func (waveLayout) projectDirNames(_, project string) []string {
	return []string{EncodeProject(project)}
}

func (claudeLayout) projectDirNames(_, project string) []string {
	return []string{SanitizeClaudePath(project)}
}

// Gemini: the legacy directory named by the path's sha256, and the slugs
// projects.json gives the path. The registry is parsed (and each of its paths
// hashed, for the cache) only when it may name the path: it holds the path's
// JSON string, or escapes that could spell it otherwise.
func (geminiLayout) projectDirNames(root, project string) []string {
	dirs := []string{sha256Hex(project)}
	file := filepath.Join(filepath.Dir(root), "projects.json")
	data, err := readCappedRegular(file, maxRegistryBytes)
	if err != nil || bytes.IndexByte(data, '\\') < 0 && !bytes.Contains(data, appendJSONString(nil, project)) {
		return dirs
	}
	for slug, p := range geminiRegistries.dirsOf(file) {
		if p == project {
			dirs = append(dirs, slug)
		}
	}
	return dirs
}

func (llxprtLayout) projectDirNames(_, project string) []string {
	return []string{sha256Hex(project)}
}

func (codexLayout) spreadDepth() int { return 3 }
func (mogziLayout) projectless()     {}
func (hyperyoloLayout) projectless() {}

// dirSub is walkSub through os.Root (prober.dir).
func (p *prober) dirSub(rel string) bool {
	path := filepath.Join(p.ix.rootDir, filepath.FromSlash(rel))
	fi, err := os.Lstat(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return true
	case err != nil:
		return false
	case !fi.IsDir():
		return true // a symlink is never followed
	}
	return p.dir(path, rel)
}

// ProveLean is LoadLite and Unchanged on a fresh indexer, keeping of each
// catalog session only what Unchanged compares (its unit and the unit's
// tail), not the session: list --all without a daemon proves every source
// this way and then lists the catalogs as a daemon-present list does
// (VisitCatalogs), so no source's sessions are all in memory at once. The
// indexer is spent after it (it holds no session: Entries is empty).
func (ix *Indexer) ProveLean() bool {
	ix.mu.Lock()
	defer ix.mu.Unlock()
	if ix.units.len() > 0 || ix.rootPending {
		return false
	}
	ix.lite = true
	dir := CatalogDir(ix.opt.StateDir, ix.opt.Source)
	ents, err := os.ReadDir(dir)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return false
	}
	var lr liteReader
	for _, e := range ents {
		if !e.IsDir() {
			continue
		}
		key := e.Name()
		add := func(file string, t *Tail) bool {
			var ut unitTail
			ut.set(t) // without the state and the own project
			return ix.leanAddLocked(key, file, &ut)
		}
		path := filepath.Join(dir, key, CatalogName)
		ok, stopped, err := lr.unitTails(path, ix.opt.Source, ix.layout.Name(), add)
		switch {
		case errors.Is(err, fs.ErrNotExist):
			continue
		case err != nil || stopped:
			return false
		case ok:
			continue
		}
		// Not as the writer leaves it: read in full (a catalog of an older
		// version holds its tails), with the units of what was read before.
		c, err := lr.read(path)
		if err != nil || c.Source != ix.opt.Source || c.Layout != ix.layout.Name() {
			return false // a refresh rebuilds it
		}
		for _, s := range c.Sessions {
			if s.Tail == nil || !add(s.File, s.Tail) {
				return false
			}
		}
	}
	ok := ix.unchangedLocked()
	ix.spendLocked()
	return ok
}

// spendLocked drops the units of a lean proof (ProveLean, ProveVisit): the
// indexer is spent, and a caller that keeps it (to mark it proven) keeps no
// session's unit with it.
func (ix *Indexer) spendLocked() {
	ix.units.clear()
}

// leanAddLocked restores, for ProveLean, a unit of catalog key from one
// session's file and tail (unitTail.set), unless a session before it did;
// false: the file is not one of the source's units (a refresh would drop the
// session).
func (ix *Indexer) leanAddLocked(key, file string, t *unitTail) bool {
	rel, ok := ix.relOf(file)
	if !ok {
		return false
	}
	urel, kind := ix.layout.Classify(rel)
	if kind == UnitNone {
		return false
	}
	ix.leanUnitLocked(key, urel, kind, t)
	return true
}

// leanUnitLocked is leanAddLocked once the unit is known (relOf, Classify):
// urel must be memory of its own (no buffer of a reader).
func (ix *Indexer) leanUnitLocked(key, urel string, kind UnitKind, t *unitTail) {
	if ix.units.get(urel) != nil {
		return
	}
	// Its sessions are in catalog key (skey), as a parked unit's are: the
	// unit has sessions, none in memory.
	u := &unit{rel: urel, kind: kind, tail: *t}
	ix.setSkey(u, key)
	ix.units.put(u)
}

// unitTails reads the catalog at path for ProveLean without decoding its
// sessions: each session line is matched, at its own position, to its resume
// entry (the checksum of the line, and its id and file members as the entry
// writes them), and fn is given the entry's file and tail. ok false, with
// nothing given to fn or only part of the catalog: anything else (a catalog
// and resume file out of step, an older or hand-edited catalog, another
// source's), which the caller reads the usual way. fn returns false to stop.
func (r *liteReader) unitTails(path, source, layout string, fn func(file string, t *Tail) bool) (ok, stopped bool, err error) {
	if r.cat, err = readFileInto(r.cat, path); err != nil {
		return false, false, err
	}
	head, rest, found := bytes.Cut(r.cat, []byte("\n"))
	if !found || !bytes.HasSuffix(head, []byte(`"sessions":[`)) {
		return false, false, nil
	}
	var c Catalog
	if !decodeCatalogHead(head, &c) || c.Version != CatalogVersion ||
		c.Generator != "sessionwatch" || c.Source != source || c.Layout != layout {
		return false, false, nil
	}
	res, err := readResumeTails(resumePath(path), r.res)
	if res != nil {
		r.res = res
	}
	if err != nil {
		return false, false, nil
	}
	entries, ok := decodeResume(res, &c, false)
	if !ok {
		return false, false, nil
	}
	// has reports whether line holds the member key with the JSON string v.
	has := func(line []byte, key string, v []byte) bool {
		r.key = append(append(r.key[:0], key...), v...)
		return bytes.Contains(line, r.key)
	}
	more := false
	for i := 0; len(rest) > 0; i++ {
		var line []byte
		line, rest, _ = bytes.Cut(rest, []byte("\n"))
		if string(line) == "]}" {
			return !more && len(bytes.TrimSpace(rest)) == 0, false, nil
		}
		if i > 0 && !more {
			return false, false, nil
		}
		line, more = bytes.CutSuffix(line, []byte(","))
		if i >= len(entries) {
			return false, false, nil
		}
		e := &entries[i]
		if e.sum != lineSum(line) || !has(line, `"id":`, e.id) || !has(line, `"file":`, e.file) {
			return false, false, nil
		}
		file, ok := JSONString(e.file)
		if !ok {
			return false, false, nil
		}
		var t Tail
		if !tailLite(e.tail, &t) {
			d, ok := decodeTail(e.tail)
			if !ok {
				return false, false, nil
			}
			t = *d
		}
		if !fn(file, &t) {
			return true, true, nil
		}
	}
	return false, false, nil
}
