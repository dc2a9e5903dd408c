package usage

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"sync"
	"testing"

	"github.com/sessionwatch/sessionwatch/indexer"
)

// A cold build's Sync whose write fails (a file that cannot be opened: too
// many open files), the two files written side by side or one after the
// other, loses nothing and counts nothing twice: a crash then leaves a ledger
// an open reads as the sources synced before it, and the build that goes on
// leaves what a build without the failure leaves. Before, a summary that could
// not be opened for its append lost the batch: the sets of what changed were
// let go, the file not marked for a rewrite, and the next Sync's stamp named
// the summary without that source's rows.
func TestColdBuildSyncFailureLosesNothing(t *testing.T) {
	_, bySource, sources := coldCorpus(t)
	if len(sources) < 3 {
		t.Fatalf("the corpus has %d sources, want 3", len(sources))
	}
	// build feeds the first n sources; at source failAt the file named fails
	// (a directory in its place): the crash copy is taken right after.
	build := func(n, failAt int, failName string) (state, crashed string) {
		state = t.TempDir()
		l, err := Open(state)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(l.resetReader)
		l.ColdBuild()
		for i, src := range sources[:n] {
			refs := feedUnits(l, bySource[src])
			if i != failAt {
				if err := l.Sync(refs); err != nil {
					t.Fatal(err)
				}
				continue
			}
			l.mu.Lock()
			side := l.sideBySide()
			l.mu.Unlock()
			if side != sideBySideWrites {
				t.Fatalf("the Sync to fail is side by side: %v, want %v", side, sideBySideWrites)
			}
			p := filepath.Join(state, DirName, failName)
			if err := os.Rename(p, p+".aside"); err != nil {
				t.Fatal(err)
			}
			if err := os.Mkdir(p, 0o700); err != nil {
				t.Fatal(err)
			}
			if err := l.Sync(refs); err == nil {
				t.Fatalf("Sync with %s a directory succeeded", failName)
			}
			os.Remove(p)
			if err := os.Rename(p+".aside", p); err != nil {
				t.Fatal(err)
			}
			crashed = copyLedger(t, state)
		}
		if err := l.EndColdBuild(); err != nil {
			t.Fatal(err)
		}
		return state, crashed
	}
	opened := func(state string) *Summary {
		t.Helper()
		l, err := Open(state) // repairs what a crash left
		if err != nil {
			t.Fatal(err)
		}
		l.resetReader()
		return readSummary(t, state)
	}
	whole, _ := build(len(sources), -1, "")
	want := opened(whole)
	upTo1, _ := build(1, -1, "")
	upTo2, _ := build(2, -1, "")
	wantCrash := map[string]*Summary{UnitsName: opened(upTo1), SummaryName: opened(upTo2)}
	for _, mode := range []struct {
		name string
		side bool
	}{{"side-by-side", true}, {"serial", false}} {
		for _, name := range []string{UnitsName, SummaryName} {
			t.Run(mode.name+"/"+name, func(t *testing.T) {
				defer func(v bool) { sideBySideWrites = v }(sideBySideWrites)
				sideBySideWrites = mode.side
				state, crashed := build(len(sources), 1, name)
				if got := opened(state); !reflect.DeepEqual(got, want) {
					t.Errorf("after a failed side-by-side Sync and the rest of the build the summary differs from a build without the failure:\n got %+v\nwant %+v", got.Rows, want.Rows)
				}
				// The units file's batch fails before it is written, or is
				// durable before the summary's fails.
				if got := opened(crashed); !reflect.DeepEqual(got, wantCrash[name]) {
					t.Errorf("a crash after the failed Sync: the summary differs from the sources synced before:\n got %+v\nwant %+v", got.Rows, wantCrash[name].Rows)
				}
			})
		}
	}
}

