package indexer

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Appends to a parked unit fetch its state back from its resume file alone:
// each one reads only the appended bytes, however many come in a row (a state
// kept from an earlier read of the file would be at an older position, and
// read again from the start). A resume file put back from before the last
// append (a stale copy) holds the unit at another position: the unit is read
// again from the start, and the catalogs still equal a rebuild's; so does a
// resume file left without its catalog, whose states are still taken, and one
// cut short, from which no state is taken.
func TestFetchStateFromResumeFileOnly(t *testing.T) {
	root, state, files := startStore(t, 2)
	ix := loadedIndexer(t, root, state)
	if err := ix.Start(); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(state, "index", "wave", ProjectKey("/w/p0"))
	resume := filepath.Join(dir, ResumeName)
	appendOnce := func(i int) (read int64) {
		t.Helper()
		before := ix.Stats().BytesRead
		add := msg(fmt.Sprintf("2026-01-02T00:00:%02dZ", i), fmt.Sprintf("more %d", i))
		appendFile(t, files[0], add)
		if err := ix.Update([]string{files[0]}); err != nil {
			t.Fatal(err)
		}
		if read = ix.Stats().BytesRead - before; read < int64(len(add)) {
			t.Fatalf("append %d read %d bytes, less than the %d appended", i, read, len(add))
		}
		return read
	}
	messages := func() int {
		c := layoutCatalog(t, state, "wave", "/w/p0")
		if c == nil {
			t.Fatal("no catalog of /w/p0")
		}
		return c.Sessions[0].MessageCount + c.Sessions[1].MessageCount
	}
	// A file much longer than the windows its fingerprints read: a read
	// from the start is told from a read of the append.
	appendFile(t, files[0], msg("2026-01-02T00:00:00Z", strings.Repeat("long prompt ", 800)))
	if err := ix.Update([]string{files[0]}); err != nil {
		t.Fatal(err)
	}
	whole := func() int64 {
		fi, err := os.Stat(files[0])
		if err != nil {
			t.Fatal(err)
		}
		return fi.Size()
	}
	var stale []byte
	for i := 1; i <= 3; i++ {
		if i == 2 {
			stale, _ = os.ReadFile(resume)
		}
		if read := appendOnce(i); read >= whole()/2 {
			t.Errorf("append %d read %d bytes: more than the append (the state was not fetched)", i, read)
		}
		if got := messages(); got != 3+i {
			t.Errorf("after append %d: %d messages, want %d", i, got, 3+i)
		}
		if lazy, all := stateless(ix); lazy != all {
			t.Errorf("after append %d: %d of %d units hold no state in memory, want all", i, lazy, all)
		}
	}
	assertLayoutConverged(t, "wave", root, state)

	// A stale resume file: files[0] is there at an older position.
	if err := os.WriteFile(resume, stale, 0o600); err != nil {
		t.Fatal(err)
	}
	if read := appendOnce(4); read < whole() {
		t.Errorf("after a stale resume file the append read %d bytes, want the whole file (%d)", read, whole())
	}
	if got := messages(); got != 7 {
		t.Errorf("after a stale resume file: %d messages, want 7", got)
	}
	assertLayoutConverged(t, "wave", root, state)

	// The catalog gone, its resume file kept: the states are still there.
	if err := os.Remove(filepath.Join(dir, CatalogName)); err != nil {
		t.Fatal(err)
	}
	if read := appendOnce(5); read >= whole()/2 {
		t.Errorf("without its catalog the append read %d bytes: the state in the resume file was not taken", read)
	}
	if got := messages(); got != 8 {
		t.Errorf("after the catalog was removed: %d messages, want 8", got)
	}
	assertLayoutConverged(t, "wave", root, state)

	// A resume file cut before its states: its tails match, but no state is
	// taken from it, and the unit is read again from the start.
	data, err := os.ReadFile(resume)
	if err != nil {
		t.Fatal(err)
	}
	cut := strings.Index(string(data), "\n"+resumeStatesLine+"\n")
	if cut < 0 {
		t.Fatalf("no states line in %s", resume)
	}
	if err := os.WriteFile(resume, data[:cut+1], 0o600); err != nil {
		t.Fatal(err)
	}
	if read := appendOnce(6); read < whole() {
		t.Errorf("after a resume file cut before its states the append read %d bytes, want the whole file (%d)", read, whole())
	}
	if got := messages(); got != 9 {
		t.Errorf("after a resume file cut before its states: %d messages, want 9", got)
	}
	assertLayoutConverged(t, "wave", root, state)
}
