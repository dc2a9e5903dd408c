package indexer

import (
	"encoding/json"
	"strings"
	"unsafe"
)

// unitLive is what a unit holds in memory only between a change and the flush
// that parks it again: its accumulator, its encoded state and its sessions. A
// daemon over an unchanged store keeps every unit parked, so the unit points to
// one only while any of them is set (a parked unit is its path, its tail and
// its catalog keys).
type unitLive struct {
	acc      Accumulator
	state    json.RawMessage // acc's state from a catalog, not decoded yet
	sessions []*Session
}

// acc is the unit's accumulator (nil: parked, or none made yet).
func (u *unit) acc() Accumulator {
	if u.live == nil {
		return nil
	}
	return u.live.acc
}

// state is the unit's accumulator state from a catalog, not decoded yet.
func (u *unit) state() json.RawMessage {
	if u.live == nil {
		return nil
	}
	return u.live.state
}

// sessions are the unit's sessions in memory (none while they are parked).
func (u *unit) sessions() []*Session {
	if u.live == nil {
		return nil
	}
	return u.live.sessions
}

func (u *unit) setAcc(a Accumulator) {
	if u.grow(a != nil) {
		u.live.acc = a
		u.shrink()
	}
}

func (u *unit) setState(st json.RawMessage) {
	if u.grow(st != nil) {
		u.live.state = st
		u.shrink()
	}
}

func (u *unit) setSessions(ss []*Session) {
	if u.grow(ss != nil) {
		u.live.sessions = ss
		u.shrink()
	}
}

// grow makes live if a value is to be set in it (set); it reports whether
// there is a live to set it in (a nil value needs none).
func (u *unit) grow(set bool) bool {
	if u.live == nil {
		if !set {
			return false
		}
		u.live = &unitLive{}
	}
	return true
}

// shrink drops live once it holds nothing.
func (u *unit) shrink() {
	if l := u.live; l.acc == nil && l.state == nil && l.sessions == nil {
		u.live = nil
	}
}

// relArena copies the paths of the units Load restores into shared blocks: a
// unit's path, its key in ix.units, is its largest part after the unit, and
// one allocation each costs the rounding up to a size class (~10 bytes of ~90)
// and a malloc. A block is freed when no path cut from it is held any more;
// a unit removed since Load keeps at most its path's bytes in a live block.
type relArena struct{ buf []byte }

const relBlock = 16 << 10

func (a *relArena) clone(s string) string {
	if len(s) == 0 || len(s) > relBlock/16 {
		return strings.Clone(s)
	}
	if cap(a.buf)-len(a.buf) < len(s) {
		a.buf = make([]byte, 0, relBlock)
	}
	n := len(a.buf)
	a.buf = append(a.buf, s...)
	return unsafe.String(&a.buf[n], len(s))
}
