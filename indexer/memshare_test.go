package indexer

import (
	"testing"
	"unsafe"
)

// Load gives the sessions it restores the strings they repeat as one: every
// session's type is the same string, and a tail's own project is the
// session's project string when they are equal. Nothing else changes: a
// restart over the store reads nothing and the outputs equal a rebuild's.
func TestLoadSharesRepeatedStrings(t *testing.T) {
	root, state, files := startStore(t, 3)
	ix := loadedIndexer(t, root, state)
	ss := ix.Sessions()
	if len(ss) != len(files) {
		t.Fatalf("%d sessions, want %d", len(ss), len(files))
	}
	ix.mu.Lock()
	var types []*byte
	for _, u := range ix.units {
		s := u.sessions[0]
		types = append(types, unsafe.StringData(s.Type))
		if s.Tail.OwnProject != s.Project || unsafe.StringData(s.Tail.OwnProject) != unsafe.StringData(s.Project) {
			t.Errorf("%s: the tail's project %q is not the session's project string %q", s.File, s.Tail.OwnProject, s.Project)
		}
	}
	ix.mu.Unlock()
	for _, p := range types[1:] {
		if p != types[0] {
			t.Errorf("the sessions' types are %d strings, want one", len(types))
			break
		}
	}
	if err := ix.Start(); err != nil {
		t.Fatal(err)
	}
	if st := ix.Stats(); st.BytesRead != 0 || st.CatalogWrites != 0 {
		t.Errorf("Start after Load read %d bytes and wrote %d catalogs, want none", st.BytesRead, st.CatalogWrites)
	}
	assertLayoutConverged(t, "wave", root, state)
}

// A unit, held per file by a daemon, fits a 256-byte allocation.
func TestUnitSize(t *testing.T) {
	if n := unsafe.Sizeof(unit{}); n > 256 {
		t.Errorf("a unit takes %d bytes, more than 256", n)
	}
}
