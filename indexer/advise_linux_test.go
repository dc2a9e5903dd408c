//go:build linux && (amd64 || arm64)

package indexer

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
	"unsafe"
)

// residentPages counts the pages of the file at path in the page cache.
func residentPages(t *testing.T, path string) (resident, pages int) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		t.Fatal(err)
	}
	m, err := syscall.Mmap(int(f.Fd()), 0, int(fi.Size()), syscall.PROT_READ, syscall.MAP_SHARED)
	if err != nil {
		t.Fatal(err)
	}
	defer syscall.Munmap(m)
	pages = (len(m) + os.Getpagesize() - 1) / os.Getpagesize()
	vec := make([]byte, pages)
	if _, _, errno := syscall.Syscall(syscall.SYS_MINCORE, uintptr(unsafe.Pointer(&m[0])), uintptr(len(m)), uintptr(unsafe.Pointer(&vec[0]))); errno != 0 {
		t.Fatal(errno)
	}
	for _, v := range vec {
		resident += int(v & 1)
	}
	return resident, pages
}

// evict drops f's pages from the page cache.
func evict(t *testing.T, f *os.File) {
	t.Helper()
	syscall.Fsync(int(f.Fd())) // a dirty page is not dropped
	const fadvDontNeed = 4
	syscall.Syscall6(syscall.SYS_FADVISE64, f.Fd(), 0, 0, fadvDontNeed, 0, 0)
}

// waitCached waits for every page of the file at path to be in the page cache.
func waitCached(t *testing.T, path string) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		res, pages := residentPages(t, path)
		if res == pages {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d of %d pages cached after the advice", res, pages)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// TestReadAheadAdvisesTheKernel: the advice brings a file evicted from the
// page cache back into it without the file being read, and the file it hands
// over reads from the start.
func TestReadAheadAdvisesTheKernel(t *testing.T) {
	path := filepath.Join(t.TempDir(), "t.jsonl")
	data := strings.Repeat(`{"type":"message","text":"`+strings.Repeat("x", 200)+`"}`+"\n", 200) // ~45 KiB
	if err := os.WriteFile(path, []byte(data), 0o600); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	evict(t, f)
	if res, pages := residentPages(t, path); res != 0 {
		t.Skipf("%d of %d pages stay cached after POSIX_FADV_DONTNEED: this file system keeps them (tmpfs?)", res, pages)
	}
	// The advice queues a read of the whole file (up to readaheadMax): every
	// page comes into the cache without a read of ours.
	if !willNeed(&unitFile{fd: int(f.Fd())}) {
		t.Fatal("a regular file takes no advice")
	}
	waitCached(t, path)
	// readAhead of a cold file advises it. Its probe (a one-byte RWF_NOWAIT
	// read) may itself start the kernel's readahead of the first pages, which a
	// fast device can finish before the probe looks again (often so on a
	// loaded machine): the file then reads as cached, fast, and is not advised.
	evict(t, f)
	g, fast := readAhead(path, nil)
	if g == nil {
		t.Fatal("not opened")
	}
	defer g.Close()
	if fast {
		t.Log("the probe's own readahead was done before it looked again: fast")
	} else {
		waitCached(t, path)
	}
	buf := make([]byte, len(data)+1)
	if n, _ := g.Read(buf); string(buf[:n]) != data {
		t.Errorf("the file handed over reads %d bytes, not the file", n)
	}
	// Cached now (read whole): the next advice says fast (the readahead skips a
	// warm store).
	if h, fast := readAhead(path, nil); h == nil || !fast {
		t.Errorf("a cached file: opened %v, fast %v", h != nil, fast)
	} else {
		h.Close()
	}
}

// TestReadAheadTakesNoPipe: a FIFO named like a transcript is neither waited
// on nor handed over.
func TestReadAheadTakesNoPipe(t *testing.T) {
	path := filepath.Join(t.TempDir(), "t.jsonl")
	if err := syscall.Mkfifo(path, 0o600); err != nil {
		t.Skip(err)
	}
	if f, _ := readAhead(path, nil); f != nil {
		f.Close()
		t.Error("a FIFO was handed over")
	}
}
