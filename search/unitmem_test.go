package search

import (
	"fmt"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/sessionwatch/sessionwatch/indexer"
)

// TestOpenHeapPerUnit: once every unit has been named by a call (as the
// daemon's first pass does), the writer keeps at most ~40 bytes per live unit:
// its slot, its share of the lookup table and of the segments' sparse unit
// tables; not its path (the caller's string), project or record.
func TestOpenHeapPerUnit(t *testing.T) {
	const n = 20000
	dir := genIndex(t, n)
	r, err := OpenReader(dir)
	if err != nil {
		t.Fatal(err)
	}
	us, err := r.allUnits()
	r.Close()
	if err != nil {
		t.Fatal(err)
	}
	var refs []indexer.UnitRef
	for _, u := range us {
		if u.State == unitLive {
			refs = append(refs, indexer.UnitRef{Source: u.Source, Layout: u.Layout, Unit: u.Rel, Path: u.Path, Dev: u.Dev, Ino: u.Ino})
		}
	}
	if len(refs) != n {
		t.Fatalf("%d live units, want %d", len(refs), n)
	}
	runtime.GC()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	x, err := Open(Options{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	defer x.Close()
	for _, u := range refs {
		if _, _, ok := x.Resume(u); !ok {
			t.Fatalf("Resume(%s) found nothing", u.Unit)
		}
	}
	runtime.GC()
	runtime.ReadMemStats(&after)
	per := (float64(after.HeapAlloc) - float64(before.HeapAlloc)) / n
	t.Logf("%.1f bytes per unit", per)
	if per > 44 {
		t.Errorf("the open index keeps %.1f bytes per named unit, want <= 44", per)
	}
	runtime.KeepAlive(refs)
}

// TestUnitWidePositions: a unit whose offset or inode does not fit 32 bits, or
// on a 16th device or of a 16th source, is found and given back whole, before
// and after a reopen, and moves between the slot and the wide map as its
// position changes.
func TestUnitWidePositions(t *testing.T) {
	dir := filepath.Join(t.TempDir(), DirName)
	x, err := Open(Options{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	type want struct {
		ref indexer.UnitRef
		off int64
		fp  string
	}
	var ws []want
	for i := range 40 {
		u := indexer.UnitRef{Source: fmt.Sprintf("src%02d", i%20), Layout: "wave", Unit: fmt.Sprintf("p%d/u%d.jsonl", i%3, i), Path: fmt.Sprintf("/s/p/u%d.jsonl", i), Dev: uint64(100 + i%18), Ino: uint64(1000 + i)}
		off := int64(100 + i)
		switch i % 4 {
		case 1:
			off = 1<<32 + int64(i)
		case 2:
			u.Ino = 1<<40 + uint64(i)
		case 3:
			off = 1<<32 - 1
			u.Ino = 1<<32 - 1
		}
		line := fmt.Sprintf(`{"timestamp":"2026-01-01T00:00:00Z","id":"m%d","role":"user","blocks":[{"type":"text","content":"wide unit %d"}]}`, i, i)
		x.Line(u, 0, []byte(line))
		x.Done(u, off, fmt.Sprintf("%016x", i))
		ws = append(ws, want{u, off, fmt.Sprintf("%016x", i)})
	}
	check := func(x *Index, when string) {
		t.Helper()
		for _, w := range ws {
			off, fp, ok := x.Resume(w.ref)
			if !ok || off != w.off || fp != w.fp {
				t.Errorf("%s: Resume(%s %s) = %d, %q, %v; want %d, %q", when, w.ref.Source, w.ref.Unit, off, fp, ok, w.off, w.fp)
			}
		}
	}
	check(x, "before the commit")
	if err := x.Sync(nil); err != nil {
		t.Fatal(err)
	}
	x.Close()
	if x, err = Open(Options{Dir: dir}); err != nil {
		t.Fatal(err)
	}
	check(x, "after a reopen")
	// Narrow units turn wide and wide ones narrow.
	for i := range ws {
		w := &ws[i]
		if w.off > 1<<32 {
			w.off = 7
		} else {
			w.off += 1 << 33
		}
		x.Done(w.ref, w.off, w.fp)
	}
	check(x, "after the moves")
	if err := x.Sync(nil); err != nil {
		t.Fatal(err)
	}
	x.Close()
	if x, err = Open(Options{Dir: dir}); err != nil {
		t.Fatal(err)
	}
	defer x.Close()
	check(x, "after the moves and a reopen")
	if got := len(x.u.wide); got == 0 || got == len(ws) {
		t.Errorf("%d of %d units in the wide map", got, len(ws))
	}
}

// TestUnitTableOnDisk: the writer finds a unit's record in a segment through
// the sparse keys of its unit table (one stride read), and its passes in order
// (Open, a merge) read the table a window at a time: with more units than a
// window, every record is found and the table after a merge is the same.
func TestUnitTableOnDisk(t *testing.T) {
	const n = tabWindow + 2*tabStride + 5
	if n*unitTabRec <= tabWhole {
		t.Fatal("the table would be kept whole")
	}
	dir := genIndex(t, n)
	before := records(t, dir)
	x, err := Open(Options{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	defer x.Close()
	if x.liveUnits() != n {
		t.Fatalf("%d live units after Open, want %d", x.liveUnits(), n)
	}
	if s := x.segs[0]; s.tab != nil || len(s.tabKeys) != (n+tabStride-1)/tabStride {
		t.Fatalf("the merged segment's table: %d bytes in memory, %d keys", len(s.tab), len(s.tabKeys))
	}
	for id, want := range before {
		got, err := x.diskRecordLocked(id)
		if err != nil || fmt.Sprint(*got) != fmt.Sprint(*want) {
			t.Fatalf("record of %d = %+v, %v; want %+v", id, got, err, *want)
		}
	}
	if _, err := x.diskRecordLocked(uint32(n + 1000)); err == nil {
		t.Error("a record of an id never given is found")
	}
	if err := x.Compact(); err != nil {
		t.Fatal(err)
	}
	if after := records(t, dir); recsString(after) != recsString(before) {
		t.Errorf("records after a merge differ:\n%s\nwant\n%s", recsString(after), recsString(before))
	}
}
