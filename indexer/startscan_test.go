package indexer

import (
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"
)

// seqRecorder is a recorder that also keeps, per unit, the sequence of calls
// it was handed, and counts Syncs made while some unit was half handed over
// (a Reset or a Line not yet followed by its Done).
type seqRecorder struct {
	*recorder
	smu     sync.Mutex
	seq     map[string][]string // source/unit → calls in order
	open    map[string]bool     // units half handed over
	midSync int                 // Syncs while a unit was open
	// perSource keys the recorder's units by source too (sources whose units
	// have the same names); its Sync then checks no catalog offset.
	perSource bool
}

// ref is u as the recorder keys it.
func (r *seqRecorder) ref(u UnitRef) UnitRef {
	if r.perSource {
		u.Unit = u.Source + "/" + u.Unit
	}
	return u
}

func (r *seqRecorder) Resume(u UnitRef) (int64, string, bool) { return r.recorder.Resume(r.ref(u)) }

func newSeqRecorder(t *testing.T, state string) *seqRecorder {
	return &seqRecorder{recorder: newRecorder(t, state), seq: map[string][]string{}, open: map[string]bool{}}
}

func (r *seqRecorder) add(u UnitRef, call string, open bool) {
	r.smu.Lock()
	defer r.smu.Unlock()
	k := u.Source + "/" + u.Unit
	r.seq[k] = append(r.seq[k], call)
	if open {
		r.open[k] = true
	} else {
		delete(r.open, k)
	}
}

func (r *seqRecorder) Reset(u UnitRef) { r.add(u, "reset", true); r.recorder.Reset(r.ref(u)) }
func (r *seqRecorder) Line(u UnitRef, off int64, line []byte) {
	r.add(u, fmt.Sprintf("line %d %s", off, line), true)
	r.recorder.Line(r.ref(u), off, line)
}
func (r *seqRecorder) Done(u UnitRef, off int64, fp string) {
	r.add(u, fmt.Sprintf("done %d", off), false)
	r.recorder.Done(r.ref(u), off, fp)
}
func (r *seqRecorder) Document(u UnitRef, data []byte, ss []*Session) {
	r.add(u, fmt.Sprintf("document %d", len(data)), true)
	r.recorder.Document(r.ref(u), data, ss)
}
func (r *seqRecorder) Remove(u UnitRef) { r.add(u, "remove", false); r.recorder.Remove(r.ref(u)) }
func (r *seqRecorder) Sync(ss []SessionRef) error {
	r.smu.Lock()
	if len(r.open) > 0 {
		r.midSync++
	}
	r.smu.Unlock()
	return r.recorder.Sync(ss)
}

// calls returns the sequences recorded since the last call, and forgets them.
func (r *seqRecorder) calls() map[string][]string {
	r.smu.Lock()
	defer r.smu.Unlock()
	m := r.seq
	r.seq = map[string][]string{}
	return m
}

