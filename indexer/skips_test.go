package indexer

import (
	"fmt"
	"math"
	mrand "math/rand"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
)

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
	u.setSkipped(math.MaxInt) // past int32 on a 64-bit int; clamped either way
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

// TestSkippedSumMatchesRebuild: the skipped lines a long-lived indexer reports
// (Stats, its parked sessions' sums and its held ones') equal a fresh
// rebuild's after each change: a flush that parks, a truncate of a parked
// unit, an append, a restart, a removal.
func TestSkippedSumMatchesRebuild(t *testing.T) {
	root, state := t.TempDir(), t.TempDir()
	files := make([]string, 4)
	for i := range files {
		dir := filepath.Join(root, fmt.Sprint("p", i%2))
		os.MkdirAll(dir, 0o700)
		files[i] = filepath.Join(dir, fmt.Sprintf("aaaaaaaa-0000-4000-8000-00000000000%d.jsonl", i))
		body := `{"type":"metadata","workdir":"/w/p` + fmt.Sprint(i%2) + `","createdAt":"2026-01-01T00:00:00Z"}` + "\n"
		for j := 0; j <= i; j++ {
			body += "not json\n" + msg("2026-01-01T00:00:01Z", "x")
		}
		appendFile(t, files[i], body)
	}
	rebuilt := func() int {
		t.Helper()
		st2 := t.TempDir()
		fresh := newLayoutIndexer(t, "wave", root, st2, false)
		if err := fresh.Reconcile(); err != nil {
			t.Fatal(err)
		}
		return fresh.Stats().SkippedLines
	}
	check := func(ix *Indexer, when string) {
		t.Helper()
		if got, want := ix.Stats().SkippedLines, rebuilt(); got != want {
			t.Errorf("%s: SkippedLines %d, a rebuild's %d", when, got, want)
		}
		n := 0
		for _, s := range ix.Sessions() {
			n += s.SkippedLines
		}
		if want := rebuilt(); n != want {
			t.Errorf("%s: sessions' SkippedLines sum %d, a rebuild's %d", when, n, want)
		}
	}
	ix := newLayoutIndexer(t, "wave", root, state, false)
	if err := ix.Reconcile(); err != nil {
		t.Fatal(err)
	}
	if rebuilt() == 0 {
		t.Fatal("no skipped lines: the test tests nothing")
	}
	check(ix, "first pass")
	// Truncate a parked unit to fewer skipped lines.
	os.WriteFile(files[3], []byte(msg("2026-01-05T00:00:00Z", "new")+"junk\n"), 0o600)
	if err := ix.Update([]string{files[3]}); err != nil {
		t.Fatal(err)
	}
	check(ix, "after truncate")
	appendFile(t, files[2], "more junk\n"+msg("2026-01-06T00:00:00Z", "y"))
	if err := ix.Update([]string{files[2]}); err != nil {
		t.Fatal(err)
	}
	check(ix, "after append")
	ix2 := newLayoutIndexer(t, "wave", root, state, false)
	if err := ix2.Load(); err != nil {
		t.Fatal(err)
	}
	if err := ix2.Reconcile(); err != nil {
		t.Fatal(err)
	}
	check(ix2, "after restart")
	appendFile(t, files[1], "junk again\n")
	if err := ix2.Update([]string{files[1]}); err != nil {
		t.Fatal(err)
	}
	check(ix2, "append after restart")
	os.Remove(files[0])
	if err := ix2.Update([]string{files[0]}); err != nil {
		t.Fatal(err)
	}
	check(ix2, "after remove")
	os.WriteFile(files[1], []byte("x\ny\n"+msg("2026-01-07T00:00:00Z", "z")), 0o600)
	if err := ix2.Update([]string{files[1]}); err != nil {
		t.Fatal(err)
	}
	check(ix2, "truncate after restart")
	ix2.Release()
	if err := ix2.Load(); err != nil {
		t.Fatal(err)
	}
	if err := ix2.Reconcile(); err != nil {
		t.Fatal(err)
	}
	check(ix2, "after release and load")
}

// TestSkippedLinesAllocateNothing: counting a file's skipped lines costs no
// allocation per line (a file of 100k lines that are not JSON allocates about
// what one of 1k does).
func TestSkippedLinesAllocateNothing(t *testing.T) {
	mallocs := func(n int) uint64 {
		root, state := t.TempDir(), t.TempDir()
		dir := filepath.Join(root, "p")
		os.MkdirAll(dir, 0o700)
		file := filepath.Join(dir, uuidA+".jsonl")
		appendFile(t, file, msg("2026-01-01T00:00:00Z", "one")+"junk\n"+strings.Repeat("not json\n", n))
		ix := newLayoutIndexer(t, "wave", root, state, false)
		var a, b runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&a)
		if err := ix.Reconcile(); err != nil {
			t.Fatal(err)
		}
		runtime.ReadMemStats(&b)
		if got := ix.Stats().SkippedLines; got != n+1 {
			t.Fatalf("SkippedLines %d, want %d", got, n+1)
		}
		return b.Mallocs - a.Mallocs
	}
	small, large := mallocs(1000), mallocs(100_000)
	if large > small+10_000 {
		t.Errorf("reading 99k more skipped lines made %d more allocations (%d, %d)", large-small, small, large)
	}
}

