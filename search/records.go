package search

import (
	"fmt"
	"path/filepath"
	"slices"

	"github.com/sessionwatch/sessionwatch/indexer"
)

// The writer's unit records: live units found and created, ended, their
// projects set, and the records a commit writes (units.go holds the table).

// liveLocked returns the slot of u's live unit, creating one (a new id) if there
// is none.
func (x *Index) liveLocked(u indexer.UnitRef) int {
	if at, ok := x.u.findRef(u); ok {
		if x.seen != nil {
			x.seen[x.u.recs[at].id] = struct{}{}
		}
		return at
	}
	id := x.man.NextUnit
	x.man.NextUnit++
	at := x.u.add(id, unitPos{rel: u.Unit, ino: u.Ino, dev: x.u.devIndex(u.Dev), src: x.u.srcIndex(u.Source)})
	x.pending[id] = &unitRec{ID: id, Source: u.Source, Layout: u.Layout, Rel: u.Unit, Path: u.Path}
	x.dirty[id] = int32(at)
	if x.seen != nil {
		x.seen[id] = struct{}{}
	}
	return at
}

// endLocked ends the live unit of u with state (dead or removed): its id is not
// used again.
func (x *Index) endLocked(u indexer.UnitRef, state byte) {
	at, ok := x.u.findRef(u)
	if !ok {
		return
	}
	h := &x.u.recs[at]
	id := h.id
	e := endedHot{pos: x.u.pos(h), fp: x.u.fpOf(h)}
	e.pos.rel = "" // not written: the record holds it
	if state == unitRemoved {
		e.removedAt = x.opt.Now().Unix()
	}
	x.endedNow[id] = e
	x.u.ended[id] = ended{state: state}
	x.dirty[id] = -1
	x.u.remove(at)
}

// setProjectsLocked records the project of each session in its unit's record: a
// hint that lets a search over every project read only the catalogs of its
// results. It may lag (a session that takes its project from a sibling later is
// not handed over again), so a reader checks it against the catalogs; it is not
// part of the rebuild check. The record is read back unless pending, and kept
// (pending) only if it is to be written: its project changed, or its unit did
// (dirty). A flush may hand over every session of a store whose catalogs were
// rebuilt, none of them changed here: their records are not all held at once.
func (x *Index) setProjectsLocked(sessions []indexer.SessionRef) error {
	var last *unitRec // the last record read back and not kept (a document's sessions come together)
	for _, s := range sessions {
		at, ok := x.u.findRef(s.UnitRef)
		if !ok {
			continue
		}
		id := x.u.recs[at].id
		r := x.pending[id]
		if r == nil && last != nil && last.ID == id {
			r = last
		}
		if r == nil {
			var err error
			if r, err = x.diskRecordLocked(id); err != nil {
				return err
			}
			if _, ok := x.dirty[id]; ok {
				x.pending[id] = r // written at this commit anyway
			} else {
				last = r
			}
		}
		i, n := 0, 1
		if len(r.Sids) > 0 {
			n = len(r.Sids)
			if i = slices.Index(r.Sids, s.ID); i < 0 {
				if len(r.Sids) != 1 {
					continue
				}
				i = 0 // one session per document (Mogzi): its id may be the directory's
			}
		}
		if len(r.Projs) == n && r.Projs[i] == s.Project {
			continue
		}
		projs := make([]string, n)
		copy(projs, r.Projs)
		projs[i] = s.Project
		r.Projs = projs
		x.pending[id] = r
		x.dirty[id] = int32(at)
	}
	return nil
}

// diskRecordLocked reads the last committed record of id: the newest segment's
// that has one, found through the unit tables.
func (x *Index) diskRecordLocked(id uint32) (*unitRec, error) {
	for i := len(x.segs) - 1; i >= 0; i-- {
		r, err := x.segs[i].unit(id)
		if err != nil {
			return nil, fmt.Errorf("read %s: %w", filepath.Base(x.segs[i].name), err)
		}
		if r != nil {
			return r, nil
		}
	}
	return nil, fmt.Errorf("no record of unit %d: %w", id, errCorrupt)
}

// recordLocked is the record a commit writes for id: its fields from pending or
// from its last record, its positions from the unit table (slot at, or -1 for a
// unit that ended since the last commit).
func (x *Index) recordLocked(id uint32, at int32) (*unitRec, error) {
	r := x.pending[id]
	if r == nil {
		var err error
		if r, err = x.diskRecordLocked(id); err != nil {
			return nil, err
		}
	}
	out := *r
	var p unitPos
	if at >= 0 {
		h := &x.u.recs[at]
		p = x.u.pos(h)
		out.State, out.RemovedAt, out.Fp = unitLive, 0, x.u.fpOf(h)
	} else {
		e := x.endedNow[id]
		p = e.pos
		out.State, out.RemovedAt, out.Fp = x.u.ended[id].state, e.removedAt, e.fp
	}
	out.Dev, out.Ino, out.Offset = x.u.devs[p.dev], p.ino, p.off
	return &out, nil
}