// changeWhileDown changes a startStore of 8 projects the way a store changes
// while no daemon runs: an append, a new transcript, one removed, one replaced
// by a copy (another inode, the same size and mtime), temp files left by crashed writers (one old, one
// a retiring session's), a native index removed, one left in a directory with
// no session, a symlink and a file that is no transcript.
func changeWhileDown(t *testing.T, root string, files []string) {
	t.Helper()
	appendFile(t, files[0], msg("2026-01-02T00:00:00Z", "appended while down"))
	appendFile(t, filepath.Join(root, "p1", "aaaaaaaa-0000-4000-8000-000000000099.jsonl"),
		`{"type":"metadata","workdir":"/w/p1","createdAt":"2026-01-01T00:00:00Z"}`+"\n"+msg("2026-01-03T00:00:00Z", "new while down"))
	os.Remove(files[4])
	data, err := os.ReadFile(files[6])
	if err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(files[6])
	if err != nil {
		t.Fatal(err)
	}
	tmp := files[6] + ".copy" // the same bytes and mtime: only the inode tells
	os.WriteFile(tmp, data, 0o600)
	os.Chtimes(tmp, fi.ModTime(), fi.ModTime())
	if err := os.Rename(tmp, files[6]); err != nil {
		t.Fatal(err)
	}
	old := time.Now().Add(-time.Hour)
	for _, name := range []string{TempPrefix + "left", RetirePrefix + "retiring"} {
		p := filepath.Join(root, "p4", name)
		os.WriteFile(p, []byte("x"), 0o600)
		os.Chtimes(p, old, old)
	}
	os.Remove(filepath.Join(root, "p5", CatalogName))
	os.MkdirAll(filepath.Join(root, "empty"), 0o700)
	os.WriteFile(filepath.Join(root, "empty", CatalogName), []byte("{}\n"), 0o600)
	os.Symlink(files[12], filepath.Join(root, "p6", "aaaaaaaa-0000-4000-8000-000000000098.jsonl"))
	os.WriteFile(filepath.Join(root, "p7", "notes.txt"), []byte("not a transcript\n"), 0o600)
}

// storeNames lists the store's files and directories, relative to root.
func storeNames(t *testing.T, root string) []string {
	t.Helper()
	var names []string
	filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
		if err == nil && p != root {
			rel, _ := filepath.Rel(root, p)
			names = append(names, rel)
		}
		return nil
	})
	return names
}

// startOutcome is what a Start did, in terms that do not depend on inodes and
// mtimes: its counters, the consumer calls per unit, the store's files.
type startOutcome struct {
	stats string
	calls map[string][]string
	store []string
	raw   int // Starts walked by a startScan
}

// runStartCase builds a store, indexes it with a consumer attached, changes it
// while "down", and restarts over it with Start: with the raw start walk
// (startScan) or with walkLocked.
func runStartCase(t *testing.T, raw, typeless bool) startOutcome {
	t.Helper()
	defer func(r, tl bool) { startScanRaw, probeTypeless = r, tl }(startScanRaw, probeTypeless)
	startScanRaw, probeTypeless = raw, typeless
	root, state, files := startStore(t, 8)
	rec := newSeqRecorder(t, state)
	first := newLayoutIndexer(t, "wave", root, state, false)
	first.opt.CleanTemps = true
	attach(first, rec)
	if err := first.Reconcile(); err != nil {
		t.Fatal(err)
	}
	changeWhileDown(t, root, files)
	rec.calls()
	ix := newLayoutIndexer(t, "wave", root, state, false)
	ix.opt.CleanTemps = true
	if err := ix.Load(); err != nil {
		t.Fatal(err)
	}
	attach(ix, rec)
	if err := ix.Start(); err != nil {
		t.Fatal(err)
	}
	st := ix.Stats()
	out := startOutcome{
		stats: fmt.Sprintf("read %d B, %d catalog and %d native writes, %d sessions in %d projects",
			st.BytesRead, st.CatalogWrites, st.NativeWrites, st.Sessions, st.Projects),
		calls: rec.calls(),
		store: storeNames(t, root),
		raw:   ix.rawStarts,
	}
	if rec.dup != 0 {
		t.Errorf("a consumer was handed %d lines twice", rec.dup)
	}
	if err := ix.VerifyOutputs(); err != nil {
		t.Fatal(err)
	}
	assertLayoutConverged(t, "wave", root, state)
	return out
}

// requireRawListing skips a test of Start's raw listing where the system has
// none (startscan_other.go): there Start always walks with walkLocked.
func requireRawListing(t *testing.T) {
	t.Helper()
	if !startScanRaw {
		t.Skip("no raw listing on this system: Start walks with walkLocked")
	}
}

