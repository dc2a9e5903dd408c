package indexer

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Flushes render catalogs, resume files and native indexes into buffers that
// earlier flushes wrote from: every output must still be exactly what a rebuild
// writes, whichever project's (longer or shorter) content a buffer held before.
func TestFlushBuffersReused(t *testing.T) {
	root, state := t.TempDir(), t.TempDir()
	var files []string
	for p := range 4 {
		dir := filepath.Join(root, fmt.Sprintf("p%d", p))
		os.MkdirAll(dir, 0o700)
		for s := range 3 {
			file := filepath.Join(dir, fmt.Sprintf("aaaaaaaa-0000-4000-8000-00000000%02d%02d.jsonl", p, s))
			appendFile(t, file, fmt.Sprintf(`{"type":"metadata","workdir":"/w/p%d","createdAt":"2026-01-01T00:00:00Z"}`+"\n", p)+
				msg("2026-01-01T00:00:01Z", strings.Repeat("x", 10+p*300)))
			files = append(files, file)
		}
	}
	ix := newLayoutIndexer(t, "wave", root, state, false)
	if err := ix.Reconcile(); err != nil {
		t.Fatal(err)
	}
	for round := range 6 {
		// Each round touches a different mix of projects, so a buffer kept from
		// one project's output is reused for another's.
		var changed []string
		for i, f := range files {
			if (i+round)%3 == 0 {
				appendFile(t, f, msg(fmt.Sprintf("2026-01-02T00:%02d:%02dZ", round, i), strings.Repeat("y", (round*7+i*13)%500)))
				changed = append(changed, f)
			}
		}
		if err := ix.Update(changed); err != nil {
			t.Fatal(err)
		}
		assertLayoutConverged(t, "wave", root, state)
	}
	ix.writes.mu.Lock()
	kept := len(ix.writes.free)
	ix.writes.mu.Unlock()
	if kept == 0 {
		t.Errorf("no rendering buffer kept after %d flushes", 6)
	}
}

func TestWritePoolKeepsBoundedBuffers(t *testing.T) {
	var p writePool
	p.release(make([]byte, 10, keptBufCap+1))
	if b := p.buffer(); b != nil {
		t.Errorf("buffer() = cap %d, want nil: a buffer over keptBufCap is not kept", cap(b))
	}
	for range keptBufs + 5 {
		p.release(make([]byte, 10, 64))
	}
	if len(p.free) != keptBufs {
		t.Errorf("kept %d buffers, want at most %d", len(p.free), keptBufs)
	}
	if b := p.buffer(); len(b) != 0 || cap(b) != 64 {
		t.Errorf("buffer() = len %d cap %d, want an empty kept buffer (len 0, cap 64)", len(b), cap(b))
	}
}
