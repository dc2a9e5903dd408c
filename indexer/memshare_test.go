package indexer

import (
	"testing"
	"unsafe"
)

// Load keeps no session in memory: each unit's sessions are parked in the
// catalog they were read from, and read back for a reader. Nothing else
// changes: a restart over the store reads nothing and the outputs equal a
// rebuild's.
func TestLoadParksSessions(t *testing.T) {
	root, state, files := startStore(t, 3)
	ix := loadedIndexer(t, root, state)
	ix.mu.Lock()
	for u := range ix.units.all() {
		if u.sessions() != nil || u.skey == 0 || u.nsess != 1 {
			t.Errorf("%s: %d sessions in memory, parked in %q (%d), want none in memory, one parked", u.rel, len(u.sessions()), ix.skeyOf(u), u.nsess)
		}
		if u.live != nil || u.tail.rare != nil {
			t.Errorf("%s: parked with %+v in memory and rare tail strings %+v, want neither", u.rel, u.live, u.tail.rare)
		}
	}
	ix.mu.Unlock()
	ss := ix.Sessions()
	if len(ss) != len(files) {
		t.Fatalf("%d sessions, want %d", len(ss), len(files))
	}
	for _, s := range ss {
		if s.Project == "" || s.Title == "" && s.FirstPrompt == "" || s.Tail == nil || s.Tail.Offset == 0 {
			t.Errorf("%s: read back as %+v", s.File, s)
		}
	}
	if st := ix.Stats(); st.Sessions != 0 {
		t.Errorf("counters before Start: %d sessions, want 0 (as before)", st.Sessions)
	}
	if err := ix.Start(); err != nil {
		t.Fatal(err)
	}
	if st := ix.Stats(); st.BytesRead != 0 || st.CatalogWrites != 0 || st.Sessions != len(files) {
		t.Errorf("Start after Load read %d bytes, wrote %d catalogs and counts %d sessions, want none, none, %d", st.BytesRead, st.CatalogWrites, st.Sessions, len(files))
	}
	ix.mu.Lock()
	for u := range ix.units.all() {
		if u.live != nil {
			t.Errorf("%s: sessions, state or accumulator in memory after Start: %+v", u.rel, u.live)
		}
	}
	ix.mu.Unlock()
	assertLayoutConverged(t, "wave", root, state)
}

// A unit, held per file by a daemon (without its sessions, parked), fits a
// 112-byte allocation; its tail 64 bytes of it (64-bit platforms).
func TestUnitSize(t *testing.T) {
	if unsafe.Sizeof(uintptr(0)) != 8 {
		t.Skip("sizes are budgeted for 64-bit platforms")
	}
	if n := unsafe.Sizeof(unit{}); n > 112 {
		t.Errorf("a unit takes %d bytes, more than 112", n)
	}
	if n := unsafe.Sizeof(unitTail{}); n > 64 {
		t.Errorf("a unit's tail takes %d bytes, more than 64", n)
	}
}