// Start's raw walk (getdents and fstatat, startScan) does what walkLocked does
// over a store changed while no daemon ran: the same reads, consumer calls
// per unit, removals, temp files removed and kept, native indexes put right;
// counters, catalogs and native indexes as a rebuild's.
func TestStartScanMatchesWalk(t *testing.T) {
	requireRawListing(t)
	want := runStartCase(t, false, false)
	if want.raw != 0 {
		t.Fatalf("with the raw walk off, %d Starts used it", want.raw)
	}
	if !slices.Contains(want.store, filepath.Join("p4", RetirePrefix+"retiring")) || slices.Contains(want.store, filepath.Join("p4", TempPrefix+"left")) {
		t.Errorf("walkLocked: stale temp file kept or retiring one removed: %v", want.store)
	}
	for _, typeless := range []bool{false, true} {
		got := runStartCase(t, true, typeless)
		if got.raw != 1 {
			t.Errorf("typeless %v: the raw walk was used by %d Starts, want 1", typeless, got.raw)
		}
		if got.stats != want.stats {
			t.Errorf("typeless %v: raw walk: %s; walkLocked: %s", typeless, got.stats, want.stats)
		}
		if !slices.Equal(got.store, want.store) {
			t.Errorf("typeless %v: store after the raw walk:\n%v\nafter walkLocked:\n%v", typeless, got.store, want.store)
		}
		units := slices.Sorted(maps.Keys(want.calls))
		if g := slices.Sorted(maps.Keys(got.calls)); !slices.Equal(g, units) {
			t.Errorf("typeless %v: units handed to the consumer: %v, walkLocked: %v", typeless, g, units)
		}
		for _, u := range units {
			if !slices.Equal(got.calls[u], want.calls[u]) {
				t.Errorf("typeless %v: calls for %s:\n%s\nwalkLocked:\n%s", typeless, u,
					strings.Join(got.calls[u], "\n"), strings.Join(want.calls[u], "\n"))
			}
		}
	}
	if len(want.calls) < 4 {
		t.Errorf("the changes reached %d units, want the append, the new, the removed and the replaced one: %v", len(want.calls), want.calls)
	}
}

// A consumer behind the catalogs (attached since, or its state lost) is handed
// what it lacks by the raw walk too: Start reads the units it lacks although
// their files did not change.
func TestStartScanFeedsAConsumerBehind(t *testing.T) {
	requireRawListing(t)
	root, state, files := startStore(t, 3)
	ix := loadedIndexer(t, root, state)
	rec := newSeqRecorder(t, state)
	attach(ix, rec)
	if err := ix.Start(); err != nil {
		t.Fatal(err)
	}
	if ix.rawStarts != 1 {
		t.Fatalf("Start used the raw walk %d times, want 1", ix.rawStarts)
	}
	for _, f := range files {
		unit, _ := filepath.Rel(root, f)
		if !strings.Contains(rec.text(unit), "prompt") {
			t.Errorf("unit %s not handed to the consumer that lacked it: %q", unit, rec.text(unit))
		}
	}
}

