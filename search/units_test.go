package search

import (
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
	"unsafe"

	"github.com/sessionwatch/sessionwatch/indexer"
)

// TestUnitTableMatchesMap: the writer's open-addressing table of live units
// finds exactly what a map would, through random adds and removals (removal
// shifts later entries of a probe run back), with few distinct hashes' worth
// of table so that probe runs are long (and wrap), and across rehashes to sizes
// that are not powers of two.
func TestUnitTableMatchesMap(t *testing.T) {
	for seed := range uint64(8) {
		rng := rand.New(rand.NewPCG(seed, 7))
		tab := newUnits()
		model := map[[2]string]uint32{}
		var next uint32
		key := func() (string, string) {
			return []string{"wave", "claude", "codex"}[rng.IntN(3)], fmt.Sprintf("p%d/%d.jsonl", rng.IntN(20), rng.IntN(40))
		}
		for step := range 4000 {
			src, rel := key()
			at, ok := tab.find(src, rel)
			id, want := model[[2]string{src, rel}]
			if ok != want || ok && tab.recs[at].id != id {
				t.Fatalf("seed %d step %d: find(%s, %s) = slot %d, %v; want id %d, %v", seed, step, src, rel, at, ok, id, want)
			}
			switch {
			case !ok && rng.IntN(3) > 0:
				tab.add(next, unitPos{rel: rel, src: tab.srcIndex(src)})
				model[[2]string{src, rel}] = next
				next++
			case ok && rng.IntN(2) == 0:
				tab.remove(at)
				delete(model, [2]string{src, rel})
			}
			if tab.n != len(model) {
				t.Fatalf("seed %d step %d: %d live units, want %d", seed, step, tab.n, len(model))
			}
			if step%97 == 96 {
				// Any size that keeps the load under 3/4, as Load's (not a power of two).
				tab.rehash(max(16, 4*(tab.n+1)/3+1+rng.IntN(5)))
			}
		}
		for k, id := range model {
			if at, ok := tab.find(k[0], k[1]); !ok || tab.recs[at].id != id {
				t.Errorf("seed %d: %v lost (slot %d, %v)", seed, k, at, ok)
			}
		}
	}
}

// TestUnitFingerprints: a fingerprint is given back as it was handed over,
// whatever its form (16 hex digits are kept as 8 bytes).
func TestUnitFingerprints(t *testing.T) {
	tab := newUnits()
	for i, fp := range []string{"", "0123456789abcdef", "ffffffffffffffff", "0000000000000000", "short", "0123456789ABCDEF", "0123456789abcde", "0123456789abcdefa"} {
		h := hotUnit{id: uint32(i)}
		tab.setFp(&h, fp)
		if got := tab.fpOf(&h); got != fp {
			t.Errorf("fpOf(setFp(%q)) = %q", fp, got)
		}
		if !tab.sameFp(&h, fp) || tab.sameFp(&h, fp+"0") || fp != "" && tab.sameFp(&h, "") {
			t.Errorf("sameFp after setFp(%q) is wrong", fp)
		}
		if tab.sameFp(&h, "fedcba9876543210") {
			t.Errorf("setFp(%q) is the same as another fingerprint", fp)
		}
	}
}

