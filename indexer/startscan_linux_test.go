//go:build linux && (amd64 || arm64 || loong64 || riscv64)

package indexer

import "testing"

// A listing made ahead of Start (Prove) is used by Start; one made stale by a
// pass that reloaded the catalogs in between (another writer wrote) is not: the
// units it marked are gone from memory, and using it would remove every session.
func TestProveStaleAfterReloadIsNotUsed(t *testing.T) {
	for _, reload := range []bool{false, true} {
		root, state, files := startStore(t, 3)
		lock := NewWriterLock(state)
		g := &Group{indexers: []*Indexer{newLayoutIndexer(t, "wave", root, state, false)}}
		g.UseWriterLock(lock, false)
		if err := g.Load(); err != nil {
			t.Fatal(err)
		}
		g.ProveAll()
		ix := g.indexers[0]
		if ix.proof == nil {
			t.Fatal("ProveAll made no listing")
		}
		gen := ix.proof.gen
		if reload {
			w, err := AcquireWriter(t.Context(), state)
			if err != nil {
				t.Fatal(err)
			}
			w.Release()
		}
		if err := g.StartAll(); err != nil {
			t.Fatal(err)
		}
		if got := ix.Stats().Sessions; got != len(files) {
			t.Errorf("reload %v: %d sessions after Start, want %d", reload, got, len(files))
		}
		if used := ix.probeGen == gen; used == reload {
			t.Errorf("reload %v: the listing made ahead was used: %v", reload, used)
		}
		if ix.rawStarts != 1 && !reload {
			t.Errorf("Start walked by a startScan %d times, want 1", ix.rawStarts)
		}
	}
}