// The sources' walks run at once: a consumer that holds one source's walk
// until another source's walk reaches it is released (one after another, the
// first walk would wait for good). Each unit's calls still come in order, no
// Sync comes while a unit is half handed over, and the outcome is that of
// Starts one after another.
func TestStartAllWalksSourcesAtOnce(t *testing.T) {
	sources := []string{"wa", "wb", "wc"} // three Wave sources: one layout shared by three walks
	build := func() (*Group, *seqRecorder, []string) {
		state := t.TempDir()
		g := &Group{}
		var roots []string
		for i, src := range sources {
			root := filepath.Join(t.TempDir(), src)
			manyWaveSessions(t, root, 12+i)
			ix, err := New(Options{Source: src, Layout: "wave", Root: root, StateDir: state, NativeIndex: true})
			if err != nil {
				t.Fatal(err)
			}
			g.indexers = append(g.indexers, ix)
			roots = append(roots, root)
		}
		g.UseWriterLock(NewWriterLock(state), false)
		rec := newSeqRecorder(t, state)
		rec.perSource = true
		g.AddConsumer(rec)
		if err := g.ReconcileAll(); err != nil {
			t.Fatal(err)
		}
		for i := range sources {
			manyWaveSessions(t, roots[i], 40) // 12+i unchanged, the rest new
		}
		rec.calls()
		g2 := &Group{}
		for i, src := range sources {
			ix, _ := New(Options{Source: src, Layout: "wave", Root: roots[i], StateDir: state, NativeIndex: true})
			g2.indexers = append(g2.indexers, ix)
		}
		g2.UseWriterLock(NewWriterLock(state), false)
		if err := g2.Load(); err != nil {
			t.Fatal(err)
		}
		g2.AddConsumer(rec)
		return g2, rec, roots
	}

	// One after another.
	gs, rs, _ := build()
	if err := gs.startEach(); err != nil {
		t.Fatal(err)
	}
	want := rs.calls()

	// At once, with a gate: the first Resume of source wa waits until source
	// wb has asked too.
	g, rec, _ := build()
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(max(2, runtime.GOMAXPROCS(0)))) // a walk per core: two at least
	gate := &gateConsumer{seqRecorder: rec, hold: "wa", until: "wb", released: make(chan struct{})}
	for _, ix := range g.indexers {
		ix.consumers = []Consumer{gate}
	}
	errc := make(chan error, 1)
	go func() { errc <- g.StartAll() }()
	select {
	case err := <-errc:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("StartAll did not finish: the sources' walks do not run at once")
	}
	if gate.waited == 0 {
		t.Error("the gate held no walk")
	}
	if gate.timedOut {
		t.Error("source wa's walk waited 10 s for source wb's, which did not begin meanwhile: the walks do not run at once")
	}
	got := rec.calls()
	if rec.midSync != 0 {
		t.Errorf("%d Syncs came while a unit was half handed over", rec.midSync)
	}
	keys := slices.Sorted(maps.Keys(want))
	if len(keys) != 3*40-(12+13+14) {
		t.Fatalf("only %d units handed over", len(keys))
	}
	if g := slices.Sorted(maps.Keys(got)); !slices.Equal(g, keys) {
		var miss []string
		for _, k := range keys {
			if _, ok := got[k]; !ok {
				miss = append(miss, k+": "+strings.Join(want[k], "; "))
			}
		}
		t.Fatalf("units handed over at once: %d, one after another: %d; missing:\n%s", len(g), len(keys), strings.Join(miss, "\n"))
	}
	for _, k := range keys {
		if !slices.Equal(got[k], want[k]) {
			t.Errorf("calls for %s at once:\n%s\none after another:\n%s", k, strings.Join(got[k], "\n"), strings.Join(want[k], "\n"))
		}
	}
	for _, ix := range g.indexers {
		if st := ix.Stats(); st.Sessions != 40 {
			t.Errorf("source %s: %d sessions after StartAll, want 40", ix.opt.Source, st.Sessions)
		}
	}
}

// gateConsumer holds the first Resume of source hold until a Resume of source
// until arrives (or 10 s pass: timedOut).
type gateConsumer struct {
	*seqRecorder
	hold, until string
	once        sync.Once
	released    chan struct{}
	mu          sync.Mutex
	waited      int
	timedOut    bool
}

func (g *gateConsumer) Resume(u UnitRef) (int64, string, bool) {
	switch u.Source {
	case g.until:
		g.once.Do(func() { close(g.released) })
	case g.hold:
		g.mu.Lock()
		first := g.waited == 0
		g.waited++
		g.mu.Unlock()
		if first {
			select {
			case <-g.released:
			case <-time.After(10 * time.Second):
				g.mu.Lock()
				g.timedOut = true
				g.mu.Unlock()
			}
		}
	}
	return g.seqRecorder.Resume(u)
}

