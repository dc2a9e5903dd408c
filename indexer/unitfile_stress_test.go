package indexer

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// TestUnitFileDescriptorsUnderStress: passes run one after another with the
// readahead on, some cut short mid-pass, some with transcripts removed and
// replaced under them, while other goroutines open, read and close files of
// their own. A bare descriptor closed twice, or used after its close, would
// close or read a descriptor number another goroutine's open was given since:
// those goroutines would read another file's bytes or fail, the catalogs of an
// undisturbed pass would differ from a pass without readahead, or descriptors
// of the store would be left open.
func TestUnitFileDescriptorsUnderStress(t *testing.T) {
	if testing.Short() {
		t.Skip("stress")
	}
	dir := t.TempDir()
	root := filepath.Join(dir, "store")
	manyWaveSessions(t, root, 200)
	// The other goroutines' files: each holds its own name, so a read of any
	// other file shows.
	own := filepath.Join(dir, "own")
	os.MkdirAll(own, 0o700)
	var ownFiles []string
	for i := range 16 {
		p := filepath.Join(own, fmt.Sprintf("f%02d", i))
		os.WriteFile(p, bytes.Repeat([]byte(p+"\n"), 64), 0o600)
		ownFiles = append(ownFiles, p)
	}
	stopNoise := make(chan struct{})
	var noise sync.WaitGroup
	var noiseReads atomic.Int64
	var noiseErr atomic.Value
	for g := range 2 {
		noise.Add(1)
		go func() {
			defer noise.Done()
			// Room for the longest file: 64 copies of its path, however long
			// TMPDIR makes it.
			buf := make([]byte, 64*(len(ownFiles[len(ownFiles)-1])+1))
			for i := g; ; i++ {
				select {
				case <-stopNoise:
					return
				default:
				}
				p := ownFiles[i%len(ownFiles)]
				want := bytes.Repeat([]byte(p+"\n"), 64)
				f, err := openUnitFile(p)
				if err != nil {
					noiseErr.Store(err.Error())
					return
				}
				n, err := f.ReadAt(buf[:len(want)], 0)
				if err != nil || !bytes.Equal(buf[:n], want) {
					noiseErr.Store(fmt.Sprintf("%s: read %q, %v", p, buf[:min(n, 80)], err))
					f.Close()
					return
				}
				if err := f.Close(); err != nil {
					noiseErr.Store(fmt.Sprintf("%s: close: %v", p, err))
					return
				}
				noiseReads.Add(1)
			}
		}()
	}
	defer func() {
		close(stopNoise)
		noise.Wait()
	}()

	// The catalogs of a pass without readahead, made again after the store is
	// restored (new inodes, new mtimes).
	var want map[string]string
	reference := func() {
		w := readaheadWorkers
		readaheadWorkers = 0
		defer func() { readaheadWorkers = w }()
		state := t.TempDir()
		if err := newLayoutIndexer(t, "wave", root, state, false).Reconcile(); err != nil {
			t.Fatal(err)
		}
		want = treeFiles(t, filepath.Join(state, "index"), "")
	}
	setReadahead(t, 3, 16, 1000, 1, false)
	reference()
	before := openFDsUnder(root)

	units := func() []string {
		var ps []string
		filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
			if err == nil && !d.IsDir() && filepath.Ext(p) == ".jsonl" {
				ps = append(ps, p)
			}
			return nil
		})
		return ps
	}()
	saved := map[string][]byte{}
	for _, p := range units {
		saved[p], _ = os.ReadFile(p)
	}
	restore := func() {
		for p, data := range saved {
			os.WriteFile(p+".tmp", data, 0o600)
			os.Rename(p+".tmp", p)
		}
	}

	for pass := range 9 {
		state := t.TempDir()
		ix := newLayoutIndexer(t, "wave", root, state, false)
		switch pass % 3 {
		case 0: // a whole pass, undisturbed
			if err := ix.Reconcile(); err != nil {
				t.Fatal(err)
			}
			got := treeFiles(t, filepath.Join(state, "index"), "")
			if len(got) != len(want) {
				t.Fatalf("pass %d: %d catalog files, %d without readahead", pass, len(got), len(want))
			}
			for p, data := range want {
				if got[p] != data {
					t.Fatalf("pass %d: catalog %s differs from a pass without readahead", pass, p)
				}
			}
		case 1: // cut short: the walk takes a few units, then the pass stops
			ix.mu.Lock()
			ix.startPrefetchLocked()
			pf := ix.fetch
			if pf == nil {
				ix.mu.Unlock()
				t.Fatal("no prefetch started")
			}
			for _, urel := range pf.items[:pass%7] {
				ix.fetchedLocked(urel)
			}
			deadline := time.Now().Add(5 * time.Second)
			for {
				pf.mu.Lock()
				read := pf.ahead.read
				pf.mu.Unlock()
				if read >= pass%5 || time.Now().After(deadline) {
					break
				}
				time.Sleep(time.Millisecond)
			}
			ix.stopPrefetchLocked()
			ix.mu.Unlock()
		case 2: // transcripts removed and replaced under the pass
			var mut sync.WaitGroup
			mut.Add(1)
			go func() {
				defer mut.Done()
				for i, p := range units {
					switch i % 4 {
					case 0:
						os.Remove(p)
					case 1:
						os.WriteFile(p+".tmp", saved[units[(i+7)%len(units)]], 0o600)
						os.Rename(p+".tmp", p)
					case 2:
						os.Truncate(p, int64(len(saved[p])/2))
					}
				}
			}()
			if err := ix.Reconcile(); err != nil {
				t.Logf("pass %d: %v", pass, err)
			}
			mut.Wait()
			restore()
			reference()
		}
		if ix.aheadOpen != 0 {
			t.Fatalf("pass %d: %d files opened ahead left open", pass, ix.aheadOpen)
		}
		if n := openFDsUnder(root); before >= 0 && n != before {
			t.Fatalf("pass %d: %d descriptors of the store open, %d before", pass, n, before)
		}
		if e := noiseErr.Load(); e != nil {
			t.Fatalf("pass %d: another goroutine's file: %s", pass, e)
		}
	}
	if noiseReads.Load() == 0 {
		t.Fatal("the other goroutines read nothing")
	}
}
