package indexer

import (
	"bytes"
	"crypto/sha256"
	"errors"
	"fmt"
	"hash/maphash"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"
)

// The flush: projects resolved for the dirty project directories, then the
// native indexes and catalogs whose content changed written (after the
// consumers are made durable), and the bookkeeping of what was written.

// flushLocked resolves projects for dirty project dirs and writes the catalogs and
// native indexes whose content changed.
func (ix *Indexer) flushLocked() (ferr error) {
	if len(ix.dirtyDirs) == 0 && len(ix.dirtyProjects) == 0 && len(ix.rereads) == 0 {
		return nil
	}
	ix.lastParked = parkedRead{}
	defer func() {
		if !ix.skipPark {
			ix.parkLocked()
		}
	}()
	if ix.verifyFetched {
		defer func() { ix.statePeak = max(ix.statePeak, ix.heldStatesLocked()) }() // before parkLocked
	}
	if trackSessionPeak {
		defer func() { ix.sessionPeak = max(ix.sessionPeak, ix.heldSessionsLocked()) }() // before parkLocked
	}
	ix.unparkDirtyLocked()
	ix.fetchDirtyLocked()
	byDir := map[string][]*unit{}
	for u := range ix.units.all() {
		for _, s := range u.sessions() {
			if us := byDir[s.Dir]; ix.dirtyDirs[s.Dir] && (len(us) == 0 || us[len(us)-1] != u) {
				byDir[s.Dir] = append(us, u)
			}
		}
	}
	var errs []error
	dirSessions := map[string][]*Session{}
	_, native := ix.layout.(NativeIndexer)
	native = native && ix.opt.NativeIndex
	if native {
		ix.fetchDirsLocked(byDir)
	}
	for dir := range ix.dirtyDirs {
		us := byDir[dir]
		sort.Slice(us, func(i, j int) bool { return us[i].rel < us[j].rel })
		for _, u := range us {
			if native {
				ix.decodeStateLocked(u) // native indexes project the accumulators
			}
		}
		fallback := ""
		var ss []*Session
		for _, u := range us {
			for _, s := range u.sessions() {
				if s.Dir != dir {
					continue
				}
				ss = append(ss, s)
				// Sessions lend their project to siblings in the same project
				// directory; without project directories (dir "") there are none.
				if fallback == "" && dir != "" {
					fallback = s.Tail.OwnProject
				}
			}
		}
		if fallback == "" && dir != "" && len(ss) > 0 {
			if r, ok := ix.layout.(ProjectResolver); ok {
				fallback = r.DirProject(ix.rootDir, dir)
			}
		}
		for _, s := range ss {
			p := firstNonEmpty(s.Tail.OwnProject, fallback)
			if p != s.Project {
				ix.dirtyProjects[s.Project] = true
				s.Project = p
			}
			ix.dirtyProjects[p] = true
		}
		dirSessions[dir] = ss
	}
	// Consumers are made durable before any index of this flush is written, so no
	// catalog offset is ever ahead of what they hold. A batched flush renders its
	// outputs meanwhile, and puts them in place once they are (syncbg.go).
	if ix.writes.batch && !ix.opt.Check {
		// What a flush that synced first would have left dirty on a failure.
		dirtyDirs, dirtyProjects := maps.Clone(ix.dirtyDirs), maps.Clone(ix.dirtyProjects)
		ix.startSyncLocked()
		defer func() {
			ix.waitSyncLocked()
			if err := ix.syncErr; err != nil {
				ix.syncErr = nil
				// Nothing of this flush was put in place or removed (a removal
				// skipped is no failed write): all of it is written again.
				maps.Copy(ix.dirtyDirs, dirtyDirs)
				maps.Copy(ix.dirtyProjects, dirtyProjects)
				ferr = fmt.Errorf("sync consumers: %w", err)
			}
		}()
	} else if err := ix.syncConsumersLocked(); err != nil {
		// Nothing of this flush is written: the indexes stay dirty for the next one.
		return fmt.Errorf("sync consumers: %w", err)
	}
	for dir, ss := range dirSessions {
		if err := ix.writeNativeLocked(dir, ss); err != nil {
			errs = append(errs, err)
		}
	}
	clear(ix.dirtyDirs)
	if len(ix.dirtyProjects) > 0 {
		if err := ix.writeCatalogsLocked(); err != nil {
			errs = append(errs, err)
		}
	}
	clear(ix.dirtyProjects)
	if err := ix.commitLocked(); err != nil {
		errs = append(errs, err)
	}
	ix.scheduleRetryLocked()
	return errors.Join(errs...) // a failed background sync's error instead (deferred above)
}

