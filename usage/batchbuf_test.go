package usage

import (
	"bufio"
	"bytes"
	"fmt"
	"hash/crc32"
	"os"
	"path/filepath"
	"runtime"
	"sync"
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

// Review test of the pooled batch buffer: batches appended to several files at
// once, small ones and ones larger than the buffer, each through a fill that
// writes in pieces, land whole in their own file, and each file's running
// CRC-32C is that of its bytes (nothing of a buffer handed back is written or
// checksummed later).
func TestAppendBatchPooledBufferConcurrent(t *testing.T) {
	dir := t.TempDir()
	const files, batches = 6, 40
	var wg sync.WaitGroup
	errs := make(chan error, files)
	for i := range files {
		wg.Add(1)
		go func() {
			defer wg.Done()
			path := filepath.Join(dir, fmt.Sprintf("f%d.jsonl", i))
			if err := os.WriteFile(path, nil, 0o600); err != nil {
				errs <- err
				return
			}
			f := &logFile{path: path}
			var want bytes.Buffer
			for b := range batches {
				size := 10 + (i*batches+b)%97
				if b%7 == 3 {
					size = 70 << 10 // larger than the buffer
				}
				piece := bytes.Repeat([]byte{'a' + byte(i)}, size)
				piece[len(piece)-1] = '\n'
				_, err := f.appendBatchWith(func(w *bufio.Writer) error {
					for range 3 {
						if _, err := w.Write(piece); err != nil {
							return err
						}
						runtime.Gosched()
					}
					return nil
				}, false)
				if err != nil {
					errs <- err
					return
				}
				want.Write(piece)
				want.Write(piece)
				want.Write(piece)
			}
			data, err := os.ReadFile(path)
			if err != nil {
				errs <- err
				return
			}
			if !bytes.Equal(data, want.Bytes()) || f.tail != int64(len(data)) {
				errs <- fmt.Errorf("%s: %d bytes (tail %d), want %d as written", path, len(data), f.tail, want.Len())
				return
			}
			if crc := crc32.Update(0, castagnoli(), data); f.crc != crc {
				errs <- fmt.Errorf("%s: running CRC %08x, the file's is %08x", path, f.crc, crc)
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}
