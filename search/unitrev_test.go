package search

import (
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/sessionwatch/sessionwatch/indexer"
)

// TestSparseUnitTableGaps: a segment's unit table with gaps in its ids (a full
// merge drops dead units' records) is searched through its sparse keys: every
// id present is found, every id absent (before the first, between strides,
// inside a stride, after the last) is not, for table sizes around the stride
// and the in-memory limit (a last stride of one entry, a full last stride).
func TestSparseUnitTableGaps(t *testing.T) {
	dir := t.TempDir()
	rng := rand.New(rand.NewPCG(3, 9))
	for _, n := range []int{tabWhole/unitTabRec - 1, tabWhole / unitTabRec, tabWhole/unitTabRec + 1, tabWhole/unitTabRec + tabStride, tabWhole/unitTabRec + tabStride + 1, 3*tabWindow + 17} {
		var ids []uint32
		have := map[uint32]bool{}
		id := uint32(5 + rng.IntN(3))
		for len(ids) < n {
			ids = append(ids, id)
			have[id] = true
			id += 1 + uint32(rng.IntN(3)) // gaps of 0-2 ids
		}
		path := filepath.Join(dir, fmt.Sprintf("seg-%d.sws", n))
		w, err := newSegWriter(path)
		if err != nil {
			t.Fatal(err)
		}
		var us []*unitRec
		for _, id := range ids {
			us = append(us, &unitRec{ID: id, Source: "wave", Layout: "wave", Rel: fmt.Sprintf("p/u%d.jsonl", id), Path: "/x", Dev: 1, Ino: uint64(id)})
		}
		w.units(us)
		w.docs(nil, 0)
		if err := w.finish(); err != nil {
			t.Fatal(err)
		}
		s, err := openSegment(path, false)
		if err != nil {
			t.Fatal(err)
		}
		if sparse := n*unitTabRec > tabWhole; sparse != (s.tab == nil) {
			t.Fatalf("n=%d: table in memory %v", n, s.tab != nil)
		}
		for q := uint32(0); q <= id+2; q++ {
			u, err := s.unit(q)
			if err != nil {
				t.Fatalf("n=%d: unit(%d): %v", n, q, err)
			}
			if got := u != nil; got != have[q] {
				t.Fatalf("n=%d: unit(%d) found %v, want %v", n, q, got, have[q])
			}
			if u != nil && (u.ID != q || u.Ino != uint64(q)) {
				t.Fatalf("n=%d: unit(%d) = %+v", n, q, *u)
			}
		}
		s.close()
	}
}