// scheduleRetryLocked marks the outputs whose write failed dirty again, so they
// are retried (after a backoff, by Retry, or at the next change) rather than lost
// until their project changes again.
func (ix *Indexer) scheduleRetryLocked() {
	if len(ix.failed) == 0 {
		ix.backoff = 0
		ix.stats.RetryPending = false
		return
	}
	for _, m := range ix.failed {
		if m.native {
			ix.dirtyDirs[m.dir] = true
		} else {
			ix.dirtyProjects[m.project] = true
		}
	}
	ix.failed = nil
	ix.backoff = min(max(2*ix.backoff, retryMin), retryMax)
	ix.retryAt = time.Now().Add(ix.backoff)
	ix.stats.RetryPending = true
}

// Retry writes again the outputs whose write failed, once their backoff has
// passed (the daemon calls it every second); it returns the flush's errors.
func (ix *Indexer) Retry(now time.Time) error {
	ix.mu.Lock()
	defer ix.mu.Unlock()
	if (!ix.stats.RetryPending || now.Before(ix.retryAt)) && len(ix.rereads) == 0 {
		return nil
	}
	end, err := ix.beginWriteLocked()
	if err != nil {
		return err
	}
	defer end()
	return ix.flushLocked()
}

func (ix *Indexer) writeNativeLocked(dir string, ss []*Session) error {
	ni, ok := ix.layout.(NativeIndexer)
	if !ok || !ix.opt.NativeIndex || dir == "" {
		return nil
	}
	path := filepath.Join(ix.rootDir, filepath.FromSlash(dir), CatalogName)
	if !ix.realDirLocked(dir) {
		// Gone, or a symlink now (its sessions were forgotten): nothing is
		// written or removed through it.
		ix.outputs.del(path)
		return nil
	}
	if len(ss) == 0 {
		if ix.removeOutputLocked(path) {
			ix.stats.NativeWrites++
		}
		return nil
	}
	SortSessions(ss)
	data, err := ni.NativeIndex(ix.writes.buffer(), ix.rootDir, dir, ss)
	if err != nil {
		return fmt.Errorf("render native index %s: %w", path, err)
	}
	wrote, err := ix.writeOutputLocked(path, data, dirtyMark{native: true, dir: dir}, true)
	if wrote {
		ix.stats.NativeWrites++
	}
	return err
}

