package indexer

import (
	"fmt"
	"math/rand"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// A randomized run of what happens to parked units: appends (fetching states
// back from the resume files), writes that fail and are retried, crashes (the
// indexer dropped without a word, a new one loaded), VerifyOutputs, and resume
// files put back from an earlier flush behind the indexer's back. Whatever the
// order, once the writes succeed and the outputs are verified every catalog,
// resume file and native index equals a rebuild's, and a restart over them
// reads no transcript byte.
func TestLazyStateStress(t *testing.T) {
	seeds := 12
	if testing.Short() {
		seeds = 3
	}
	for seed := int64(1); seed <= int64(seeds); seed++ {
		t.Run(fmt.Sprint("seed", seed), func(t *testing.T) { lazyStress(t, seed) })
	}
}

func lazyStress(t *testing.T, seed int64) {
	rng := rand.New(rand.NewSource(seed))
	root, state, files := startStore(t, 4)
	full := diskFull(t)
	resumes, _ := filepath.Glob(filepath.Join(state, "index", "wave", "*", ResumeName))
	if len(resumes) != 4 {
		t.Fatalf("%d resume files, want 4", len(resumes))
	}
	saved := map[string][]byte{}
	ix := loadedIndexer(t, root, state)
	if err := ix.Start(); err != nil {
		t.Fatal(err)
	}
	n := 0
	for op := 0; op < 60; op++ {
		switch r := rng.Intn(20); {
		case r < 11: // appends to one to three files, then their batch
			var batch []string
			for k := rng.Intn(3); k >= 0; k-- {
				f := files[rng.Intn(len(files))]
				n++
				appendFile(t, f, msg(fmt.Sprintf("2026-01-02T00:%02d:%02dZ", n/60, n%60), fmt.Sprintf("append %d", n)))
				batch = append(batch, f)
			}
			if err := ix.Update(batch); err != nil && !full.Load() {
				t.Fatalf("op %d: Update: %v", op, err)
			}
		case r < 13: // the disk fills up, or space is freed and the writes retried
			if full.Load() {
				full.Store(false)
				if err := ix.Retry(time.Now().Add(retryMax + time.Second)); err != nil {
					t.Fatalf("op %d: Retry: %v", op, err)
				}
			} else {
				full.Store(true)
			}
		case r < 15: // a crash: the indexer is gone, another one starts
			full.Store(false)
			ix = loadedIndexer(t, root, state)
			if err := ix.Start(); err != nil {
				t.Fatalf("op %d: Start after a crash: %v", op, err)
			}
		case r < 17:
			if err := ix.VerifyOutputs(); err != nil && !full.Load() {
				t.Fatalf("op %d: VerifyOutputs: %v", op, err)
			}
		case r < 18: // a resume file is kept, to be put back later
			p := resumes[rng.Intn(len(resumes))]
			if data, err := os.ReadFile(p); err == nil {
				saved[p] = data
			}
		default: // a kept resume file put back behind the indexer's back
			for p, data := range saved {
				if err := os.WriteFile(p, data, 0o600); err != nil {
					t.Fatal(err)
				}
				delete(saved, p)
				break
			}
		}
	}
	full.Store(false)
	if err := ix.Retry(time.Now().Add(retryMax + time.Second)); err != nil {
		t.Fatal(err)
	}
	if err := ix.VerifyOutputs(); err != nil {
		t.Fatal(err)
	}
	assertLayoutConverged(t, "wave", root, state)
	total := 0
	for p := 0; p < 4; p++ {
		c := layoutCatalog(t, state, "wave", fmt.Sprintf("/w/p%d", p))
		if c == nil {
			t.Fatalf("no catalog of /w/p%d", p)
		}
		for _, s := range c.Sessions {
			total += s.MessageCount
		}
	}
	if want := len(files) + n; total != want {
		t.Errorf("the catalogs count %d messages, want %d", total, want)
	}
	again := loadedIndexer(t, root, state)
	if err := again.Start(); err != nil {
		t.Fatal(err)
	}
	if read := again.Stats().BytesRead; read != 0 {
		t.Errorf("a restart over the final outputs read %d transcript bytes, want 0", read)
	}
}
