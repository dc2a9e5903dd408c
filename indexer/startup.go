package indexer

import (
	"bytes"
	"errors"
	"maps"
	"path/filepath"
	"slices"
)

// The daemon's start-up over catalogs it just loaded (Start, then VerifyOutputs
// once it is ready), and the parking of idle accumulators: what an indexer keeps
// in memory per line unit between appends.

// Start is the daemon's first pass after Load: the walk of Reconcile (a stat of
// every file, reads of what changed, removal of what is gone), but only what
// changed is rendered and written. A catalog Load just read is what a render of
// its unchanged sessions produces, so an unchanged store costs the walk and
// nothing else: no accumulator state is decoded, no catalog or native index is
// rendered, no consumer syncs. A native index that is missing, or left in a
// directory without sessions, is put right here; the content of every output
// is compared by VerifyOutputs, which the daemon runs once it is ready.
func (ix *Indexer) Start() error {
	return ix.write(func() error {
		return ix.startFlushLocked(ix.startWalkLocked())
	})
}

// startWalkLocked is Start's walk (reconcileWalkLocked): it writes nothing and
// syncs no consumer, so the walks of several sources can run at once
// (Group.StartAll).
func (ix *Indexer) startWalkLocked() error {
	ix.quick = true
	defer func() { ix.quick = false }()
	return ix.reconcileWalkLocked()
}

// startFlushLocked is the rest of Start once its walk returned err.
func (ix *Indexer) startFlushLocked(err error) error {
	ix.quick = true
	defer func() { ix.quick = false }()
	err = ix.reconcileFlushLocked(err)
	ix.countLocked()
	return err
}

// VerifyOutputs renders every catalog and native index of the source and writes
// those whose file differs (edited or replaced while no daemon ran, or written by
// an older version): the half of Reconcile that Start leaves out, without the walk.
//
// It renders verifyBatch units' projects per flush, not all at once: a flush
// brings back the states of the units it renders, and the units park again
// after it, so the daemon's memory right after start stays what it holds idle
// plus one batch, not what a Load of every state would hold.
func (ix *Indexer) VerifyOutputs() error {
	return ix.write(func() error {
		clear(ix.baseKeys)
		ix.verifyFetched = true
		err := ix.renderAllLocked()
		ix.verifyFetched = false
		ix.sweepCatalogsLocked()
		return err
	})
}