// writeCatalogsLocked writes the catalog of every dirty project, assigning catalog
// keys: the Wave encoding of the project, made unique with a hash suffix when two
// projects encode alike.
func (ix *Indexer) writeCatalogsLocked() error {
	// The grouping is rebuilt each flush in the maps and slices of the last
	// one (a flush under load rewrote them for every session: a fifth of what
	// the daemon allocated); they are emptied again before returning, so they
	// keep no session alive.
	byProject := ix.byProject
	if byProject == nil {
		byProject = map[string][]*Session{}
		ix.byProject = byProject
	}
	defer func() {
		for p, ss := range byProject {
			clear(ss)
			byProject[p] = ss[:0]
		}
	}()
	projects := ix.projects // every project with sessions, in memory or parked
	if projects == nil {
		projects = map[string]bool{}
		ix.projects = projects
	}
	clear(projects)
	for u := range ix.units.all() {
		for _, s := range u.sessions() {
			projects[s.Project] = true
		}
		if u.skey != 0 {
			projects[ix.parkedProject(u)] = true
		}
	}
	// The keys of the last flush when its projects are the same (a flush
	// under load rebuilt them for every project: a tenth of what it allocated).
	keys, same := ix.keys, ix.keysStillHold(projects)
	if !same {
		keys = catalogKeys(projects, ix.baseKey)
	}
	// A project whose key changed is rewritten, and so is one that now owns
	// a key another project had.
	for p, old := range ix.keys {
		if keys[p] == old {
			continue
		}
		if p2 := ownerOf(keys, old); p2 != "" {
			ix.dirtyProjects[p2] = true
		}
	}
	for p, k := range keys {
		if ix.keys[p] != k {
			ix.dirtyProjects[p] = true
		}
	}
	// The sessions of the projects to render, or whose key changes, back in
	// memory; a project one of whose units lost them is left for the retry,
	// once that unit is read again.
	need := map[string]bool{}
	for u := range ix.units.all() {
		if u.skey != 0 {
			if p := ix.parkedProject(u); ix.dirtyProjects[p] || keys[p] != ix.skeyOf(u) {
				need[ix.skeyOf(u)] = true
			}
		}
	}
	skip := map[string]bool{}
	for _, p := range ix.unparkKeysLocked(need) {
		skip[p] = true
		ix.failed = append(ix.failed, dirtyMark{project: p})
	}
	for u := range ix.units.all() {
		for _, s := range u.sessions() {
			byProject[s.Project] = append(byProject[s.Project], s)
		}
	}
	for p, ss := range byProject {
		if len(ss) == 0 {
			delete(byProject, p)
		}
	}
	ix.fetchForWriteLocked(keys)
	// A project whose key changed, or that vanished, loses its old file unless
	// another project now owns that key (rewritten below).
	for p, old := range ix.keys {
		if keys[p] == old || ownerOf(keys, old) != "" {
			continue
		}
		ix.removeCatalogLocked(filepath.Join(CatalogDir(ix.opt.StateDir, ix.opt.Source), old))
	}
	var errs []error
	for p := range ix.dirtyProjects {
		ss := byProject[p]
		if len(ss) == 0 || skip[p] {
			continue
		}
		c := &Catalog{Version: CatalogVersion, Generator: "sessionwatch", Source: ix.opt.Source, Layout: ix.layout.Name(), Project: p, Sessions: ss}
		data, resume, err := c.AppendEncoded(ix.writes.buffer(), ix.writes.buffer())
		if err != nil {
			errs = append(errs, fmt.Errorf("encode catalog of %q: %w", p, err))
			continue
		}
		path := filepath.Join(CatalogDir(ix.opt.StateDir, ix.opt.Source), keys[p], CatalogName)
		ix.rendered[p] = keys[p]
		// The resume file and the catalog are written side by side; a crash
		// between the two leaves entries whose checksum no longer matches, and
		// their files are read again from the start (resume.go).
		for _, out := range [...]struct {
			path string
			data []byte
		}{{resumePath(path), resume}, {path, data}} {
			wrote, err := ix.writeOutputLocked(out.path, out.data, dirtyMark{project: p}, true)
			if wrote {
				ix.stats.CatalogWrites++
			}
			if err != nil {
				errs = append(errs, err)
			}
		}
	}
	if !same {
		// The keys say which catalogs are on disk: a batched flush whose
		// consumers failed to sync put none in place and removed none, so the
		// next flush compares with the old ones (and removes what they own).
		ix.waitSyncLocked()
		if ix.syncErr == nil {
			ix.setKeysLocked(keys)
		}
	}
	ix.countLocked()
	return errors.Join(errs...)
}

// keysStillHold reports whether ix.keys is what catalogKeys would assign
// projects: the same projects, each keyed by its remembered base key, no two
// alike (so no collision key is involved). A base key forgotten since (a full
// pass resolves symlinks afresh) is no longer remembered: they are recomputed.
func (ix *Indexer) keysStillHold(projects map[string]bool) bool {
	if len(projects) != len(ix.keys) || len(ix.owners) != len(ix.keys) {
		return false
	}
	for p := range projects {
		if b, ok := ix.baseKeys[p]; !ok || ix.keys[p] != b {
			return false
		}
	}
	return true
}

func ownerOf(keys map[string]string, key string) string {
	for p, k := range keys {
		if k == key {
			return p
		}
	}
	return ""
}

// catalogKeys assigns every project (the keys of byProject) its catalog
// directory name (SPEC §1).
func catalogKeys[V any](byProject map[string]V, baseKey func(string) string) map[string]string {
	byBase := map[string][]string{}
	for p := range byProject {
		b := baseKey(p)
		byBase[b] = append(byBase[b], p)
	}
	keys := map[string]string{}
	for b, ps := range byBase {
		sort.Strings(ps)
		keys[ps[0]] = b
		for _, p := range ps[1:] {
			keys[p] = collisionKey(b, p)
		}
	}
	if len(keys) > len(byBase) {
		unshareKeys(keys, byBase)
	}
	return keys
}

// unshareKeys gives a project whose own key is another's collision key (a
// directory named "/p/a-b-<8 hex>" beside "/p/a-b" and "/p/a/b") its own
// collision key instead: the other project has no third place (readers look
// for a project's catalog under those two keys), and the two would share a
// catalog. A key so moved may be yet another project's own: it moves in turn.
// Each project moves at most once (then it holds no key of its own).
func unshareKeys(keys map[string]string, byBase map[string][]string) {
	for range len(keys) {
		owned := make(map[string]bool, len(keys))
		movers := map[string]bool{}
		for _, k := range keys {
			if owned[k] {
				if ps := byBase[k]; len(ps) > 0 && keys[ps[0]] == k {
					movers[ps[0]] = true
				}
			}
			owned[k] = true
		}
		if len(movers) == 0 {
			return
		}
		for p := range movers {
			keys[p] = collisionKey(keys[p], p)
		}
	}
}

