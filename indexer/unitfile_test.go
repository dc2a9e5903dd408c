package indexer

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

// TestUnitFileTakesOnlyWhatTheWorkersMay: a transcript's name that is a
// symlink is not followed, a FIFO is opened without waiting and is no regular
// file, a directory is none either; each leaves no descriptor open.
func TestUnitFileTakesOnlyWhatTheWorkersMay(t *testing.T) {
	dir := t.TempDir()
	target := filepath.Join(dir, "target.jsonl")
	if err := os.WriteFile(target, []byte("{}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "link.jsonl")
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
	before := openFDsUnder(dir)
	if f, err := openUnitFile(link); err == nil {
		f.Close()
		t.Error("a symlink was opened")
	}
	fifo := filepath.Join(dir, "fifo.jsonl")
	if err := syscall.Mkfifo(fifo, 0o600); err == nil {
		done := make(chan error, 1)
		go func() {
			f, err := openUnitFile(fifo)
			if err == nil {
				var st unitStat
				if st, err = f.stat(); err == nil && st.regular {
					err = os.ErrInvalid
				}
				f.Close()
			}
			done <- err
		}()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("a FIFO: %v", err)
			}
		case <-time.After(10 * time.Second):
			t.Fatal("the open of a FIFO waits for a writer")
		}
	}
	sub := filepath.Join(dir, "dir.jsonl")
	if err := os.Mkdir(sub, 0o700); err != nil {
		t.Fatal(err)
	}
	if f, err := openUnitFile(sub); err == nil {
		if st, err := f.stat(); err != nil || st.regular {
			t.Errorf("a directory: regular %v, %v", st.regular, err)
		}
		f.Close()
	}
	f, err := openUnitFile(target)
	if err != nil {
		t.Fatal(err)
	}
	st, err := f.stat()
	fi, _ := os.Stat(target)
	dev, ino := statIdentity(fi)
	if err != nil || !st.regular || st.size != fi.Size() || st.mtime != fi.ModTime().UnixNano() || st.dev != dev || st.ino != ino || st.unlinked {
		t.Errorf("a transcript's stat %+v, %v; os.Stat says size %d mtime %d dev %d ino %d", st, err, fi.Size(), fi.ModTime().UnixNano(), dev, ino)
	}
	os.Remove(target)
	if st, err := f.stat(); err != nil || !st.unlinked {
		t.Errorf("a removed transcript's stat %+v, %v: not unlinked", st, err)
	}
	if err := f.Close(); err != nil {
		t.Error(err)
	}
	if err := f.Close(); err != nil {
		t.Errorf("a second close: %v", err)
	}
	if n := openFDsUnder(dir); before >= 0 && n != before {
		t.Errorf("%d descriptors under the dir open, %d before", n, before)
	}
}

// TestPrefetchReadOfWhatIsNoTranscript: a unit whose name became a symlink, a
// FIFO or a directory after the walk listed it is not read by a worker (the
// walk reads it, as it would have), whether the readahead opened it before or
// not; no descriptor is left open, and a pass over a store holding such names
// leaves none either.
func TestPrefetchReadOfWhatIsNoTranscript(t *testing.T) {
	root := filepath.Join(t.TempDir(), "store")
	manyWaveSessions(t, root, 60)
	outside := filepath.Join(t.TempDir(), "outside.jsonl")
	if err := os.WriteFile(outside, []byte(`{"type":"metadata","workdir":"/x"}`+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	setReadahead(t, 0, 1, 1000, 1, false)
	ix := newLayoutIndexer(t, "wave", root, t.TempDir(), false)
	before := openFDsUnder(root)
	ix.mu.Lock()
	ix.startPrefetchLocked()
	pf := ix.fetch
	if pf == nil {
		ix.mu.Unlock()
		t.Fatal("no prefetch started")
	}
	replace := []func(p string) error{
		func(p string) error { return os.Symlink(outside, p) },
		func(p string) error { return syscall.Mkfifo(p, 0o600) },
		func(p string) error { return os.Mkdir(p, 0o700) },
	}
	for i, mk := range replace {
		for _, opened := range []bool{false, true} {
			urel := pf.items[2*i+btoi(opened)]
			p := ix.unitPath(urel)
			var f *unitFile
			if opened {
				if f, _ = readAhead(p, nil); f == nil {
					t.Fatalf("%s: not opened ahead", urel)
				}
			}
			if err := os.Remove(p); err != nil {
				t.Fatal(err)
			}
			if err := mk(p); err != nil {
				t.Fatal(err)
			}
			done := make(chan *fetched, 1)
			go func() {
				r := &fetched{done: make(chan struct{})}
				pf.read(urel, r, f)
				done <- r
			}()
			select {
			case r := <-done:
				if r.ok {
					t.Errorf("%s (opened ahead %v) replaced by what is no transcript (%d): read", urel, opened, i)
				}
			case <-time.After(10 * time.Second):
				t.Fatalf("%s: the read waits", urel)
			}
		}
	}
	ix.stopPrefetchLocked()
	ix.mu.Unlock()
	if n := openFDsUnder(root); before >= 0 && n != before {
		t.Errorf("%d descriptors of the store open after the reads, %d before", n, before)
	}
	// A whole pass over the store as it is now.
	if err := ix.Reconcile(); err != nil {
		t.Fatal(err)
	}
	if n := openFDsUnder(root); before >= 0 && n != before {
		t.Errorf("%d descriptors of the store open after a pass, %d before", n, before)
	}
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}
