//go:build linux && (amd64 || arm64 || loong64 || riscv64)

package indexer

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// A file / a project dir replaced by a symlink after the start-up
// listing (ProveAll) and before StartAll; then the watcher's event for the
// replaced path applied as the daemon's serve loop would (Update).
func TestSymlinkSwapAfterProve(t *testing.T) {
	for _, raw := range []bool{false, true} {
		for _, what := range []string{"file", "dir", "dir2file"} {
			func() {
				defer func(r bool) { startScanRaw = r }(startScanRaw)
				startScanRaw = raw
				root, state, files := startStore(t, 3)
				g := &Group{indexers: []*Indexer{newLayoutIndexer(t, "wave", root, state, false)}}
				g.UseWriterLock(NewWriterLock(state), true)
				if err := g.Load(); err != nil {
					t.Fatal(err)
				}
				g.ProveAll()
				outside := t.TempDir()
				var evpath string
				switch what {
				case "file":
					// files[2] is p1's first transcript: replaced by a symlink to a copy outside
					data, _ := os.ReadFile(files[2])
					tgt := filepath.Join(outside, filepath.Base(files[2]))
					os.WriteFile(tgt, data, 0o600)
					tmp := files[2] + ".ln"
					if err := os.Symlink(tgt, tmp); err != nil {
						t.Fatal(err)
					}
					if err := os.Rename(tmp, files[2]); err != nil {
						t.Fatal(err)
					}
					evpath = files[2]
				case "dir2file":
					p1 := filepath.Join(root, "p1")
					if err := os.Rename(p1, filepath.Join(outside, "p1")); err != nil {
						t.Fatal(err)
					}
					os.WriteFile(p1, []byte("a file now\n"), 0o600)
					evpath = p1
				case "dir":
					p1 := filepath.Join(root, "p1")
					moved := filepath.Join(outside, "p1")
					if err := os.Rename(p1, moved); err != nil {
						t.Fatal(err)
					}
					if err := os.Symlink(moved, p1); err != nil {
						t.Fatal(err)
					}
					evpath = p1
				}
				if err := g.StartAll(); err != nil {
					t.Fatal(err)
				}
				ix := g.indexers[0]
				// The event the watcher reports for the replaced path.
				if err := ix.Update([]string{evpath}); err != nil {
					t.Fatal(err)
				}
				var through []string
				for _, s := range ix.Sessions() {
					if strings.Contains(s.File, string(filepath.Separator)+"p1"+string(filepath.Separator)) {
						if what != "file" || s.File == files[2] {
							through = append(through, s.File)
						}
					}
				}
				t.Logf("raw=%v %s: rawStarts=%d sessions=%d kept through the symlink: %v", raw, what, ix.rawStarts, len(ix.Sessions()), through)
				if len(through) > 0 {
					t.Errorf("raw=%v %s swapped for a symlink after the listing: %d session(s) still indexed through it: %v", raw, what, len(through), through)
				}
			}()
		}
	}
}

// The same swap after Start (the daemon running): the event alone.
func TestSymlinkSwapAfterStart(t *testing.T) {
	root, state, files := startStore(t, 3)
	ix := loadedIndexer(t, root, state)
	if err := ix.Start(); err != nil {
		t.Fatal(err)
	}
	data, _ := os.ReadFile(files[2])
	tgt := filepath.Join(t.TempDir(), "x.jsonl")
	os.WriteFile(tgt, data, 0o600)
	os.Symlink(tgt, files[2]+".ln")
	os.Rename(files[2]+".ln", files[2])
	if err := ix.Update([]string{files[2]}); err != nil {
		t.Fatal(err)
	}
	for _, s := range ix.Sessions() {
		if s.File == files[2] {
			t.Errorf("file replaced by a symlink while running: still indexed after its event: %s", s.File)
		}
	}
}

// Catalogs right after Start (before VerifyOutputs could repair them), over
// parked units (Load parks every unit's sessions) in projects where one unit
// changed while down: what Start wrote must be what a rebuild writes.
func TestStartOverParkedConvergesBeforeVerify(t *testing.T) {
	for _, raw := range []bool{false, true} {
		func() {
			defer func(r bool) { startScanRaw = r }(startScanRaw)
			startScanRaw = raw
			root, state, files := startStore(t, 8)
			changeWhileDown(t, root, files)
			ix := loadedIndexer(t, root, state)
			parked := 0
			for u := range ix.units.all() {
				if u.skey != 0 {
					parked++
				}
			}
			g := &Group{indexers: []*Indexer{ix}}
			g.UseWriterLock(NewWriterLock(state), true)
			g.ProveAll()
			if err := g.StartAll(); err != nil {
				t.Fatal(err)
			}
			t.Logf("raw=%v: %d parked after Load, rawStarts=%d, %d sessions", raw, parked, ix.rawStarts, ix.Stats().Sessions)
			assertLayoutConverged(t, "wave", root, state)
		}()
	}
}