// TestUnitRecordsAfterReopen: what the writer no longer keeps in memory (a
// unit's layout, absolute path, a document's sessions and projects) is read
// back from its record when the record is written again after a reopen; a unit
// found by a call keeps the caller's string for its path; Resume gives back every
// unit's position.
func TestUnitRecordsAfterReopen(t *testing.T) {
	s := newStore(t)
	meta := `{"type":"metadata","workdir":"/w/p","createdAt":"2026-01-01T00:00:00Z"}` + "\n"
	pa := s.write("wave", "p/"+uuid1+".jsonl", meta+waveMsg("2026-01-01T00:00:01Z", "user", "fix the parser"))
	s.write("wave", "p/"+uuid2+".jsonl", meta+waveMsg("2026-01-01T00:00:02Z", "user", "deploy the parser"))
	s.write("mogzi", "0197a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b/session.json", `{"id":"m1","name":"n","createdAt":"2026-01-01T00:00:00Z","history":[{"role":"user","content":"mogzi parser talk"}]}`)
	x, _ := s.index(Options{})
	x.Close()
	dir := filepath.Join(s.state, DirName)
	before := records(t, dir)

	x, err := Open(Options{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range before {
		if r.State != unitLive {
			continue
		}
		rel := strings.Clone(r.Rel)
		off, fp, ok := x.Resume(indexer.UnitRef{Source: r.Source, Unit: rel, Dev: r.Dev, Ino: r.Ino})
		if !ok || off != r.Offset || fp != r.Fp {
			t.Errorf("Resume(%s) = %d, %q, %v; want %d, %q", r.Rel, off, fp, ok, r.Offset, r.Fp)
		}
		at, _ := x.u.find(r.Source, rel)
		if x.u.recs[at].rel != unsafe.Pointer(unsafe.StringData(rel)) {
			t.Errorf("%s: the unit keeps its own copy of the path, not the caller's", r.Rel)
		}
		if _, _, ok := x.Resume(indexer.UnitRef{Source: r.Source, Unit: rel, Dev: r.Dev, Ino: r.Ino + 1}); ok {
			t.Errorf("Resume(%s) of another inode is ok", r.Rel)
		}
	}
	// The mogzi document's project changes, a wave unit grows: their records
	// are written again from what is on disk.
	mref := unitRefOf(before, "mogzi")
	if mref.Unit == "" {
		t.Fatal("no mogzi unit indexed")
	}
	var wref indexer.UnitRef // the wave unit that does not grow
	for _, r := range before {
		if r.Source == "wave" && r.Path != pa {
			wref = indexer.UnitRef{Source: r.Source, Layout: r.Layout, Unit: r.Rel, Path: r.Path, Dev: r.Dev, Ino: r.Ino}
		}
	}
	if err := x.Sync([]indexer.SessionRef{{UnitRef: mref, ID: "m1", Project: "/w/elsewhere"}, {UnitRef: wref, ID: uuid2, Project: "/w/moved"}}); err != nil {
		t.Fatal(err)
	}
	x.Close()
	s.write("wave", "p/"+uuid1+".jsonl", waveMsg("2026-01-01T00:00:03Z", "user", "more parser work"))
	x, _ = s.index(Options{})
	x.Close()
	after := records(t, dir)
	for id, b := range before {
		a := after[id]
		if a == nil {
			t.Errorf("unit %d (%s) has no record after", id, b.Rel)
			continue
		}
		want := *b
		switch {
		case b.Source == "mogzi":
			want.Projs = []string{"/w/elsewhere"}
		case b.Path == wref.Path:
			want.Projs = []string{"/w/moved"}
		case b.Path == pa:
			want.Offset, want.Fp = a.Offset, a.Fp
			if a.Offset <= b.Offset {
				t.Errorf("%s: offset %d after an append, was %d", b.Rel, a.Offset, b.Offset)
			}
		}
		if fmt.Sprint(*a) != fmt.Sprint(want) {
			t.Errorf("record of unit %d:\n got %+v\nwant %+v", id, *a, want)
		}
	}
	if diffs, err := CheckAgainstRebuild(s.cfg); err != nil || len(diffs) > 0 {
		t.Errorf("CheckAgainstRebuild = %v, %v; want no differences", diffs, err)
	}
}

// records reads every unit's current record of the committed index in dir.
func records(t *testing.T, dir string) map[uint32]*unitRec {
	t.Helper()
	r, err := OpenReader(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	us, err := r.allUnits()
	if err != nil {
		t.Fatal(err)
	}
	return us
}

// unitRefOf names the live unit of a source in recs.
func unitRefOf(recs map[uint32]*unitRec, source string) indexer.UnitRef {
	for _, r := range recs {
		if r.Source == source && r.State == unitLive {
			return indexer.UnitRef{Source: r.Source, Layout: r.Layout, Unit: r.Rel, Path: r.Path, Dev: r.Dev, Ino: r.Ino}
		}
	}
	return indexer.UnitRef{}
}

// TestMergeCopiesNewestRecords: a merge's unit records, copied one at a time from
// its inputs, are the newest of each id; a full merge leaves out exactly the
// dead and the removed-without-archive ones (and forgets them), a partial one
// none; the docs of an id whose end is not yet committed are kept.
func TestMergeCopiesNewestRecords(t *testing.T) {
	dir := filepath.Join(t.TempDir(), DirName)
	archived := map[string]bool{}
	x, err := Open(Options{Dir: dir, MaxSegments: 1000, KeepRemoved: func(source, path string, _ time.Time) bool { return archived[path] }})
	if err != nil {
		t.Fatal(err)
	}
	defer x.Close()
	ref := func(i int) indexer.UnitRef {
		return indexer.UnitRef{Source: []string{"wave", "claude"}[i%2], Layout: "wave", Unit: fmt.Sprintf("p%d/u%d.jsonl", i%3, i), Path: fmt.Sprintf("/r/p%d/u%d.jsonl", i%3, i), Dev: 1, Ino: uint64(100 + i)}
	}
	offs := map[int]int64{}
	add := func(i int, word string) {
		line := fmt.Sprintf(`{"timestamp":"2026-01-01T00:00:00Z","id":"m","role":"user","blocks":[{"type":"text","content":"%s unit%d"}]}`, word, i)
		x.Line(ref(i), offs[i], []byte(line))
		offs[i] += int64(len(line) + 1)
		x.Done(ref(i), offs[i], fmt.Sprintf("%016x", offs[i]))
	}
	sync := func() {
		t.Helper()
		var ss []indexer.SessionRef
		for i := range 12 {
			ss = append(ss, indexer.SessionRef{UnitRef: ref(i), ID: fmt.Sprint(i), Project: fmt.Sprintf("/proj%d", i%3)})
		}
		if err := x.Sync(ss); err != nil {
			t.Fatal(err)
		}
	}
	for round := range 4 {
		for i := range 12 {
			if (i+round)%3 == 0 {
				add(i, fmt.Sprintf("round%d", round))
			}
		}
		sync()
	}
	x.Reset(ref(1)) // dead; the unit comes back under a new id
	offs[1] = 0
	add(1, "again")
	x.Remove(ref(2)) // removed, archived
	archived[ref(2).Path] = true
	x.Remove(ref(4)) // removed, not archived
	sync()
	before := records(t, dir)
	dead, removed := 0, 0
	for _, r := range before {
		switch r.State {
		case unitDead:
			dead++
		case unitRemoved:
			removed++
		}
	}
	if dead != 1 || removed != 2 || x.Segments() < 5 {
		t.Fatalf("before: %d dead, %d removed, %d segments; want 1, 2 and at least 5", dead, removed, x.Segments())
	}
	// A partial merge of the newest segments keeps every record, the newest.
	x.mu.Lock()
	err = x.mergeLocked(2)
	x.mu.Unlock()
	if err != nil {
		t.Fatal(err)
	}
	if got := records(t, dir); recsString(got) != recsString(before) {
		t.Errorf("after a partial merge the records differ:\n got %v\nwant %v", recsString(got), recsString(before))
	}
	// An end not yet committed does not drop the unit's docs.
	x.mu.Lock()
	x.endLocked(ref(5), unitDead)
	job := x.planMergeLocked(0, false)
	s, err := job.build()
	x.mu.Unlock()
	if err != nil {
		t.Fatal(err)
	}
	if n := docsOf(t, s, before, ref(5).Unit); n == 0 {
		t.Errorf("a merge dropped the docs of a unit whose end was not committed")
	}
	s.close()
	os.Remove(s.name)
	// A full merge after the commit drops the dead and the unarchived.
	if err := x.Compact(); err != nil {
		t.Fatal(err)
	}
	after := records(t, dir)
	for id, b := range before {
		a, gone := after[id], b.State == unitDead || b.State == unitRemoved && !archived[b.Path] || b.Rel == ref(5).Unit
		if gone != (a == nil) {
			t.Errorf("unit %d (%s, state %d): record kept %v after a full merge", id, b.Rel, b.State, a != nil)
		}
		if a != nil && b.Rel != ref(5).Unit && fmt.Sprint(*a) != fmt.Sprint(*b) {
			t.Errorf("unit %d: record %+v after a full merge, was %+v", id, *a, *b)
		}
	}
	x.mu.Lock()
	if len(x.u.ended) != 1 {
		t.Errorf("%d ended ids remembered after a full merge, want 1 (the archived one)", len(x.u.ended))
	}
	x.mu.Unlock()
}

// docsOf counts the docs of the unit rel in segment s.
func docsOf(t *testing.T, s *segment, recs map[uint32]*unitRec, rel string) int {
	t.Helper()
	n := 0
	for i := range uint32(s.ft.ndocs) {
		d, err := s.doc(i)
		if err != nil {
			t.Fatal(err)
		}
		if r := recs[d.Unit]; r != nil && r.Rel == rel {
			n++
		}
	}
	return n
}

// recsString prints records by id, by value.
func recsString(recs map[uint32]*unitRec) string {
	var b strings.Builder
	for id := range uint32(1 << 16) {
		if r := recs[id]; r != nil {
			fmt.Fprintf(&b, "%+v\n", *r)
		}
	}
	return b.String()
}

// FuzzDecodeUnit: a unit record decoded in place never reads out of bounds; one
// that decodes encodes back to a record that decodes the same, and the writer's
// table, given it, gives back its position and fingerprint.
func FuzzDecodeUnit(f *testing.F) {
	for _, u := range []unitRec{
		{ID: 7, Dev: 2049, Ino: 123456, Offset: 4096, Fp: "0123456789abcdef", Source: "claude", Layout: "claude", Rel: "p/a.jsonl", Path: "/h/p/a.jsonl", Projs: []string{"/w/p"}},
		{ID: 8, State: unitRemoved, RemovedAt: 1767225600, Fp: "short", Source: "mogzi", Layout: "mogzi", Rel: "d/session.json", Path: "/m/d/session.json", Sids: []string{"s1", "s2"}, Projs: []string{"/a", ""}},
		{ID: 1<<32 - 1, State: unitDead, RemovedAt: -1},
	} {
		b := appendUnit(nil, &u)
		f.Add(b)
		f.Add(b[:len(b)/2])
	}
	f.Add([]byte{0x80})
	f.Fuzz(func(t *testing.T, b []byte) {
		var v recView
		n := v.decode(b)
		if n <= 0 {
			return
		}
		if n > len(b) {
			t.Fatalf("decode consumed %d of %d bytes", n, len(b))
		}
		u := v.rec()
		again := appendUnit(nil, u)
		u2, m := decodeUnit(again)
		if m != len(again) || fmt.Sprint(*u2) != fmt.Sprint(*u) {
			t.Fatalf("re-encoded record decodes as %+v (%d of %d bytes), want %+v", u2, m, len(again), *u)
		}
		if v.state != unitLive {
			return
		}
		tab := newUnits()
		tab.fold(&v)
		tab.rehash(16)
		at, ok := tab.find(u.Source, u.Rel)
		if !ok {
			t.Fatalf("folded unit %+v not found", *u)
		}
		h := &tab.recs[at]
		p := tab.pos(h)
		if h.id != u.ID || p.off != u.Offset || p.ino != u.Ino || tab.devs[p.dev] != u.Dev || tab.fpOf(h) != u.Fp || tab.srcs[p.src] != u.Source || p.rel != u.Rel {
			t.Fatalf("folded unit gives back %+v, fingerprint %q; want %+v", p, tab.fpOf(h), *u)
		}
	})
}