// baseKey is ProjectKey, remembered: it resolves symlinks, a few syscalls per
// project that every flush would otherwise repeat for every project.
func (ix *Indexer) baseKey(project string) string {
	k, ok := ix.baseKeys[project]
	if !ok {
		k = ProjectKey(project)
		ix.baseKeys[project] = k
	}
	return k
}

// ProjectKey is the catalog directory name of a project (and its archive
// directory's): never empty, never "." or "..", never holding a separator, so it
// always names a directory of its own inside its parent. An absolute project is
// Wave-encoded, "/" (which encodes to nothing) is "-"; the empty project is "_";
// a relative project (an agent recorded cwd "." or "..") is never resolved
// against our own working directory: it is "_rel-" and a hash of the path.
func ProjectKey(project string) string {
	switch {
	case project == "":
		return "_"
	case !filepath.IsAbs(project):
		sum := sha256.Sum256([]byte(project))
		return fmt.Sprintf("_rel-%x", sum[:6])
	}
	k := EncodeProject(project)
	if k == "" {
		return "-"
	}
	return k
}

// legacyKeyDirs are where versions before the ProjectKey rules above filed the
// catalogs of "/" and "." (the source's catalog directory itself) and of ".."
// (the index directory): adoptLegacyLocked moves them into their own key.
func (ix *Indexer) legacyCatalogs() []string {
	dir := CatalogDir(ix.opt.StateDir, ix.opt.Source)
	return []string{filepath.Join(dir, CatalogName), filepath.Join(filepath.Dir(dir), CatalogName)}
}

// adoptLegacyLocked moves catalogs left in the legacy places into the directory
// of their project's key (atomically, by rename), or removes them when that
// directory already holds a catalog (a newer one). Catalogs of other sources are
// left to their own indexer; a file there that is no catalog at all is ours (the
// name is) and removed.
func (ix *Indexer) adoptLegacyLocked() {
	for _, old := range ix.legacyCatalogs() {
		data, err := os.ReadFile(old)
		if err != nil {
			continue
		}
		c, err := DecodeCatalog(data)
		if err == nil && c.Source != ix.opt.Source {
			continue
		}
		if ix.opt.Check {
			ix.diffs = append(ix.diffs, Difference{Path: old, Change: "remove"})
			continue
		}
		if err == nil && c.Layout == ix.layout.Name() {
			dst := filepath.Join(CatalogDir(ix.opt.StateDir, ix.opt.Source), ProjectKey(c.Project), CatalogName)
			if _, err := os.Lstat(dst); errors.Is(err, fs.ErrNotExist) {
				if err := os.MkdirAll(filepath.Dir(dst), 0o700); err == nil && os.Rename(old, dst) == nil {
					SyncDir(filepath.Dir(dst))
					SyncDir(filepath.Dir(old))
					ix.log.Info("catalog adopted from a legacy place", "from", old, "to", dst)
					continue
				}
			}
		}
		if os.Remove(old) == nil {
			SyncDir(filepath.Dir(old))
			ix.log.Info("legacy catalog removed", "file", old)
		}
	}
}

// sweepCatalogsLocked removes catalog directories that no project owns any more.
func (ix *Indexer) sweepCatalogsLocked() {
	dir := CatalogDir(ix.opt.StateDir, ix.opt.Source)
	entries, err := os.ReadDir(dir)
	if err != nil {
		return
	}
	owned := map[string]bool{}
	for _, k := range ix.keys {
		owned[k] = true
	}
	for _, e := range entries {
		if !e.IsDir() || owned[e.Name()] {
			continue
		}
		ix.removeCatalogLocked(filepath.Join(dir, e.Name()))
	}
}

// removeCatalogLocked removes a catalog directory's catalog and resume file, then
// the directory if that left it empty.
func (ix *Indexer) removeCatalogLocked(dir string) {
	ix.fetchBeforeRemoveLocked(filepath.Base(dir))
	for _, name := range [...]string{CatalogName, ResumeName} {
		if ix.removeOutputLocked(filepath.Join(dir, name)) {
			ix.stats.CatalogWrites++
		}
	}
	ix.removeDirLocked(dir)
}

