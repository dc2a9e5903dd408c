package indexer

import (
	"path/filepath"
)

// Parked sessions: what a daemon keeps of a unit between changes is the stat
// proof and the tail (the unit), not its catalog sessions. After a flush has
// written a project's catalog (or Load has read it), the sessions of each unit
// filed there wholly are dropped from memory: the unit keeps the catalog key
// (skey), how many sessions it has there and their sizes' and skipped lines'
// sums (for the counters). They are read back from that catalog, all of a
// catalog's units at once, when a flush renders the project or the project
// directory (a file of it changed, VerifyOutputs, a rescan), and read (not
// kept) for the readers of every session (Sessions, Entries). The catalog
// read back must hold each unit's sessions at the unit's position; if it does
// not (removed or edited behind the daemon's back), the unit is read again
// from its file, as a unit whose state is not found is.
//
// A parked line unit's state is in the resume file of the same key (lazyKey
// equal to skey) or empty: a unit whose accumulator or state is in memory
// keeps its sessions too.

// hasSessions reports whether the unit has sessions, in memory or parked.
func (u *unit) hasSessions() bool { return len(u.sessions()) > 0 || u.skey != 0 }

// setKeysLocked records the catalog key of every project, and the project of
// every key (the project parked sessions are filed under).
func (ix *Indexer) setKeysLocked(keys map[string]string) {
	ix.keys = keys
	if ix.owners == nil {
		ix.owners = make(map[string]string, len(keys))
	}
	clear(ix.owners)
	for p, k := range keys {
		ix.owners[k] = p
	}
}

// parkedProject is the project a parked unit's sessions are filed under.
func (ix *Indexer) parkedProject(u *unit) string { return ix.owners[ix.skeyOf(u)] }

// unitFile is the file a line unit's session names: its own path when the
// session is parked.
func (ix *Indexer) unitFile(u *unit) string {
	if len(u.sessions()) == 1 {
		return u.sessions()[0].File
	}
	return ix.unitPath(u.rel)
}

// parkSessionsLocked drops u's sessions from memory when the catalog of key k
// holds them all, as they are: the caller knows the catalog is what they
// render (just written or checked by a flush, or just read by Load). It
// reports whether it did.
func (ix *Indexer) parkSessionsLocked(u *unit, k string) bool {
	if ix.opt.Check || ix.lite || u.skey != 0 || len(u.sessions()) == 0 || ix.touched[u.rel] {
		return false
	}
	p := u.sessions()[0].Project
	if k == "" || ix.keys[p] != k || ix.owners[k] != p {
		return false
	}
	if u.kind == UnitLines {
		// The state must be where the sessions are (or empty): a unit holding
		// its accumulator or an encoded state keeps its sessions.
		if u.acc() != nil || !u.parked || u.state() != nil || (u.lazyKey != 0 && ix.lazyKeyOf(u) != k) {
			return false
		}
	}
	var bytes, skipped int64
	for _, s := range u.sessions() {
		if s.Project != p || s.Tail == nil {
			return false
		}
		bytes += s.SizeBytes
		skipped += int64(s.SkippedLines)
	}
	if len(u.sessions()) > 1<<30 || skipped > 1<<30 {
		return false
	}
	ix.setSkey(u, k)
	u.nsess, u.sbytes = int32(len(u.sessions())), bytes
	u.setSSkip(int(skipped))
	u.setSessions(nil)
	return true
}

// parkRenderedLocked parks, after a flush, the sessions of every unit whose
// project the flush rendered and left clean.
func (ix *Indexer) parkRenderedLocked() {
	if ix.opt.Check || ix.lite || len(ix.rendered) == 0 {
		return
	}
	for u := range ix.units.all() {
		if u.skey != 0 || len(u.sessions()) == 0 {
			continue
		}
		p := u.sessions()[0].Project
		if k, ok := ix.rendered[p]; ok && !ix.dirtyProjects[p] {
			if u.kind == UnitLines && u.lazyKey == 0 {
				// A state fetched by a flush whose write failed (and left out
				// of hot since): this flush wrote it to k's resume file.
				ix.lazyLocked(u, k, false)
			}
			ix.parkSessionsLocked(u, k)
		}
	}
}

