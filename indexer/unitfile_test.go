package indexer

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"syscall"
	"testing"
	"time"
)

// countingReader counts the reads made of a unitFile, and runs after (if set)
// after each.
type countingReader struct {
	*unitFile
	reads int
	after func(n int)
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.unitFile.Read(p)
	c.reads++
	if c.after != nil {
		c.after(n)
	}
	return n, err
}

// openCounted opens path as the workers do, with its stat.
func openCounted(t *testing.T, path string) (*countingReader, unitStat) {
	t.Helper()
	f, err := openUnitFile(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	st, err := f.stat()
	if err != nil {
		t.Fatal(err)
	}
	return &countingReader{unitFile: f}, st
}

// collectLines reads f with readLinesSized from t.
func collectLines(t *testing.T, f io.ReadSeeker, tl *Tail, size int64) []string {
	t.Helper()
	var got []string
	if _, err := readLinesSized(f, tl, size, func(_ int64, line []byte) { got = append(got, string(line)) }); err != nil {
		t.Fatal(err)
	}
	return got
}

// TestReadLinesSizedEndsAtTheStatSize: a read that ends where the stat said
// the file ends is the last (no second read to see the end), with the lines,
// offset and skipped line of readLines; a file longer than a chunk is read
// chunk by chunk to that end.
func TestReadLinesSizedEndsAtTheStatSize(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct {
		name  string
		data  string
		reads int
	}{
		{"small", "{\"a\":1}\n\n{\"b\":2}\npartial", 1},
		{"two chunks", strings.Repeat("{\"x\":\""+strings.Repeat("y", 1000)+"\"}\n", readChunk/1000+5), 2},
		{"exactly a chunk", strings.Repeat("z", readChunk-1) + "\n", 2},
		{"empty", "", 1},
	} {
		path := filepath.Join(dir, strings.ReplaceAll(tc.name, " ", "-"))
		if err := os.WriteFile(path, []byte(tc.data), 0o600); err != nil {
			t.Fatal(err)
		}
		f, st := openCounted(t, path)
		var sized Tail
		got := collectLines(t, f, &sized, st.size)
		if f.reads != tc.reads {
			t.Errorf("%s: %d reads, want %d", tc.name, f.reads, tc.reads)
		}
		g, _ := openCounted(t, path)
		var plain Tail
		want := collectLines(t, g, &plain, -1)
		if !reflect.DeepEqual(got, want) || !reflect.DeepEqual(sized, plain) {
			t.Errorf("%s: read to the stat size %d lines, tail %+v; to the end %d lines, tail %+v", tc.name, len(got), sized, len(want), plain)
		}
	}
}

// TestReadLinesSizedFileChangedAfterItsStat: a file appended to or cut between
// its stat and its read is read to the end the reads find, as readLines does;
// one appended after the read found its end is read from the offset recorded
// by the next look, which then finds every line once.
func TestReadLinesSizedFileChangedAfterItsStat(t *testing.T) {
	dir := t.TempDir()
	lines := []string{`{"n":1}`, `{"n":2}`, `{"n":3}`}
	whole := strings.Join(lines, "\n") + "\n"
	write := func(name, data string) string {
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, []byte(data), 0o600); err != nil {
			t.Fatal(err)
		}
		return path
	}
	appendTo := func(path, data string) {
		t.Helper()
		a, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
		if err != nil {
			t.Fatal(err)
		}
		defer a.Close()
		if _, err := a.WriteString(data); err != nil {
			t.Fatal(err)
		}
	}

	// Grown after the stat: the first read returns more than the stat said.
	path := write("grown", lines[0]+"\n")
	f, st := openCounted(t, path)
	appendTo(path, lines[1]+"\n"+lines[2]+"\n")
	var tl Tail
	if got := collectLines(t, f, &tl, st.size); !reflect.DeepEqual(got, lines) || tl.Offset != int64(len(whole)) {
		t.Errorf("grown after its stat: %q to offset %d, want %q to %d", got, tl.Offset, lines, len(whole))
	}

	// Cut after the stat: the read ends where the file now does.
	path = write("cut", whole)
	f, st = openCounted(t, path)
	if err := os.Truncate(path, int64(len(lines[0])+1)); err != nil {
		t.Fatal(err)
	}
	tl = Tail{}
	if got := collectLines(t, f, &tl, st.size); !reflect.DeepEqual(got, lines[:1]) || tl.Offset != int64(len(lines[0])+1) {
		t.Errorf("cut after its stat: %q to offset %d", got, tl.Offset)
	}

	// Appended after the read found its end: this read stops there, the next
	// look reads the rest from the offset.
	path = write("appended", lines[0]+"\n")
	f, st = openCounted(t, path)
	f.after = func(int) {
		if f.after != nil {
			f.after = nil
			appendTo(path, lines[1]+"\n"+lines[2]+"\n")
		}
	}
	tl = Tail{}
	first := collectLines(t, f, &tl, st.size)
	g, st2 := openCounted(t, path)
	rest := collectLines(t, g, &tl, st2.size)
	if got := append(first, rest...); !reflect.DeepEqual(got, lines) || tl.Offset != int64(len(whole)) {
		t.Errorf("appended after its end was read: %q then %q to offset %d, want %q to %d", first, rest, tl.Offset, lines, len(whole))
	}
}