// EndColdBuild's two compactions side by side, their renames not made
// durable (the directory's fsync fails): it fails, and so does every Sync
// until a rewrite is durable; a crash meanwhile (either file's old or new
// version) leaves a ledger an open reads as the whole build, and so does the
// ledger once a Sync succeeds.
func TestEndColdBuildTogetherNotDurable(t *testing.T) {
	compactAlways(t)
	_, bySource, sources := coldCorpus(t)
	build := func() (string, *Ledger) {
		state := t.TempDir()
		l, err := Open(state)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(l.resetReader)
		l.ColdBuild()
		for _, src := range sources {
			if err := l.Sync(feedUnits(l, bySource[src])); err != nil {
				t.Fatal(err)
			}
		}
		return state, l
	}
	opened := func(state string) *Summary {
		t.Helper()
		l, err := Open(state)
		if err != nil {
			t.Fatal(err)
		}
		l.resetReader()
		return readSummary(t, state)
	}
	whole, wl := build()
	if err := wl.EndColdBuild(); err != nil {
		t.Fatal(err)
	}
	want := opened(whole)

	state, l := build()
	before := copyLedger(t, state) // a crash that brings both old files back
	l.mu.Lock()
	l.bulk = false
	due := l.bothCompactionsDue()
	l.bulk = true
	l.mu.Unlock()
	if !due {
		t.Fatal("both compactions must be due")
	}
	fail := errors.New("injected: fsync of the directory failed")
	syncDir = func(string) error { return fail }
	t.Cleanup(func() { syncDir = indexer.SyncDir })
	if err := l.EndColdBuild(); !errors.Is(err, fail) {
		t.Fatalf("EndColdBuild with its renames not durable: %v, want the fsync's error", err)
	}
	after := copyLedger(t, state) // a crash that keeps both new files
	if err := l.Sync(nil); !errors.Is(err, fail) {
		t.Fatalf("a Sync after it, the directory still failing: %v, want the fsync's error", err)
	}
	syncDir = indexer.SyncDir
	if err := l.Sync(nil); err != nil {
		t.Fatal(err)
	}
	for name, s := range map[string]string{"old files": before, "new files": after, "after a durable Sync": state} {
		if got := opened(s); !reflect.DeepEqual(got, want) {
			t.Errorf("%s: the summary differs from the whole build's:\n got %+v\nwant %+v", name, got.Rows, want.Rows)
		}
	}
	if !Stamped(state) {
		t.Error("after the durable Sync the ledger is not settled (Stamped)")
	}
}

// TestEndColdBuildTogetherCrashes: a crash at each rename of EndColdBuild's
// side-by-side compactions (the files as they are when either directory
// fsync runs: the other file's rename before or after it) leaves a ledger
// that opens as the whole build.
func TestEndColdBuildTogetherCrashes(t *testing.T) {
	compactAlways(t)
	units := genLineUnits(t)
	state := t.TempDir()
	l, err := Open(state)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(l.resetReader)
	l.ColdBuild()
	bySource := map[string][]indexer.SessionRef{}
	var sources []string
	for _, u := range units {
		if bySource[u.Ref.Source] == nil {
			sources = append(sources, u.Ref.Source)
		}
		l.Reset(u.Ref)
		for j, line := range u.Lines {
			l.Line(u.Ref, u.Offs[j], line)
		}
		l.Done(u.Ref, int64(len(u.Lines)), "fp")
		bySource[u.Ref.Source] = append(bySource[u.Ref.Source], indexer.SessionRef{UnitRef: u.Ref, ID: u.Ref.Unit, Type: "main", Project: "/p/" + u.Ref.Source})
	}
	// One Sync per source, as a reindex makes (the units were all fed first:
	// each Sync files and writes its source's).
	for _, src := range sources {
		if err := l.Sync(bySource[src]); err != nil {
			t.Fatal(err)
		}
	}
	l.mu.Lock()
	l.bulk = false
	due := l.bothCompactionsDue()
	l.bulk = true
	l.mu.Unlock()
	if !due {
		t.Fatal("both compactions must be due")
	}
	// The files as they are at each directory fsync (from either goroutine).
	var mu sync.Mutex
	var snaps []map[string][]byte
	syncDir = func(dir string) error {
		snap := map[string][]byte{}
		for _, name := range []string{UnitsName, SummaryName, UnitsIndexName} {
			if data, err := os.ReadFile(filepath.Join(dir, name)); err == nil {
				snap[name] = data
			}
		}
		mu.Lock()
		snaps = append(snaps, snap)
		mu.Unlock()
		return indexer.SyncDir(dir)
	}
	t.Cleanup(func() { syncDir = indexer.SyncDir })
	if err := l.EndColdBuild(); err != nil {
		t.Fatal(err)
	}
	syncDir = indexer.SyncDir
	if len(snaps) < 2 {
		t.Fatalf("%d directory fsyncs, want one a compaction at least", len(snaps))
	}
	want := readSummary(t, copyLedger(t, state))
	wantUnits := longWay(t, state)
	for i, snap := range snaps {
		s := t.TempDir()
		if err := os.MkdirAll(filepath.Join(s, DirName), 0o700); err != nil {
			t.Fatal(err)
		}
		for name, data := range snap {
			if err := os.WriteFile(filepath.Join(s, DirName, name), data, 0o600); err != nil {
				t.Fatal(err)
			}
		}
		o, err := Open(s)
		if err != nil {
			t.Fatalf("crash %d: %v", i, err)
		}
		o.resetReader()
		if got := readSummary(t, s); !reflect.DeepEqual(got, want) {
			t.Errorf("crash %d: the summary differs from the whole build's:\n got %+v\nwant %+v", i, got.Rows, want.Rows)
		}
		re := longWay(t, s)
		for _, src := range sources {
			for _, r := range bySource[src] {
				wo, wfp, wok := wantUnits.Resume(r.UnitRef)
				if go_, gfp, gok := re.Resume(r.UnitRef); go_ != wo || gfp != wfp || gok != wok {
					t.Errorf("crash %d: Resume(%s) = %d %q %v, the build holds %d %q %v", i, r.Unit, go_, gfp, gok, wo, wfp, wok)
				}
			}
		}
	}
}