// unparkDirtyLocked brings back, before a flush renders anything, the sessions
// of the parked units in the dirty project directories and projects (and of
// the units whose consumers are to sync), and reads again the units whose
// catalog no longer held them; until none is left.
func (ix *Indexer) unparkDirtyLocked() {
	for {
		ix.rereadLocked()
		keys := map[string]bool{}
		for u := range ix.units.all() {
			if u.skey == 0 || keys[ix.skeyOf(u)] {
				continue
			}
			if ix.dirtyProjects[ix.owners[ix.skeyOf(u)]] || ix.touched[u.rel] || ix.inDirtyDirLocked(u) {
				keys[ix.skeyOf(u)] = true
			}
		}
		if len(keys) == 0 {
			return
		}
		ix.unparkKeysLocked(keys)
		if len(ix.rereads) == 0 {
			return
		}
	}
}

// inDirtyDirLocked reports whether parked unit u lives in a dirty project
// directory. Layouts without project directories (Codex's date directories,
// Mogzi, HyperYOLO: ProjectDir "") have neither a directory's fallback project
// nor a native index to render, so a change there brings back no sibling: only
// a dirty project does.
func (ix *Indexer) inDirtyDirLocked(u *unit) bool {
	if len(ix.dirtyDirs) == 0 {
		return false
	}
	d := ix.layout.ProjectDir(u.rel)
	return d != "" && ix.dirtyDirs[d]
}

// rereadLocked reads again the units whose parked sessions were lost (their
// catalog no longer held them), marking the project they were filed under.
func (ix *Indexer) rereadLocked() {
	for len(ix.rereads) > 0 {
		for urel, p := range ix.rereads {
			delete(ix.rereads, urel)
			ix.dirtyProjects[p] = true
			u := ix.units.get(urel)
			if u == nil {
				continue
			}
			ix.dirtyDirs[ix.layout.ProjectDir(urel)] = true
			if _, err := ix.readUnitLocked(urel, u.kind); err != nil {
				ix.log.Warn("index failed", "file", ix.unitPath(urel), "err", err)
			}
		}
	}
}

// unparkKeysLocked brings back the sessions parked in the catalogs of keys,
// each catalog read once. It returns the projects of the units whose sessions
// the catalog no longer held as they were left: those units have no sessions
// now, are queued to be read again (rereads) and their project and directory
// are marked dirty.
func (ix *Indexer) unparkKeysLocked(keys map[string]bool) (stale []string) {
	if len(keys) == 0 {
		return nil
	}
	byKey := map[string][]*unit{}
	for u := range ix.units.all() {
		if u.skey != 0 && keys[ix.skeyOf(u)] {
			byKey[ix.skeyOf(u)] = append(byKey[ix.skeyOf(u)], u)
		}
	}
	for k, us := range byKey {
		got := ix.readParkedLocked(k, true)
		p := ix.owners[k]
		for _, u := range us {
			ss, n := got[u], int(u.nsess)
			ix.setSkey(u, "")
			u.nsess, u.sbytes = 0, 0
			u.setSSkip(0)
			if len(ss) == n {
				u.setSessions(ss)
				continue
			}
			ix.log.Warn("catalog no longer holds the unit's sessions, re-reading", "unit", u.rel, "key", k)
			ix.forceLocked(u.rel)
			if ix.rereads == nil {
				ix.rereads = map[string]string{}
			}
			ix.rereads[u.rel] = p
			ix.dirtyProjects[p] = true
			ix.dirtyDirs[ix.layout.ProjectDir(u.rel)] = true
			stale = append(stale, p)
		}
	}
	return stale
}