// TestUnitFileTakesOnlyWhatTheWorkersMay: a transcript's name that is a
// symlink is not followed, a FIFO is opened without waiting and is no regular
// file, a directory is none either; each leaves no descriptor open.
func TestUnitFileTakesOnlyWhatTheWorkersMay(t *testing.T) {
	dir := t.TempDir()
	target := filepath.Join(dir, "target.jsonl")
	if err := os.WriteFile(target, []byte("{}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "link.jsonl")
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
	before := openFDsUnder(dir)
	if f, err := openUnitFile(link); err == nil {
		f.Close()
		t.Error("a symlink was opened")
	}
	fifo := filepath.Join(dir, "fifo.jsonl")
	if err := syscall.Mkfifo(fifo, 0o600); err == nil {
		done := make(chan error, 1)
		go func() {
			f, err := openUnitFile(fifo)
			if err == nil {
				var st unitStat
				if st, err = f.stat(); err == nil && st.regular {
					err = os.ErrInvalid
				}
				f.Close()
			}
			done <- err
		}()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("a FIFO: %v", err)
			}
		case <-time.After(10 * time.Second):
			t.Fatal("the open of a FIFO waits for a writer")
		}
	}
	sub := filepath.Join(dir, "dir.jsonl")
	if err := os.Mkdir(sub, 0o700); err != nil {
		t.Fatal(err)
	}
	if f, err := openUnitFile(sub); err == nil {
		if st, err := f.stat(); err != nil || st.regular {
			t.Errorf("a directory: regular %v, %v", st.regular, err)
		}
		f.Close()
	}
	f, err := openUnitFile(target)
	if err != nil {
		t.Fatal(err)
	}
	st, err := f.stat()
	fi, _ := os.Stat(target)
	dev, ino := statIdentity(fi)
	if err != nil || !st.regular || st.size != fi.Size() || st.mtime != fi.ModTime().UnixNano() || st.dev != dev || st.ino != ino || st.unlinked {
		t.Errorf("a transcript's stat %+v, %v; os.Stat says size %d mtime %d dev %d ino %d", st, err, fi.Size(), fi.ModTime().UnixNano(), dev, ino)
	}
	os.Remove(target)
	if st, err := f.stat(); err != nil || !st.unlinked {
		t.Errorf("a removed transcript's stat %+v, %v: not unlinked", st, err)
	}
	if err := f.Close(); err != nil {
		t.Error(err)
	}
	if err := f.Close(); err != nil {
		t.Errorf("a second close: %v", err)
	}
	if n := openFDsUnder(dir); before >= 0 && n != before {
		t.Errorf("%d descriptors under the dir open, %d before", n, before)
	}
}

