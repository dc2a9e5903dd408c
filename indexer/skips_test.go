package indexer

import "testing"

// TestSkipsInRare: the skipped-line counters live in the tail's rare part,
// survive every change of the tail's strings, and leave no rare part behind
// once both are zero again.
func TestSkipsInRare(t *testing.T) {
	var u unit
	u.setSkipped(3)
	u.setSSkip(5)
	u.tail.SetFp("00000000000000ab")
	u.tail.SetHfp("short")
	u.tail.SetLongLine(true)
	u.tail.setRare(u.tail.Fp(), u.tail.Hfp(), "dep1", u.tail.LongLine())
	if u.skipped() != 3 || u.sskip() != 5 {
		t.Fatalf("skipped %d, sskip %d after the tail changed, want 3, 5", u.skipped(), u.sskip())
	}
	if got := u.tail.get(); got.Fp != "00000000000000ab" || got.Hfp != "short" || got.Dep != "dep1" || !got.LongLine {
		t.Fatalf("tail %+v lost its strings", got)
	}
	shared := u.tail // a copy shares the rare part: a change must not reach it
	u.setSkipped(4)
	if shared.skippedN() != 3 {
		t.Errorf("a copy of the tail sees skipped %d, want 3", shared.skippedN())
	}
	u.setSkipped(1 << 40)
	if u.skipped() != 1<<31-1 {
		t.Errorf("skipped %d, want it clamped to %d", u.skipped(), 1<<31-1)
	}
	u.tail.setRare("", "", "", false)
	if u.tail.rare == nil || u.skipped() != 1<<31-1 || u.sskip() != 5 {
		t.Fatalf("counters lost with the strings: rare %v", u.tail.rare)
	}
	u.setSkipped(0)
	u.setSSkip(0)
	if u.tail.rare != nil {
		t.Errorf("rare part %+v kept with nothing in it", *u.tail.rare)
	}
}

// TestProbeGenWraps: when the 16-bit walk mark wraps, no unit keeps a mark
// the new walk could take for its own.
func TestProbeGenWraps(t *testing.T) {
	ix := &Indexer{}
	a, b := &unit{rel: "p/a.jsonl"}, &unit{rel: "p/b.jsonl"}
	ix.units.put(a)
	ix.units.put(b)
	ix.probeGen = 1<<16 - 2
	if g := ix.nextProbeGenLocked(); g != 1<<16-1 {
		t.Fatalf("mark %d, want %d", g, 1<<16-1)
	}
	a.probed, b.probed = 1, 1<<16-1 // a: from 65534 walks ago
	g := ix.nextProbeGenLocked()
	if g != 1 {
		t.Fatalf("mark after the wrap %d, want 1", g)
	}
	if a.probed == g || b.probed == g || a.probed != 0 || b.probed != 0 {
		t.Errorf("marks %d, %d after the wrap to %d, want both cleared", a.probed, b.probed, g)
	}
}
