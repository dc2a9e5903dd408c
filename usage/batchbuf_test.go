package usage

import (
	"bytes"
	"os"
	"path/filepath"
	"runtime"
	"testing"
)

// A batch appended under load reuses its buffer: a small batch allocates far
// less than the 64 KiB buffer each append once made, and every batch lands
// whole and in order.
func TestAppendBatchReusesItsBuffer(t *testing.T) {
	path := filepath.Join(t.TempDir(), UnitsName)
	if err := os.WriteFile(path, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	f := &logFile{path: path}
	line := func(i int) []byte { return []byte{'{', '"', 'a' + byte(i%26), '"', ':', '1', '}', '\n'} }
	if _, err := f.appendBatch(line(0), false); err != nil {
		t.Fatal(err)
	}
	const n = 64
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	for i := 1; i <= n; i++ {
		if _, err := f.appendBatch(line(i), false); err != nil {
			t.Fatal(err)
		}
	}
	runtime.ReadMemStats(&after)
	// (The race detector drops a quarter of what a sync.Pool is handed.)
	if per := (after.TotalAlloc - before.TotalAlloc) / n; per > 32<<10 {
		t.Errorf("an append of a %d-byte batch allocated %d bytes, want under 32 KiB (its buffer reused)", len(line(0)), per)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var want bytes.Buffer
	for i := 0; i <= n; i++ {
		want.Write(line(i))
	}
	if !bytes.Equal(data, want.Bytes()) || f.tail != int64(want.Len()) {
		t.Errorf("file holds %q (tail %d), want %q", data, f.tail, want.Bytes())
	}
}