// readParkedLocked reads the catalog of key k and returns, for each unit parked
// there, its sessions in the catalog, filed under the key's project. With
// verify, only the sessions at their unit's position are taken (a unit with
// any other is left out), ready to be the unit's again: a lazy unit's state
// stays in the resume file. Without, every session of a unit parked there is
// taken as the catalog has it (a reader's copy). A catalog that cannot be read
// gives none.
func (ix *Indexer) readParkedLocked(k string, verify bool) map[*unit][]*Session {
	ix.parkedReads++
	path := filepath.Join(CatalogDir(ix.opt.StateDir, ix.opt.Source), k, CatalogName)
	var c *Catalog
	var err error
	if _, docs := ix.layout.(DocumentLayout); docs {
		c, _, _, err = readCatalogFiles(path, true) // a document's sessions keep their states
	} else {
		c, err = ix.tails.read(path)
	}
	if err != nil || c.Source != ix.opt.Source || c.Layout != ix.layout.Name() {
		return nil
	}
	p := ix.owners[k]
	out := map[*unit][]*Session{}
	var bad map[*unit]bool
	for _, s := range c.Sessions {
		rel, ok := ix.relOf(s.File)
		if !ok {
			continue
		}
		urel, kind := ix.layout.Classify(rel)
		u := ix.units.get(urel)
		if u == nil || ix.skeyOf(u) != k || kind != u.kind {
			continue
		}
		if verify {
			if s.Tail == nil || !u.tail.same(s.Tail) || s.Tail.Dep != u.tail.Dep() {
				if bad == nil {
					bad = map[*unit]bool{}
				}
				bad[u] = true
				continue
			}
			if u.kind == UnitLines {
				// The state as the unit holds it now.
				switch {
				case ix.lazyKeyOf(u) == k:
					s.Tail.State = nil // left in the resume file, as Load leaves it
				case u.state() != nil:
					s.Tail.State = u.state()
				case u.acc() != nil:
					s.acc = u.acc()
					if st, err := accState(u.acc()); err == nil && string(st) != "{}" {
						s.Tail.State = st
					}
				}
			}
		}
		s.Project, s.Dir = p, ix.layout.ProjectDir(urel)
		out[u] = append(out[u], s)
	}
	for u := range bad {
		delete(out, u)
	}
	return out
}

// tailReader reads catalogs with their tails for parked sessions.
type tailReader struct{ liteReader }

// read reads the catalog at path and gives each session its tail from the
// resume file, without the states (a line unit's state is fetched from the
// resume file on its own when needed: fetchStatesLocked).
// The files are read into r's buffers, kept for the next read (nothing
// decoded refers to them; the strings share one copy of the session lines:
// sessions read back live until the flush that needs them parks them again).
func (r *tailReader) read(path string) (*Catalog, error) {
	defer func() {
		if cap(r.cat) > resumeCacheMax {
			r.cat = nil
		}
		if cap(r.res) > resumeCacheMax {
			r.res = nil
		}
	}()
	c, entries, err := r.catalogTails(path, true)
	if err != nil || entries == nil {
		return c, err
	}
	matchResume(c, r.sums, entries, func(_ int, s *Session, e *resumeEntry) {
		if t, ok := decodeTail(e.tail); ok {
			s.Tail = t
		}
	})
	return c, nil
}

// parkedSessionsLocked reads the parked sessions of every unit from their
// catalogs (each read once) for a reader; nothing is kept.
func (ix *Indexer) parkedSessionsLocked(fn func(s *Session)) {
	keys := map[string]bool{}
	for u := range ix.units.all() {
		if u.skey != 0 {
			keys[ix.skeyOf(u)] = true
		}
	}
	for k := range keys {
		for _, ss := range ix.readParkedLocked(k, false) {
			for _, s := range ss {
				fn(s)
			}
		}
	}
}

// sessionsOfLocked returns u's sessions: read from its catalog, not kept, when
// they are parked.
//
// The catalog last read is remembered (ix.lastParked) until the next flush or
// write begins, so that a pass handing many unchanged documents of one project
// to a consumer behind reads their catalog once, not once per document.
func (ix *Indexer) sessionsOfLocked(u *unit) []*Session {
	if u.skey == 0 {
		return u.sessions()
	}
	if ix.lastParked.m == nil || ix.lastParked.key != ix.skeyOf(u) {
		ix.lastParked = parkedRead{ix.skeyOf(u), ix.readParkedLocked(ix.skeyOf(u), false)}
	}
	return ix.lastParked.m[u]
}

// parkedRead is the parked sessions read from one catalog, by unit.
type parkedRead struct {
	key string
	m   map[*unit][]*Session
}

// trackSessionPeak makes every flush record in sessionPeak how many units hold
// their sessions in memory at its end, before they are parked (for tests).
var trackSessionPeak = false

// heldSessionsLocked counts the units holding their sessions in memory.
func (ix *Indexer) heldSessionsLocked() int {
	n := 0
	for u := range ix.units.all() {
		if len(u.sessions()) > 0 {
			n++
		}
	}
	return n
}