// TestProbeGenWrapAtStart: a Start whose listing takes the walk mark past
// 65535 drops the unit of a file that vanished (marked by the walk 65535
// walks before, it must not pass for seen) and keeps the live ones, whether
// the listing was made early (Prove) or by Start itself.
func TestProbeGenWrapAtStart(t *testing.T) {
	requireRawListing(t)
	for _, early := range []bool{false, true} {
		t.Run(fmt.Sprint("early=", early), func(t *testing.T) {
			root, state := t.TempDir(), t.TempDir()
			dir := filepath.Join(root, "p")
			os.MkdirAll(dir, 0o700)
			var files []string
			for i := range 3 {
				f := filepath.Join(dir, fmt.Sprintf("aaaaaaaa-0000-4000-8000-00000000000%d.jsonl", i))
				appendFile(t, f, msg("2026-01-01T00:00:00Z", fmt.Sprint("m", i)))
				files = append(files, f)
			}
			if err := newLayoutIndexer(t, "wave", root, state, false).Reconcile(); err != nil {
				t.Fatal(err)
			}
			ix := newLayoutIndexer(t, "wave", root, state, false)
			if err := ix.Load(); err != nil {
				t.Fatal(err)
			}
			// Every unit marked by the walk that took mark 1, the next to last
			// mark before the wrap taken since.
			ix.mu.Lock()
			for u := range ix.units.all() {
				u.probed = 1
			}
			ix.probeGen = 1<<16 - 1
			ix.mu.Unlock()
			os.Remove(files[1])
			if early {
				// As the daemon does: listed ahead (Prove), then StartAll,
				// which takes the early listing.
				g := &Group{indexers: []*Indexer{ix}}
				g.ProveAll()
				ix.mu.Lock()
				if ix.proof == nil || ix.probeGen != 1 {
					t.Fatalf("no early listing, or not at the wrap (mark %d)", ix.probeGen)
				}
				ix.mu.Unlock()
				if err := g.StartAll(); err != nil {
					t.Fatal(err)
				}
			} else if err := ix.Start(); err != nil {
				t.Fatal(err)
			}
			if ix.rawStarts != 1 {
				t.Fatalf("%d Starts by a listing, want 1", ix.rawStarts)
			}
			var got []string
			for _, s := range ix.Sessions() {
				got = append(got, filepath.Base(s.File))
			}
			slices.Sort(got)
			want := []string{filepath.Base(files[0]), filepath.Base(files[2])}
			if !slices.Equal(got, want) {
				t.Errorf("sessions after a Start at the wrap: %v, want %v", got, want)
			}
			if !ix.Unchanged() {
				t.Errorf("Unchanged after Start = false, want true")
			}
		})
	}
}

// TestStatsModel: random changes to a store (appends with lines skipped,
// truncates, replacements, removals), with restarts from the catalogs between
// them: a long-lived indexer's counts (sessions, bytes, skipped lines,
// projects; its parked sessions' sums with its held ones') are a rebuild's.
func TestStatsModel(t *testing.T) {
	for seed := int64(1); seed <= 4; seed++ {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			root, state := t.TempDir(), t.TempDir()
			ix := newLayoutIndexer(t, "wave", root, state, false)
			ix.Reconcile()
			rng := mrand.New(mrand.NewSource(seed))
			m := newModelOps(t, root, rng)
			for step := range 160 {
				touched := m.step()
				if err := ix.Update(touched); err != nil {
					t.Fatal(err)
				}
				if step%40 == 39 {
					ix = newLayoutIndexer(t, "wave", root, state, false)
					if err := ix.Load(); err != nil {
						t.Fatal(err)
					}
					if err := ix.Start(); err != nil {
						t.Fatal(err)
					}
				}
				if step%20 != 19 {
					continue
				}
				fresh := newLayoutIndexer(t, "wave", root, t.TempDir(), false)
				if err := fresh.Reconcile(); err != nil {
					t.Fatal(err)
				}
				got, want := ix.Stats(), fresh.Stats()
				if got.Sessions != want.Sessions || got.Bytes != want.Bytes || got.SkippedLines != want.SkippedLines || got.Projects != want.Projects {
					t.Fatalf("step %d: sessions %d, bytes %d, skipped %d, projects %d; a rebuild's %d, %d, %d, %d", step,
						got.Sessions, got.Bytes, got.SkippedLines, got.Projects, want.Sessions, want.Bytes, want.SkippedLines, want.Projects)
				}
			}
		})
	}
}