// The same over every layout's test store (lines and documents, Gemini's
// related units, Claude's session directories): one transcript removed and
// one rewritten in place (another mtime) while down; a file root (HyperYOLO)
// is walked by walkLocked either way.
func TestStartScanMatchesWalkLayouts(t *testing.T) {
	for _, layout := range []string{"claude", "codex", "gemini", "llxprt", "collab-terminals", "mogzi", "hyperyolo"} {
		t.Run(layout, func(t *testing.T) {
			src := filepath.Join("testdata", layout, "basic")
			run := func(raw bool) startOutcome {
				t.Helper()
				defer func(r bool) { startScanRaw = r }(startScanRaw)
				startScanRaw = raw
				base := t.TempDir()
				root := filepath.Join(base, "store")
				copyTree(t, filepath.Join(src, "store"), root)
				if _, err := os.Stat(filepath.Join(src, "projects.json")); err == nil {
					copyTree(t, filepath.Join(src, "projects.json"), filepath.Join(base, "projects.json"))
				}
				if layout == "hyperyolo" {
					root = filepath.Join(root, "sessions.json")
				}
				state := t.TempDir()
				rec := newSeqRecorder(t, state)
				first := newLayoutIndexer(t, layout, root, state, false)
				attach(first, rec)
				if err := first.Reconcile(); err != nil {
					t.Logf("reconcile: %v", err)
				}
				var files []string
				filepath.WalkDir(filepath.Join(base, "store"), func(p string, d os.DirEntry, err error) error {
					if err == nil && d.Type().IsRegular() && d.Name() != CatalogName && !strings.HasPrefix(d.Name(), TempPrefix) {
						files = append(files, p)
					}
					return nil
				})
				sort.Strings(files)
				if len(files) < 2 {
					t.Fatalf("store of %d files", len(files))
				}
				later := time.Now().Add(time.Hour)
				if layout == "hyperyolo" {
					os.Chtimes(root, later, later)
				} else {
					os.Remove(files[0])
					os.Chtimes(files[len(files)-1], later, later)
				}
				rec.calls()
				ix := newLayoutIndexer(t, layout, root, state, false)
				if err := ix.Load(); err != nil {
					t.Fatal(err)
				}
				attach(ix, rec)
				if err := ix.Start(); err != nil {
					t.Logf("start: %v", err)
				}
				st := ix.Stats()
				out := startOutcome{
					stats: fmt.Sprintf("read %d B, %d catalog and %d native writes, %d sessions in %d projects",
						st.BytesRead, st.CatalogWrites, st.NativeWrites, st.Sessions, st.Projects),
					calls: rec.calls(),
					store: storeNames(t, base),
					raw:   ix.rawStarts,
				}
				if err := ix.VerifyOutputs(); err != nil {
					t.Fatal(err)
				}
				assertLayoutConverged(t, layout, root, state)
				return out
			}
			want, got := run(false), run(true)
			wantRaw := 1
			if layout == "hyperyolo" || !startScanRaw {
				wantRaw = 0 // a file root, or a system without the raw listing
			}
			if got.raw != wantRaw {
				t.Errorf("the raw walk was used by %d Starts, want %d", got.raw, wantRaw)
			}
			if got.stats != want.stats {
				t.Errorf("raw walk: %s; walkLocked: %s", got.stats, want.stats)
			}
			if !slices.Equal(got.store, want.store) {
				t.Errorf("store after the raw walk:\n%v\nafter walkLocked:\n%v", got.store, want.store)
			}
			units := slices.Sorted(maps.Keys(want.calls))
			if g := slices.Sorted(maps.Keys(got.calls)); !slices.Equal(g, units) {
				t.Errorf("units handed to the consumer: %v, walkLocked: %v", g, units)
			}
			for _, u := range units {
				if !slices.Equal(got.calls[u], want.calls[u]) {
					t.Errorf("calls for %s:\n%s\nwalkLocked:\n%s", u, strings.Join(got.calls[u], "\n"), strings.Join(want.calls[u], "\n"))
				}
			}
			if len(units) == 0 {
				t.Error("the changes reached no unit")
			}
		})
	}
}