// writeOutputLocked writes data to path unless the file already holds exactly that.
// It reports whether it wrote (in check mode: whether it would have). With reuse,
// data is a buffer from ix.writes.buffer, handed back once no longer needed.
func (ix *Indexer) writeOutputLocked(path string, data []byte, mark dirtyMark, reuse bool) (bool, error) {
	ix.dropResumeCacheLocked()
	release := func() {
		if reuse {
			ix.writes.release(data)
		}
	}
	sum := outputHash(data)
	known := false // the file is still what we last wrote (by its stat)
	if o, ok := ix.outputs.get(path); ok {
		if fi, err := os.Stat(path); err == nil && fi.Size() == o.size && fi.ModTime().UnixNano() == o.mtime {
			_, ino := statIdentity(fi)
			known = ino == o.ino
		}
		if known && o.sum == sum {
			release()
			return false, nil
		}
	}
	// A file we did not write, or that changed behind our back, is compared with
	// what we would write before it is replaced; one we know is simply replaced.
	if !known {
		if old, err := os.ReadFile(path); err == nil && bytes.Equal(old, data) {
			ix.recordOutput(path, sum)
			release()
			return false, nil
		}
	}
	if ix.opt.Check {
		ix.diffs = append(ix.diffs, Difference{Path: path, Change: "write", Want: data})
		return true, nil
	}
	ix.writes.start(path, data, sum, mark, reuse)
	return true, nil
}

// commitLocked waits for the flush's writes and records what was written; it
// returns every write error since the last commit.
func (ix *Indexer) commitLocked() error {
	err := errors.Join(ix.pendingErr, ix.drainLocked())
	ix.pendingErr = nil
	return err
}

// drainLocked waits for the writes in flight and records their outcome.
func (ix *Indexer) drainLocked() error {
	ix.waitSyncLocked()
	if ix.syncErr != nil {
		// The consumers could not sync: nothing staged is put in place, and the
		// outputs are written again by a later flush.
		for _, r := range ix.writes.discard() {
			ix.outputs.del(r.path)
			ix.failed = append(ix.failed, r.mark)
		}
		return nil // the flush returns the consumer's error
	}
	var errs []error
	for _, r := range ix.writes.wait() {
		if r.err != nil {
			ix.outputs.del(r.path)
			errs = append(errs, r.err)
			ix.failed = append(ix.failed, r.mark)
			ix.stats.WriteFailures++
		} else {
			ix.recordOutput(r.path, r.sum)
		}
	}
	return errors.Join(errs...)
}

// outputSeed keys outputHash; outputs are remembered only for the process's life.
var outputSeed = maphash.MakeSeed()

// outputHash identifies an output's content for change detection. A 64-bit keyed
// hash suffices: a flush rewrites an output only when its content changed, and a
// collision (2^-64) would at worst leave one output a flush behind until the next
// change of that project.
func outputHash(data []byte) uint64 { return maphash.Bytes(outputSeed, data) }

func (ix *Indexer) recordOutput(path string, sum uint64) {
	fi, err := os.Stat(path)
	if err != nil {
		return
	}
	_, ino := statIdentity(fi)
	ix.outputs.set(path, output{sum: sum, size: fi.Size(), mtime: fi.ModTime().UnixNano(), ino: ino})
}

// removeOutputLocked removes a generated file if it exists; it reports whether it did.
// realDirLocked reports whether dir (relative to the root, slash-separated) is
// reached from the root through directories only, none of them a symlink.
func (ix *Indexer) realDirLocked(dir string) bool {
	p := ix.rootDir
	for part := range strings.SplitSeq(dir, "/") {
		p = filepath.Join(p, part)
		if fi, err := os.Lstat(p); err != nil || !fi.IsDir() {
			return false
		}
	}
	return true
}

func (ix *Indexer) removeOutputLocked(path string) bool {
	ix.dropResumeCacheLocked()
	ix.pendingErr = errors.Join(ix.pendingErr, ix.drainLocked()) // no write of it still in flight
	if ix.syncErr != nil {
		return false // nothing of a flush whose consumers failed to sync is removed either
	}
	ix.outputs.del(path)
	if _, err := os.Lstat(path); err != nil {
		return false
	}
	if ix.opt.Check {
		ix.diffs = append(ix.diffs, Difference{Path: path, Change: "remove"})
		return true
	}
	if err := os.Remove(path); err != nil {
		ix.log.Warn("remove failed", "file", path, "err", err)
		return false
	}
	return true
}

func (ix *Indexer) removeDirLocked(dir string) {
	if ix.opt.Check {
		return
	}
	if ix.opt.CleanTemps {
		cleanTempBefore(dir, processStart)
	}
	os.Remove(dir) // only if empty
}
