package indexer

import "math"

// A unit's skipped lines (its own, counted by its read; its parked sessions',
// summed by parkSessionsLocked) are kept in its tail's rare part: most units
// have none, and two counters in every unit would take it past 112 bytes
// (TestUnitSize).

// skipped is the number of lines the unit's reads skipped.
func (u *unit) skipped() int {
	if r := u.tail.rare; r != nil {
		return int(r.skipped)
	}
	return 0
}

// sskip is the sum of the parked sessions' skipped lines.
func (u *unit) sskip() int {
	if r := u.tail.rare; r != nil {
		return int(r.sskip)
	}
	return 0
}

func (u *unit) setSkipped(n int) { u.tail.setSkips(clamp32(n), u.tail.sskipN()) }

func (u *unit) setSSkip(n int) { u.tail.setSkips(u.tail.skippedN(), clamp32(n)) }

// clamp32 is n within an int32.
func clamp32(n int) int32 { return int32(max(min(n, math.MaxInt32), 0)) }

func (t *unitTail) skippedN() int32 {
	if t.rare == nil {
		return 0
	}
	return t.rare.skipped
}

func (t *unitTail) sskipN() int32 {
	if t.rare == nil {
		return 0
	}
	return t.rare.sskip
}

// setSkips sets both counters, making or dropping the rare part as needed.
func (t *unitTail) setSkips(skipped, sskip int32) {
	if t.rare == nil {
		if skipped == 0 && sskip == 0 {
			return
		}
		t.rare = &tailRare{}
	} else if t.rare.skipped == skipped && t.rare.sskip == sskip {
		return
	} else {
		r := *t.rare // a copy: set may have shared it with another tail
		t.rare = &r
	}
	t.rare.skipped, t.rare.sskip = skipped, sskip
	if *t.rare == (tailRare{}) {
		t.rare = nil
	}
}

// nextProbeGenLocked starts an Unchanged walk: its mark (unit.probed). When
// the 16-bit mark wraps, every unit's is cleared first, so a mark left by a
// walk 65536 walks ago never passes for the current one.
func (ix *Indexer) nextProbeGenLocked() uint16 {
	ix.probeGen++
	if ix.probeGen == 0 {
		for u := range ix.units.all() {
			u.probed = 0
		}
		ix.probeGen = 1
	}
	return ix.probeGen
}
