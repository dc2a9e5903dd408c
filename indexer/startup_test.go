package indexer

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// startStore is a Wave store of n projects with two sessions each, reconciled
// once (catalogs, resume files and native indexes written); it returns root,
// state and the session files.
func startStore(t *testing.T, n int) (root, state string, files []string) {
	t.Helper()
	root, state = t.TempDir(), t.TempDir()
	for p := 0; p < n; p++ {
		dir := filepath.Join(root, fmt.Sprintf("p%d", p))
		os.MkdirAll(dir, 0o700)
		for i := 0; i < 2; i++ {
			f := filepath.Join(dir, fmt.Sprintf("aaaaaaaa-0000-4000-8000-%012d.jsonl", p*2+i))
			appendFile(t, f, fmt.Sprintf(`{"type":"metadata","workdir":"/w/p%d","createdAt":"2026-01-01T00:00:00Z"}`+"\n", p)+
				msg("2026-01-01T00:00:01Z", fmt.Sprintf("prompt %d %d", p, i)))
			files = append(files, f)
		}
	}
	ix := newLayoutIndexer(t, "wave", root, state, false)
	if err := ix.Reconcile(); err != nil {
		t.Fatal(err)
	}
	return root, state, files
}

// loadedIndexer is a restarted indexer: New, then Load.
func loadedIndexer(t *testing.T, root, state string) *Indexer {
	t.Helper()
	ix := newLayoutIndexer(t, "wave", root, state, false)
	if err := ix.Load(); err != nil {
		t.Fatal(err)
	}
	return ix
}

// stateless reports how many line units hold neither an accumulator nor an
// encoded state in memory (their state is left in a resume file).
func stateless(ix *Indexer) (lazy, all int) {
	ix.mu.Lock()
	defer ix.mu.Unlock()
	for u := range ix.units.all() {
		all++
		if u.acc() == nil && u.state() == nil && u.parked && u.lazyKey != 0 && (ix.skeyOf(u) == ix.lazyKeyOf(u) && u.sessions() == nil || u.sessions()[0].Tail.State == nil) {
			lazy++
		}
	}
	return lazy, all
}

// Start over an unchanged store stats every file and does nothing else: no byte
// read, nothing written, no state decoded or brought into memory; its counters
// are those of the store.
func TestStartUnchangedWritesNothing(t *testing.T) {
	root, state, files := startStore(t, 3)
	ix := loadedIndexer(t, root, state)
	if lazy, all := stateless(ix); lazy != len(files) || all != len(files) {
		t.Fatalf("after Load: %d of %d units hold no state in memory, want all %d", lazy, all, len(files))
	}
	if err := ix.Start(); err != nil {
		t.Fatal(err)
	}
	st := ix.Stats()
	if st.BytesRead != 0 || st.CatalogWrites != 0 || st.NativeWrites != 0 {
		t.Errorf("Start over an unchanged store: read %d bytes, %d catalog and %d native writes; want none", st.BytesRead, st.CatalogWrites, st.NativeWrites)
	}
	if st.Sessions != len(files) || st.Projects != 3 {
		t.Errorf("Start: %d sessions in %d projects, want %d in 3", st.Sessions, st.Projects, len(files))
	}
	if lazy, _ := stateless(ix); lazy != len(files) {
		t.Errorf("after Start: %d of %d units hold no state in memory", lazy, len(files))
	}
	if err := ix.VerifyOutputs(); err != nil {
		t.Fatal(err)
	}
	if st := ix.Stats(); st.BytesRead != 0 || st.CatalogWrites != 0 || st.NativeWrites != 0 {
		t.Errorf("VerifyOutputs over an unchanged store: read %d bytes, %d catalog and %d native writes; want none", st.BytesRead, st.CatalogWrites, st.NativeWrites)
	}
	if lazy, _ := stateless(ix); lazy != len(files) {
		t.Errorf("after VerifyOutputs: %d of %d units hold no state in memory", lazy, len(files))
	}
	assertLayoutConverged(t, "wave", root, state)
}

// Start reads what changed and puts right a native index that is missing; an
// edited native index and catalog are put right by VerifyOutputs.
func TestStartThenVerifyOutputsRepair(t *testing.T) {
	root, state, files := startStore(t, 3)
	appendFile(t, files[0], msg("2026-01-02T00:00:00Z", "appended while down"))
	os.Remove(filepath.Join(root, "p1", CatalogName))
	edited := filepath.Join(root, "p2", CatalogName)
	os.WriteFile(edited, []byte("{}\n"), 0o600)
	catalog := filepath.Join(state, "index", "wave", ProjectKey("/w/p2"), CatalogName)
	data, _ := os.ReadFile(catalog)
	old := time.Now().Add(-time.Hour)
	ix := loadedIndexer(t, root, state)
	// A catalog edited after the load (same bytes, a newer mtime, then other
	// content that still decodes) is compared by content, not trusted.
	os.WriteFile(catalog, append(data[:len(data):len(data)], ' '), 0o600)
	os.Chtimes(catalog, old, old)
	if err := ix.Start(); err != nil {
		t.Fatal(err)
	}
	if c := layoutCatalog(t, state, "wave", "/w/p0"); c == nil || c.Sessions[0].MessageCount+c.Sessions[1].MessageCount != 3 {
		t.Errorf("Start did not read the append: %+v", c)
	}
	if _, err := os.Stat(filepath.Join(root, "p1", CatalogName)); err != nil {
		t.Errorf("Start did not restore the missing native index: %v", err)
	}
	if err := ix.VerifyOutputs(); err != nil {
		t.Fatal(err)
	}
	assertLayoutConverged(t, "wave", root, state)
}