// TestPrefetchReadOfWhatIsNoTranscript: a unit whose name became a symlink, a
// FIFO, a directory or a character device after the walk listed it is not
// read by a worker (the walk reads it, as it would have), whether the
// readahead opened it before or not; no descriptor is left open, and a pass
// over a store holding such names leaves none either.
func TestPrefetchReadOfWhatIsNoTranscript(t *testing.T) {
	root := filepath.Join(t.TempDir(), "store")
	manyWaveSessions(t, root, 60)
	outside := filepath.Join(t.TempDir(), "outside.jsonl")
	if err := os.WriteFile(outside, []byte(`{"type":"metadata","workdir":"/x"}`+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	setReadahead(t, 0, 1, 1000, 1, false)
	ix := newLayoutIndexer(t, "wave", root, t.TempDir(), false)
	before := openFDsUnder(root)
	ix.mu.Lock()
	ix.startPrefetchLocked()
	pf := ix.fetch
	if pf == nil {
		ix.mu.Unlock()
		t.Fatal("no prefetch started")
	}
	replace := []func(p string) error{
		func(p string) error { return os.Symlink(outside, p) },
		func(p string) error { return syscall.Mkfifo(p, 0o600) },
		func(p string) error { return os.Mkdir(p, 0o700) },
	}
	// A character device that reads without end (/dev/zero's numbers), where
	// the system lets the test make one.
	mkchr := func(p string) error { return syscall.Mknod(p, syscall.S_IFCHR|0o600, 1<<8|5) }
	if err := mkchr(filepath.Join(t.TempDir(), "zero")); err == nil {
		replace = append(replace, mkchr)
	} else {
		t.Logf("no character device: %v", err)
	}
	for i, mk := range replace {
		for _, opened := range []bool{false, true} {
			urel := pf.items[2*i+btoi(opened)]
			p := ix.unitPath(urel)
			var f *unitFile
			if opened {
				if f, _ = readAhead(p, nil); f == nil {
					t.Fatalf("%s: not opened ahead", urel)
				}
			}
			if err := os.Remove(p); err != nil {
				t.Fatal(err)
			}
			if err := mk(p); err != nil {
				t.Fatal(err)
			}
			done := make(chan *fetched, 1)
			go func() {
				r := &fetched{done: make(chan struct{})}
				pf.read(urel, r, f)
				done <- r
			}()
			select {
			case r := <-done:
				if r.ok {
					t.Errorf("%s (opened ahead %v) replaced by what is no transcript (%d): read", urel, opened, i)
				}
			case <-time.After(10 * time.Second):
				t.Fatalf("%s: the read waits", urel)
			}
		}
	}
	ix.stopPrefetchLocked()
	ix.mu.Unlock()
	if n := openFDsUnder(root); before >= 0 && n != before {
		t.Errorf("%d descriptors of the store open after the reads, %d before", n, before)
	}
	// A whole pass over the store as it is now.
	if err := ix.Reconcile(); err != nil {
		t.Fatal(err)
	}
	if n := openFDsUnder(root); before >= 0 && n != before {
		t.Errorf("%d descriptors of the store open after a pass, %d before", n, before)
	}
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

// BenchmarkTranscriptRead is a worker's open, stat, read and close of one small
// transcript (the files of a 100k store average 5 KiB), through an *os.File
// as before and through a unitFile.
func BenchmarkTranscriptRead(b *testing.B) {
	dir := b.TempDir()
	const files = 512
	paths := make([]string, files)
	line := `{"type":"message","text":"` + strings.Repeat("w", 400) + `"}` + "\n"
	for i := range paths {
		paths[i] = filepath.Join(dir, fmt.Sprintf("%04d.jsonl", i))
		if err := os.WriteFile(paths[i], []byte(strings.Repeat(line, 12)), 0o600); err != nil {
			b.Fatal(err)
		}
	}
	count := func(int64, []byte) {}
	b.Run("os.File", func(b *testing.B) {
		for i := 0; b.Loop(); i++ {
			f, err := os.OpenFile(paths[i%files], os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0)
			if err != nil {
				b.Fatal(err)
			}
			if _, err := f.Stat(); err != nil {
				b.Fatal(err)
			}
			var t Tail
			if _, err := readLines(f, &t, count); err != nil {
				b.Fatal(err)
			}
			f.Close()
		}
	})
	b.Run("unitFile, read until a read returns nothing", func(b *testing.B) {
		for i := 0; b.Loop(); i++ {
			f, err := openUnitFile(paths[i%files])
			if err != nil {
				b.Fatal(err)
			}
			if _, err := f.stat(); err != nil {
				b.Fatal(err)
			}
			var t Tail
			if _, err := readLines(f, &t, count); err != nil {
				b.Fatal(err)
			}
			f.Close()
		}
	})
	b.Run("unitFile", func(b *testing.B) {
		for i := 0; b.Loop(); i++ {
			f, err := openUnitFile(paths[i%files])
			if err != nil {
				b.Fatal(err)
			}
			st, err := f.stat()
			if err != nil {
				b.Fatal(err)
			}
			var t Tail
			if _, err := readLinesSized(f, &t, st.size, count); err != nil {
				b.Fatal(err)
			}
			f.Close()
		}
	})
}

// TestUnitFileErrorsNameThePath: an error of a read of an open transcript
// (here a directory, whose read says EISDIR) names the path it was opened by.
func TestUnitFileErrorsNameThePath(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "not-a-transcript.jsonl")
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	f, err := openUnitFile(dir)
	if err != nil {
		t.Skipf("a directory does not open here: %v", err)
	}
	defer f.Close()
	_, err = f.Read(make([]byte, 16))
	if err == nil || !strings.Contains(err.Error(), dir) {
		t.Errorf("read of a directory: %v, want an error naming %s", err, dir)
	}
}