// A crashed writer's temp file noted by the listing; its directory replaced by
// a symlink (to a directory outside the root holding a file of the same name)
// before Start: Start must not remove through the symlink.
func TestTempRemovedThroughSymlinkAfterProve(t *testing.T) {
	root, state, _ := startStore(t, 3)
	old := time.Now().Add(-time.Hour)
	name := TempPrefix + "left"
	tmp := filepath.Join(root, "p2", name)
	os.WriteFile(tmp, []byte("x"), 0o600)
	os.Chtimes(tmp, old, old)
	ix := loadedIndexer(t, root, state)
	g := &Group{indexers: []*Indexer{ix}}
	g.UseWriterLock(NewWriterLock(state), true)
	g.ProveAll()
	if ix.proof == nil || len(ix.proof.temps) != 1 {
		t.Fatalf("the listing noted no temp file")
	}
	outside := t.TempDir()
	moved := filepath.Join(outside, "p2")
	if err := os.Rename(filepath.Join(root, "p2"), moved); err != nil {
		t.Fatal(err)
	}
	victimDir := filepath.Join(outside, "victim")
	os.MkdirAll(victimDir, 0o700)
	victim := filepath.Join(victimDir, name)
	os.WriteFile(victim, []byte("not ours to remove"), 0o600)
	os.Chtimes(victim, old, old)
	if err := os.Symlink(victimDir, filepath.Join(root, "p2")); err != nil {
		t.Fatal(err)
	}
	if err := g.StartAll(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Lstat(victim); err != nil {
		t.Errorf("a file outside the root was removed through a symlink by Start: %v", err)
	}
}

// A FIFO named like a transcript: Start (or an event) must not hang on it.
func TestFifoTranscriptDoesNotHang(t *testing.T) {
	root, state, _ := startStore(t, 2)
	fifo := filepath.Join(root, "p1", "aaaaaaaa-0000-4000-8000-000000000077.jsonl")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	defer func(r bool) { startScanRaw = r }(startScanRaw)
	startScanRaw = os.Getenv("REV_RAW") != "0"
	ix := loadedIndexer(t, root, state)
	done := make(chan error, 1)
	go func() { done <- ix.Start() }()
	select {
	case err := <-done:
		t.Logf("Start returned: %v", err)
	case <-time.After(10 * time.Second):
		// unblock it: open the FIFO for writing
		f, _ := os.OpenFile(fifo, os.O_WRONLY, 0)
		f.Close()
		<-done
		t.Errorf("Start hung on a FIFO named like a transcript (10 s)")
	}
}

// A unit the listing found changed (appended while down) whose directory is
// replaced by a symlink before Start: Start must not read through it.
func TestQueuedUnitReadThroughSymlinkedDir(t *testing.T) {
	root, state, files := startStore(t, 3)
	appendFile(t, files[2], msg("2026-01-02T00:00:00Z", "appended while down"))
	ix := loadedIndexer(t, root, state)
	rec := newRecorder(t, state)
	g := &Group{indexers: []*Indexer{ix}}
	g.UseWriterLock(NewWriterLock(state), true)
	g.ProveAll()
	if ix.proof == nil || len(ix.proof.pending) == 0 {
		t.Fatal("the listing queued nothing")
	}
	outside := filepath.Join(t.TempDir(), "elsewhere")
	os.MkdirAll(outside, 0o700)
	os.Rename(filepath.Join(root, "p1"), filepath.Join(t.TempDir(), "p1-moved"))
	appendFile(t, filepath.Join(outside, filepath.Base(files[2])),
		`{"type":"metadata","workdir":"/w/p1","createdAt":"2026-01-01T00:00:00Z"}`+"\n"+msg("2026-01-01T00:00:01Z", "SECRET outside the root"))
	if err := os.Symlink(outside, filepath.Join(root, "p1")); err != nil {
		t.Fatal(err)
	}
	attach(ix, rec)
	if err := g.StartAll(); err != nil {
		t.Fatal(err)
	}
	unit, _ := filepath.Rel(root, files[2])
	if strings.Contains(rec.text(unit), "SECRET") {
		t.Errorf("Start read a file outside the root through a symlinked directory: consumer got %q", rec.text(unit))
	}
	for _, s := range ix.Sessions() {
		if s.File == files[2] {
			t.Logf("session kept: %s prompt %q", s.File, s.FirstPrompt)
		}
	}
}
