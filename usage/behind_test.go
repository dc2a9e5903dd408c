package usage

import (
	"os"
	"path/filepath"
	"testing"
)

// The marker makes a stamped ledger unsettled; ClearBehind removes only the
// marker a pass saw, not one left again during the pass.
func TestBehindMarker(t *testing.T) {
	state := t.TempDir()
	if err := MarkBehind(state); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(state, DirName, BehindName)
	if Stamped(state) {
		t.Fatal("stamped with no ledger")
	}
	seen := BehindMark(state)
	if err := MarkBehind(state); err != nil { // another writer, during the pass
		t.Fatal(err)
	}
	if err := ClearBehind(state, seen); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Lstat(path); err != nil {
		t.Fatal("a marker left during the pass was removed")
	}
	if err := ClearBehind(state, BehindMark(state)); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Lstat(path); err == nil {
		t.Fatal("the marker the pass saw is still there")
	}
	if err := ClearBehind(state, BehindMark(state)); err != nil {
		t.Fatal("no marker:", err)
	}
}