// A unit whose state is left in a resume file goes on from its offset when it
// grows (the state is fetched back), and is read again from the start when the
// resume file is gone: either way the catalogs equal a rebuild's.
func TestLazyStateFetchedOnAppend(t *testing.T) {
	for _, lose := range []bool{false, true} {
		root, state, files := startStore(t, 2)
		ix := loadedIndexer(t, root, state)
		if err := ix.Start(); err != nil {
			t.Fatal(err)
		}
		if lose {
			os.Remove(filepath.Join(state, "index", "wave", ProjectKey("/w/p0"), ResumeName))
		}
		before := ix.Stats().BytesRead
		add := msg("2026-01-02T00:00:00Z", "more")
		appendFile(t, files[0], add)
		if err := ix.Update([]string{files[0]}); err != nil {
			t.Fatal(err)
		}
		// Without the resume file both sessions of the project are read again
		// (the sibling's state was there too), else only the append.
		read := ix.Stats().BytesRead - before
		fi0, _ := os.Stat(files[0])
		fi1, _ := os.Stat(files[1])
		if whole := fi0.Size() + fi1.Size(); lose != (read >= whole) {
			t.Errorf("lose=%v: the append read %d bytes (both files: %d)", lose, read, whole)
		}
		if c := layoutCatalog(t, state, "wave", "/w/p0"); c == nil || c.Sessions[0].MessageCount+c.Sessions[1].MessageCount != 3 {
			t.Errorf("lose=%v: catalog after the append: %+v", lose, c)
		}
		assertLayoutConverged(t, "wave", root, state)
		if lazy, all := stateless(ix); lazy != all {
			t.Errorf("lose=%v: after the flush %d of %d units hold no state in memory, want all", lose, lazy, all)
		}
	}
}

// VerifyOutputs renders a batch of projects per flush, so the states it brings
// back are about a batch's at a time, not every unit's; and batched, it still
// puts every edited output right.
func TestVerifyOutputsHoldsABatchOfStates(t *testing.T) {
	for _, tc := range []struct {
		name                    string
		batch                   int
		wantAtLeast, wantAtMost int
	}{
		{"batches of 4 units", 4, 1, 6}, // a batch closes at the project that reaches 4: at most 3+2 units
		{"one batch (as before batching)", 1 << 30, 40, 40},
	} {
		t.Run(tc.name, func(t *testing.T) {
			defer func(b int) { verifyBatch = b }(verifyBatch)
			verifyBatch = tc.batch
			root, state, files := startStore(t, 20)
			ix := loadedIndexer(t, root, state)
			if err := ix.Start(); err != nil {
				t.Fatal(err)
			}
			// Every catalog edited while the daemon was down: every flush writes.
			catalogs, _ := filepath.Glob(filepath.Join(state, "index", "wave", "*", CatalogName))
			if len(catalogs) != 20 {
				t.Fatalf("%d catalogs, want 20", len(catalogs))
			}
			want := map[string][]byte{}
			for _, c := range catalogs {
				data, err := os.ReadFile(c)
				if err != nil {
					t.Fatal(err)
				}
				want[c] = data
				if err := os.WriteFile(c, append(append([]byte{}, data...), ' '), 0o600); err != nil {
					t.Fatal(err)
				}
			}
			if err := ix.VerifyOutputs(); err != nil {
				t.Fatal(err)
			}
			for c, w := range want {
				if got, _ := os.ReadFile(c); !bytes.Equal(got, w) {
					t.Errorf("%s not put right by VerifyOutputs", c)
				}
			}
			ix.mu.Lock()
			peak := ix.statePeak
			ix.mu.Unlock()
			if peak < tc.wantAtLeast || peak > tc.wantAtMost {
				t.Errorf("units holding a state at once = %d, want %d..%d (of %d)", peak, tc.wantAtLeast, tc.wantAtMost, len(files))
			}
			if lazy, all := stateless(ix); lazy != all {
				t.Errorf("after VerifyOutputs %d of %d units lazy, want all", lazy, all)
			}
		})
	}
}