// TestUnitPathLengths: units whose paths are empty, at the 16-bit length limit
// or past it (kept in the wide map) are found, given back, removed and stay
// removed across reopens; the other units are untouched.
func TestUnitPathLengths(t *testing.T) {
	dir := filepath.Join(t.TempDir(), DirName)
	x, err := Open(Options{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	var refs []indexer.UnitRef
	for i, n := range []int{0, 1, 1024, 1025, 65535, 65536, 70000} {
		rel := strings.Repeat("a", n)
		if n > 0 {
			rel = rel[:n-1] + fmt.Sprint(i%10)
		}
		u := indexer.UnitRef{Source: "wave", Layout: "wave", Unit: rel, Path: "/p", Dev: 7, Ino: uint64(10 + i)}
		line := fmt.Sprintf(`{"timestamp":"2026-01-01T00:00:00Z","id":"m%d","role":"user","blocks":[{"type":"text","content":"length probe %d"}]}`, i, i)
		x.Line(u, 0, []byte(line))
		x.Done(u, int64(100+i), fmt.Sprintf("%016x", i))
		refs = append(refs, u)
	}
	check := func(x *Index, when string, live func(i int) bool) {
		t.Helper()
		for i, u := range refs {
			off, fp, ok := x.Resume(u)
			if want := live(i); ok != want || ok && (off != int64(100+i) || fp != fmt.Sprintf("%016x", i)) {
				t.Errorf("%s: Resume(len %d) = %d, %q, %v; want live %v", when, len(u.Unit), off, fp, ok, want)
			}
		}
	}
	all := func(int) bool { return true }
	check(x, "before the commit", all)
	if err := x.Sync(nil); err != nil {
		t.Fatal(err)
	}
	x.Close()
	if x, err = Open(Options{Dir: dir}); err != nil {
		t.Fatal(err)
	}
	check(x, "after a reopen", all)
	odd := func(i int) bool { return i%2 == 0 }
	for i, u := range refs {
		if !odd(i) {
			x.Remove(u)
		}
	}
	check(x, "after removals", odd)
	if err := x.Sync(nil); err != nil {
		t.Fatal(err)
	}
	x.Close()
	if x, err = Open(Options{Dir: dir}); err != nil {
		t.Fatal(err)
	}
	defer x.Close()
	check(x, "after removals and a reopen", odd)
	if err := x.Compact(); err != nil {
		t.Fatal(err)
	}
	check(x, "after a merge", odd)
}

// TestSparseLookupsDuringBackgroundMerges: commits read records back through
// the sparse unit table of a large segment while background merges read the
// same table a window at a time (and then replace the segment): every record
// stays right (offsets, projects), before and after a reopen.
func TestSparseLookupsDuringBackgroundMerges(t *testing.T) {
	const n = 3000
	dir := genIndex(t, n)
	before := records(t, dir)
	byRel := map[string]*unitRec{}
	for _, r := range before {
		if r.State == unitLive {
			byRel[r.Rel] = r
		}
	}
	x, err := Open(Options{Dir: dir, MergeBudget: 1, MaxSegments: 2})
	if err != nil {
		t.Fatal(err)
	}
	if s := x.segs[0]; s.tab != nil {
		t.Fatal("the first segment's table is kept whole")
	}
	rng := rand.New(rand.NewPCG(1, 2))
	var live []*unitRec
	for _, r := range byRel {
		live = append(live, r)
	}
	slices.SortFunc(live, func(a, b *unitRec) int { return strings.Compare(a.Rel, b.Rel) })
	for round := range 40 {
		var refs []indexer.SessionRef
		for range 40 {
			r := live[rng.IntN(len(live))]
			u := indexer.UnitRef{Source: r.Source, Layout: r.Layout, Unit: r.Rel, Path: r.Path, Dev: r.Dev, Ino: r.Ino}
			line := fmt.Sprintf(`{"timestamp":"2026-01-01T00:00:00Z","id":"r%d","role":"user","blocks":[{"type":"text","content":"round %d"}]}`, round, round)
			x.Line(u, r.Offset, []byte(line))
			r.Offset += int64(len(line) + 1)
			x.Done(u, r.Offset, r.Fp)
			if round%3 == 0 {
				r.Projs = []string{fmt.Sprintf("/moved/%d", round)}
			}
			refs = append(refs, indexer.SessionRef{UnitRef: u, ID: "s", Project: r.Projs[0]})
		}
		if err := x.Sync(refs); err != nil {
			t.Fatal(err)
		}
	}
	x.mergeWG.Wait()
	if m := x.Stats().Merges; m == 0 {
		t.Error("no merge ran")
	}
	if err := x.Close(); err != nil {
		t.Fatal(err)
	}
	after := records(t, dir)
	for _, want := range live {
		var got *unitRec
		for _, r := range after {
			if r.Rel == want.Rel && r.State == unitLive {
				got = r
			}
		}
		if got == nil || got.Offset != want.Offset || fmt.Sprint(got.Projs) != fmt.Sprint(want.Projs) || got.Path != want.Path {
			t.Fatalf("record of %s = %+v, want %+v", want.Rel, got, *want)
		}
	}
}

// TestEndedWideUnitRecord: a unit kept in the wide map that is removed or
// reset writes its last position whole in its ended record, and the wide map
// lets it go.
func TestEndedWideUnitRecord(t *testing.T) {
	dir := filepath.Join(t.TempDir(), DirName)
	x, err := Open(Options{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	defer x.Close()
	var refs []indexer.UnitRef
	for i := range 20 {
		u := indexer.UnitRef{Source: fmt.Sprintf("s%d", i), Layout: "wave", Unit: fmt.Sprintf("u%d.jsonl", i), Path: fmt.Sprintf("/p/u%d.jsonl", i), Dev: uint64(50 + i), Ino: 1<<33 + uint64(i)}
		line := fmt.Sprintf(`{"timestamp":"2026-01-01T00:00:00Z","id":"m%d","role":"user","blocks":[{"type":"text","content":"wide end %d"}]}`, i, i)
		x.Line(u, 0, []byte(line))
		x.Done(u, 1<<34+int64(i), "odd-fp")
		refs = append(refs, u)
	}
	if err := x.Sync(nil); err != nil {
		t.Fatal(err)
	}
	for i, u := range refs {
		if i%2 == 0 {
			x.Remove(u)
		} else {
			x.Reset(u)
		}
	}
	if err := x.Sync(nil); err != nil {
		t.Fatal(err)
	}
	if len(x.u.wide) != 0 || len(x.u.oddFp) != 0 || x.liveUnits() != 0 {
		t.Errorf("after the ends: %d wide, %d odd fingerprints, %d live", len(x.u.wide), len(x.u.oddFp), x.liveUnits())
	}
	recs := records(t, dir)
	for i, u := range refs {
		var got *unitRec
		for _, r := range recs {
			if r.Rel == u.Unit {
				got = r
			}
		}
		want := byte(unitRemoved)
		if i%2 == 1 {
			want = unitDead
		}
		if got == nil || got.State != want || got.Offset != 1<<34+int64(i) || got.Ino != u.Ino || got.Dev != u.Dev || got.Fp != "odd-fp" || got.Source != u.Source {
			t.Errorf("ended record of %s = %+v", u.Unit, got)
		}
	}
}

// TestUnitsRandomAgainstModel: random Line/Done/Remove/Reset calls over units
// of 20 sources (a 16th and later go wide), on 20 devices, with offsets and
// inodes on either side of 2^32 and paths of every shape, interleaved with
// commits and reopens: Resume gives back exactly what a map of the last Done
// of each live unit holds.
func TestUnitsRandomAgainstModel(t *testing.T) {
	dir := filepath.Join(t.TempDir(), DirName)
	x, err := Open(Options{Dir: dir, MaxSegments: 3})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { x.Close() }()
	type pos struct {
		off int64
		dev uint64
		ino uint64
		fp  string
	}
	type key struct{ src, rel string }
	model := map[key]pos{}
	rng := rand.New(rand.NewPCG(11, 13))
	rels := []string{"", "a", strings.Repeat("b", 70000)}
	for i := range 300 {
		rels = append(rels, fmt.Sprintf("p%d/u%d.jsonl", i%7, i))
	}
	big := func() uint64 {
		if rng.IntN(3) == 0 {
			return 1<<32 - 2 + uint64(rng.IntN(4))
		}
		return uint64(rng.IntN(1000))
	}
	check := func(when string) {
		t.Helper()
		for k, p := range model {
			off, fp, ok := x.Resume(indexer.UnitRef{Source: k.src, Unit: k.rel, Dev: p.dev, Ino: p.ino})
			if !ok || off != p.off || fp != p.fp {
				t.Fatalf("%s: Resume(%s, %.20q) = %d, %q, %v; want %d, %q", when, k.src, k.rel, off, fp, ok, p.off, p.fp)
			}
		}
		if x.liveUnits() != len(model) {
			t.Fatalf("%s: %d live units, want %d", when, x.liveUnits(), len(model))
		}
	}
	for step := range 6000 {
		k := key{fmt.Sprintf("src%d", rng.IntN(20)), rels[rng.IntN(len(rels))]}
		p := model[k]
		u := indexer.UnitRef{Source: k.src, Layout: "wave", Unit: k.rel, Path: "/p", Dev: p.dev, Ino: p.ino}
		switch r := rng.IntN(10); {
		case r < 6:
			if _, ok := model[k]; !ok || rng.IntN(4) == 0 {
				p = pos{off: int64(big()), dev: uint64(rng.IntN(20)), ino: big(), fp: fmt.Sprintf("%016x", rng.Uint64())}
				if rng.IntN(5) == 0 {
					p.fp = fmt.Sprint("odd", step)
				}
			} else {
				p.off = int64(big())
			}
			u.Dev, u.Ino = p.dev, p.ino
			if rng.IntN(2) == 0 {
				x.Line(u, 0, []byte(`{"timestamp":"2026-01-01T00:00:00Z","id":"m","role":"user","blocks":[{"type":"text","content":"random unit"}]}`))
			}
			x.Done(u, p.off, p.fp)
			model[k] = p
		case r < 8:
			x.Remove(u)
			delete(model, k)
		default:
			x.Reset(u)
			delete(model, k)
		}
		if step%500 == 499 {
			check(fmt.Sprintf("step %d", step))
			if err := x.Sync(nil); err != nil {
				t.Fatal(err)
			}
			if step%1000 == 999 {
				x.Close()
				if x, err = Open(Options{Dir: dir, MaxSegments: 3}); err != nil {
					t.Fatal(err)
				}
				check(fmt.Sprintf("step %d, reopened", step))
			}
		}
	}
}

// TestCorruptSparseUnitTable: a large segment whose unit table on disk is
// damaged (an id out of order, an id that names another record, an offset
// off a record's start) is not used: Open rebuilds from nothing rather than
// resuming a unit wrongly.
func TestCorruptSparseUnitTable(t *testing.T) {
	const n = 3000
	base := genIndex(t, n)
	for _, c := range []struct {
		name  string
		entry int
		field int // 0: the id, 4: the offset
		delta int32
	}{
		{"id out of order", 1000, 0, -5},
		{"last id another's", -1, 0, 1}, // still ascending
		{"offset", 2500, 4, 3},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), DirName)
			if err := os.CopyFS(dir, os.DirFS(base)); err != nil {
				t.Fatal(err)
			}
			r, err := OpenReader(dir)
			if err != nil {
				t.Fatal(err)
			}
			var big *segment
			for _, s := range r.segs {
				if s.ft.nunits*unitTabRec > tabWhole {
					big = s
				}
			}
			if big == nil {
				t.Fatal("no large segment")
			}
			entry := c.entry
			if entry < 0 {
				entry += int(big.ft.nunits)
			}
			name, at := big.name, int64(big.ft.unitTabOff)+int64(entry)*unitTabRec+int64(c.field)
			r.Close()
			f, err := os.OpenFile(name, os.O_RDWR, 0)
			if err != nil {
				t.Fatal(err)
			}
			var b [4]byte
			if _, err := f.ReadAt(b[:], at); err != nil {
				t.Fatal(err)
			}
			v := binary.LittleEndian.Uint32(b[:]) + uint32(c.delta)
			binary.LittleEndian.PutUint32(b[:], v)
			if _, err := f.WriteAt(b[:], at); err != nil {
				t.Fatal(err)
			}
			f.Close()
			x, err := Open(Options{Dir: dir})
			if err != nil {
				t.Fatal(err)
			}
			defer x.Close()
			if got := x.liveUnits(); got != 0 {
				t.Errorf("Open of a damaged unit table keeps %d live units, want a rebuild", got)
			}
		})
	}
}
