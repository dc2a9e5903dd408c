package indexer

import (
	"strings"
	"testing"
)

// JSONString's result is memory of its own, escapes or none: ProveLean's units
// keep the files unitTails hands them (leanUnitLocked does not clone them), read
// from the resume buffer a liteReader reuses for the next catalog.
func TestJSONStringOwnsItsBytes(t *testing.T) {
	for _, raw := range []string{`"/r/a/b.jsonl"`, `"/r/a\/b.jsonl"`, `"/r/é.jsonl"`} {
		buf := []byte(raw)
		s, ok := JSONString(buf)
		if !ok {
			t.Fatalf("JSONString(%s) failed", raw)
		}
		want := strings.Clone(s)
		for i := range buf {
			buf[i] = 'x'
		}
		if s != want {
			t.Errorf("JSONString(%s) = %q, %q once its input was overwritten: it aliases its input", raw, want, s)
		}
	}
}

// The files unitTails hands fn stay as they were once the reader's buffers
// are reused for the next catalog (and then wiped): ProveLean's units keep
// them as their keys, across every catalog of the source.
func TestUnitTailsFilesOutliveTheBuffers(t *testing.T) {
	state := t.TempDir()
	leanStore(t, "wave", state)
	var lr liteReader
	type kept struct{ file, want string }
	var files []kept
	proved := 0
	forEachCatalog(t, state, "wave", func(cat string) {
		ok, stopped, err := lr.unitTails(cat, "wave", "wave", func(file string, _ *Tail) bool {
			files = append(files, kept{file, strings.Clone(file)})
			return true
		})
		if err != nil || stopped {
			t.Fatalf("%s: unitTails: stopped %v, err %v", cat, stopped, err)
		}
		if ok {
			proved++
		}
	})
	if proved < 2 || len(files) < 2 {
		t.Fatalf("%d catalogs read the lean way, %d files: the test needs two or more of each", proved, len(files))
	}
	clear(lr.cat)
	clear(lr.res)
	for _, f := range files {
		if f.file != f.want {
			t.Errorf("a file unitTails gave changed to %q (was %q) once the reader's buffers were reused", f.file, f.want)
		}
	}
}