// renderAllLocked renders every catalog and native index of the units'
// projects, verifyBatch units' projects per flush (VerifyOutputs, and a full
// pass over parked sessions): the states and sessions a flush brings back are
// parked again after it.
func (ix *Indexer) renderAllLocked() error {
	var errs []error
	dirs := map[string][]string{} // project → its sessions' directories
	for u := range ix.units.all() {
		for _, s := range u.sessions() {
			dirs[s.Project] = append(dirs[s.Project], s.Dir)
		}
		if u.skey != 0 {
			p := ix.parkedProject(u)
			if d := ix.layout.ProjectDir(u.rel); d != "" { // see inDirtyDirLocked
				dirs[p] = append(dirs[p], d)
			}
		}
	}
	for _, batch := range ix.verifyBatchesLocked() {
		for _, p := range batch {
			ix.dirtyProjects[p] = true
			for _, d := range dirs[p] {
				ix.dirtyDirs[d] = true
			}
		}
		if err := ix.flushLocked(); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// anyParkedLocked reports whether a unit's sessions are parked.
func (ix *Indexer) anyParkedLocked() bool {
	for u := range ix.units.all() {
		if u.skey != 0 {
			return true
		}
	}
	return false
}

// heldStatesLocked counts the units holding a state or an accumulator in memory.
func (ix *Indexer) heldStatesLocked() int {
	n := 0
	for u := range ix.units.all() {
		if u.acc() != nil || u.state() != nil {
			n++
		}
	}
	return n
}

// markAllLocked marks every project directory and project dirty: the next
// flush renders all of them (writing only what differs).
func (ix *Indexer) markAllLocked() {
	for u := range ix.units.all() {
		for _, s := range u.sessions() {
			ix.dirtyDirs[s.Dir] = true
			ix.dirtyProjects[s.Project] = true
		}
		if u.skey != 0 {
			ix.dirtyDirs[ix.layout.ProjectDir(u.rel)] = true
			ix.dirtyProjects[ix.parkedProject(u)] = true
		}
	}
	for p := range ix.keys {
		ix.dirtyProjects[p] = true
	}
}

// verifyBatch is about how many units VerifyOutputs renders per flush.
var verifyBatch = 2000 // a var for tests

// verifyBatchesLocked groups every project (of the units and of the catalogs)
// into batches of about verifyBatch units, in a fixed order.
func (ix *Indexer) verifyBatchesLocked() [][]string {
	count := map[string]int{}
	for u := range ix.units.all() {
		for _, s := range u.sessions() {
			count[s.Project]++
		}
		if u.skey != 0 {
			count[ix.parkedProject(u)] += int(u.nsess)
		}
	}
	for p := range ix.keys {
		if _, ok := count[p]; !ok {
			count[p] = 0
		}
	}
	projects := slices.Sorted(maps.Keys(count))
	var batches [][]string
	var cur []string
	n := 0
	for _, p := range projects {
		cur = append(cur, p)
		n += count[p]
		if n >= verifyBatch {
			batches, cur, n = append(batches, cur), nil, 0
		}
	}
	if len(cur) > 0 {
		batches = append(batches, cur)
	}
	return batches
}

// nativePresenceLocked marks dirty the project directories whose native index
// is missing (it has sessions) or should not be there (it has none): what Start
// can tell from the walk alone.
func (ix *Indexer) nativePresenceLocked(natives map[string]bool) {
	if _, ok := ix.layout.(NativeIndexer); !ok || !ix.opt.NativeIndex {
		return
	}
	have := map[string]bool{}
	for u := range ix.units.all() {
		for _, s := range u.sessions() {
			if s.Dir != "" {
				have[s.Dir] = true
			}
		}
		if d := ix.layout.ProjectDir(u.rel); u.skey != 0 && d != "" {
			have[d] = true
		}
	}
	for d := range have {
		if !natives[d] {
			ix.dirtyDirs[d] = true
		}
	}
	for d := range natives {
		if !have[d] {
			ix.dirtyDirs[d] = true
		}
	}
}

// countLocked sets the session counters from the units (a flush that writes no
// catalog leaves them as they were: zero after a Load).
func (ix *Indexer) countLocked() {
	projects := ix.projects // the flush's map, rebuilt by the flush anyway
	if projects == nil {
		projects = map[string]bool{}
		ix.projects = projects
	}
	clear(projects)
	ix.stats.Sessions, ix.stats.Bytes, ix.stats.SkippedLines = 0, 0, 0
	for u := range ix.units.all() {
		for _, s := range u.sessions() {
			projects[s.Project] = true
			ix.stats.Sessions++
			ix.stats.Bytes += s.SizeBytes
			ix.stats.SkippedLines += s.SkippedLines
		}
		if u.skey != 0 {
			projects[ix.parkedProject(u)] = true
			ix.stats.Sessions += int(u.nsess)
			ix.stats.Bytes += u.sbytes
			ix.stats.SkippedLines += u.sskip()
		}
	}
	ix.stats.Projects = len(projects)
}

// hasState reports whether the unit was read (or restored) with its accumulator's
// state, in memory or parked: the condition for going on from its offset.
func (u *unit) hasState() bool { return u.acc() != nil || u.parked }

// unparkLocked gives a parked unit its accumulator back (the state in u.state is
// decoded into it by decodeStateLocked).
func (ix *Indexer) unparkLocked(u *unit) {
	if !u.parked {
		return
	}
	if u.lazyKey != 0 {
		ix.fetchStatesLocked(ix.lazyKeyOf(u), []*unit{u})
		if !u.parked {
			return // its state was not found: it is read again from the start
		}
	}
	ll, ok := ix.layout.(LineLayout)
	if !ok {
		return
	}
	u.setAcc(ll.NewAccumulator(u.rel))
	u.parked = false
	for _, s := range u.sessions() {
		s.acc = u.acc()
	}
	ix.hot = append(ix.hot, u)
}

// parkLocked drops the accumulators decoded since the last flush whose state is
// already held, encoded, by their session (summarizeLinesLocked encodes it with
// every read): a unit between appends costs its encoded state, not a decoded
// accumulator. One whose session does not match its tail (a read that failed half
// way) keeps its accumulator.
func (ix *Indexer) parkLocked() {
	keep := ix.hot[:0]
	for _, u := range ix.hot {
		if ix.units.get(u.rel) != u || u.lazyKey != 0 {
			continue
		}
		if !u.parked {
			if u.acc() == nil {
				continue
			}
			if len(u.sessions()) != 1 || u.state() != nil || !u.tail.same(u.sessions()[0].Tail) {
				keep = append(keep, u)
				continue
			}
			s := u.sessions()[0]
			u.setAcc(nil)
			u.setState(s.Tail.State)
			u.parked = true
			s.acc = nil
		}
		// This flush left the state in its catalog's resume file: it need not
		// stay in memory either (unless the write failed and waits for a retry).
		if len(u.sessions()) == 1 {
			p := u.sessions()[0].Project
			if k, ok := ix.rendered[p]; ok && !ix.dirtyProjects[p] {
				ix.lazyLocked(u, k, false)
			}
		}
	}
	clear(ix.hot[len(keep):])
	ix.hot = keep
	ix.parkRenderedLocked()
	clear(ix.rendered)
}

// lazyLocked leaves a parked unit's state in the resume file of catalog key
// (which holds it: just loaded from it, or just written to it), out of memory.
// A command that checks (writes nothing) or reads only keeps what it has.
// With fresh set (the session was just decoded, no snapshot shares its tail),
// the tail is changed in place rather than copied.
func (ix *Indexer) lazyLocked(u *unit, key string, fresh bool) {
	if ix.opt.Check || ix.lite || !u.parked || u.state() == nil || len(u.sessions()) != 1 || u.sessions()[0].Tail == nil {
		return
	}
	s := u.sessions()[0]
	if fresh {
		s.Tail.State = nil
	} else {
		t := *s.Tail // not changed in place: a snapshot (Sessions) may share it
		t.State = nil
		s.Tail = &t
	}
	u.setState(nil)
	ix.setLazyKey(u, key)
}

// fetchStatesLocked brings back the states of lazy units us (those of them left
// in catalog key) from that catalog's resume file. A unit whose state is not
// there as it was left (the file was removed or replaced behind our back) is
// read again from the start, and its session keeps no position meanwhile.
//
// Only the resume file is read (into a buffer kept for the next fetch; one
// write pass fetching twice from the same file reads it once), and only the
// wanted entries' tails and states are decoded: an append to a parked unit
// costs one small read, not a decode of its project's catalog (read only for
// a state the resume file does not hold: an older catalog's). An entry is
// taken when it names the unit's file at the unit's exact position (identity,
// offset, size, mtime, fingerprints), at which the state is the layout's
// accumulator over the same bytes whatever catalog line it was written with.
func (ix *Indexer) fetchStatesLocked(key string, us []*unit) {
	path := filepath.Join(CatalogDir(ix.opt.StateDir, ix.opt.Source), key, ResumeName)
	want := us[:0:0]
	for _, u := range us {
		if ix.lazyKeyOf(u) != key {
			continue
		}
		ix.setLazyKey(u, "")
		if u.skey != 0 && u.nsess == 1 {
			want = append(want, u) // its session parked in the same catalog
			continue
		}
		if len(u.sessions()) != 1 || u.sessions()[0].Tail == nil {
			ix.forceLocked(u.rel)
			continue
		}
		want = append(want, u)
	}
	if len(want) == 0 {
		return
	}
	states := ix.resumeStatesLocked(key, path, want)
	if slices.ContainsFunc(states, func(st []byte) bool { return st == nil }) {
		ix.catalogStatesLocked(key, want, states)
	}
	for i, u := range want {
		if u.skey != 0 {
			// The session is not in memory: only the unit takes the state (a
			// session read back from the catalog holds none, being lazy).
			if st := states[i]; st != nil {
				u.setState(st)
				ix.hot = append(ix.hot, u)
			} else {
				ix.log.Warn("resume state not found, re-reading", "unit", u.rel, "file", path)
				ix.forceLocked(u.rel)
			}
			continue
		}
		s := u.sessions()[0]
		nt := *s.Tail
		if st := states[i]; st != nil {
			u.setState(st)
			nt.State = st
			s.Tail = &nt
			ix.hot = append(ix.hot, u) // to be left lazy again after the flush
			continue
		}
		ix.log.Warn("resume state not found, re-reading", "unit", u.rel, "file", path)
		ix.forceLocked(u.rel)
		nt.State, nt.Offset, nt.Mtime, nt.Fp, nt.Hfp = nil, 0, -1, "", ""
		s.Tail = &nt
	}
}

// catalogStatesLocked fills in the states missing from a resume file alone
// (resumeStatesLocked) from its catalog and the resume file read together, as
// Load reads them: a catalog of an older version holds its tails and states
// itself, beside no resume file.
func (ix *Indexer) catalogStatesLocked(key string, us []*unit, states [][]byte) {
	path := filepath.Join(CatalogDir(ix.opt.StateDir, ix.opt.Source), key, CatalogName)
	c, _, _, err := readCatalogFiles(path, true)
	if err != nil {
		return
	}
	byFile := map[string]*Tail{}
	for _, s := range c.Sessions {
		if s.Tail != nil {
			byFile[s.File] = s.Tail
		}
	}
	for i, u := range us {
		if states[i] != nil {
			continue
		}
		if t := byFile[ix.unitFile(u)]; t != nil && t.State != nil && u.tail.same(t) {
			states[i] = t.State
		}
	}
}

// resumeCache is the last resume file fetchStatesLocked read, kept until the
// indexer next writes anything (or begins a pass) for a second fetch from it.
type resumeCache struct {
	key  string // "" when buf holds nothing valid
	buf  []byte
	miss bool // the file could not be read
}

// resumeCacheMax is the largest buffer the cache keeps between fetches.
const resumeCacheMax = 1 << 20

// dropResumeCacheLocked forgets the cached resume file (anything may be about
// to change it), keeping a small buffer for the next read.
func (ix *Indexer) dropResumeCacheLocked() {
	ix.resCache.key, ix.resCache.miss = "", false
	if cap(ix.resCache.buf) > resumeCacheMax {
		ix.resCache.buf = nil
	}
}

// resumeStatesLocked reads the resume file of catalog key at path (or takes it
// from the cache) and returns, for each unit of us, a copy of its state when the
// file holds one for the unit's file at the unit's position, else nil.
func (ix *Indexer) resumeStatesLocked(key, path string, us []*unit) [][]byte {
	rc := &ix.resCache
	if rc.key != key {
		var err error
		rc.key = key
		rc.buf, err = readFileInto(rc.buf, path)
		rc.miss = err != nil
	}
	out := make([][]byte, len(us))
	if rc.miss {
		return out
	}
	data := rc.buf
	// The header: this source's and layout's (the project is not compared: a
	// unit's project may have moved since it was left here).
	head, rest, found := bytes.Cut(data, []byte("\n"))
	prefix := resumeHeader(&Catalog{Source: ix.opt.Source, Layout: ix.layout.Name()})
	prefix = prefix[:len(prefix)-len(`"","resume":[`)]
	if !found || !bytes.HasPrefix(head, prefix) || !bytes.HasSuffix(head, []byte(`,"resume":[`)) {
		return out
	}
	var byFile map[string]int // for many units; else a scan of us
	if len(us) > 8 {
		byFile = make(map[string]int, len(us))
		for i, u := range us {
			byFile[ix.unitFile(u)] = i
		}
	}
	find := func(file []byte) int {
		if byFile != nil {
			if len(file) >= 2 && bytes.IndexByte(file, '\\') < 0 {
				if i, ok := byFile[string(file[1:len(file)-1])]; ok {
					return i
				}
				return -1
			}
			if f, ok := JSONString(file); ok {
				if i, ok := byFile[f]; ok {
					return i
				}
			}
			return -1
		}
		for i, u := range us {
			if jsonStringIs(file, ix.unitFile(u)) {
				return i
			}
		}
		return -1
	}
	fail := func() [][]byte { // a file that does not parse gives no state at all
		clear(out)
		return out
	}
	var taken []int // entry index → unit index, for the entries taken
	n := 0          // entries seen
	for {
		var line []byte
		if line, rest, found = bytes.Cut(rest, []byte("\n")); !found {
			return fail()
		}
		if string(line) == resumeStatesLine {
			break
		}
		line, _ = bytes.CutSuffix(line, []byte(","))
		e, ok := parseResumeLine(line)
		if !ok {
			return fail()
		}
		taken = append(taken, -1)
		if i := find(e.file); i >= 0 && out[i] == nil {
			if t, ok := decodeTailFixed(e.tail); ok && us[i].tail.same(t) {
				taken[n] = i
				out[i] = []byte{} // claimed; its state is read below
			}
		}
		n++
	}
	for j := 0; j < n; j++ {
		var line []byte
		if line, rest, found = bytes.Cut(rest, []byte("\n")); !found {
			return fail()
		}
		i := taken[j]
		if i < 0 {
			continue
		}
		line, _ = bytes.CutSuffix(line, []byte(","))
		if len(line) > 2 && line[0] == '{' && line[len(line)-1] == '}' {
			out[i] = bytes.Clone(line)
		} else {
			out[i] = nil // null (or not a state): read again from the start
		}
	}
	if string(bytes.TrimSpace(rest)) != "]}" {
		return fail()
	}
	return out
}

// fetchForWriteLocked brings back the states a flush is about to write: of the
// lazy units in the projects it renders, or whose catalog key changes.
func (ix *Indexer) fetchForWriteLocked(keys map[string]string) {
	need := map[string][]*unit{}
	for u := range ix.units.all() {
		if u.lazyKey == 0 || u.skey != 0 {
			continue // parked with its session: brought back with it when needed
		}
		if len(u.sessions()) != 1 || ix.dirtyProjects[u.sessions()[0].Project] || keys[u.sessions()[0].Project] != ix.lazyKeyOf(u) {
			need[ix.lazyKeyOf(u)] = append(need[ix.lazyKeyOf(u)], u)
		}
	}
	for k, us := range need {
		ix.fetchStatesLocked(k, us)
	}
}

// fetchDirtyLocked brings back, before a flush renders anything, the states of
// the lazy units in the dirty project directories and projects; a unit whose
// state is not found is read again from the start right away, so the flush
// writes what a rebuild would.
func (ix *Indexer) fetchDirtyLocked() {
	need := map[string][]*unit{}
	for u := range ix.units.all() {
		if u.lazyKey == 0 || u.skey != 0 {
			continue // parked with its session: unparkDirtyLocked brought back those needed
		}
		if len(u.sessions()) != 1 || ix.dirtyDirs[u.sessions()[0].Dir] || ix.dirtyProjects[u.sessions()[0].Project] {
			need[ix.lazyKeyOf(u)] = append(need[ix.lazyKeyOf(u)], u)
		}
	}
	for k, us := range need {
		ix.fetchStatesLocked(k, us)
		for _, u := range us {
			if !u.hasState() && ix.units.get(u.rel) == u {
				rel := u.rel
				if _, err := ix.readUnitLocked(rel, u.kind); err != nil {
					ix.log.Warn("index failed", "file", ix.unitPath(rel), "err", err)
				}
			}
		}
	}
}

// fetchDirsLocked brings back, one resume file at a time, the states of the lazy
// units in the dirty project directories (a flush projects them into native
// indexes).
func (ix *Indexer) fetchDirsLocked(byDir map[string][]*unit) {
	need := map[string][]*unit{}
	for dir := range ix.dirtyDirs {
		for _, u := range byDir[dir] {
			if u.lazyKey != 0 {
				need[ix.lazyKeyOf(u)] = append(need[ix.lazyKeyOf(u)], u)
			}
		}
	}
	for k, us := range need {
		ix.fetchStatesLocked(k, us)
	}
}

// fetchBeforeRemoveLocked brings back the sessions and states left in catalog
// key, which is about to be removed.
func (ix *Indexer) fetchBeforeRemoveLocked(key string) {
	ix.unparkKeysLocked(map[string]bool{key: true})
	var us []*unit
	for u := range ix.units.all() {
		if ix.lazyKeyOf(u) == key {
			us = append(us, u)
		}
	}
	if len(us) > 0 {
		ix.fetchStatesLocked(key, us)
	}
}
