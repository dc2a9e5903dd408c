package indexer

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestPrefetchReadOfSizesAtTheBoundaries: transcripts whose sizes sit at the
// read's boundaries (a chunk, the prefetch buffer), end in a partial line, are
// empty or sparse are read by the workers (readLinesSized, which stops where
// the stat said the file ends) exactly as the walk reads them (readLines to a
// read that returns nothing): the catalogs and what the consumers are handed
// are the same.
func TestPrefetchReadOfSizesAtTheBoundaries(t *testing.T) {
	root := filepath.Join(t.TempDir(), "store")
	dir := filepath.Join(root, "home-u-p")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	head := `{"type":"metadata","workdir":"/home/u/p","createdAt":"2026-01-01T00:00:00Z"}` + "\n"
	// A transcript of size bytes: messages, then a skipped line padding it
	// out; newline false: its last line has none.
	make := func(size int, newline bool) string {
		var b strings.Builder
		b.WriteString(head)
		for j := 0; b.Len() < size-2048; j++ {
			b.WriteString(msg(fmt.Sprintf("2026-01-01T00:%02d:%02dZ", j/60%60, j%60), strings.Repeat("w", 900)))
		}
		pad := size - b.Len() - 1
		if pad < 0 {
			return b.String()[:size]
		}
		b.WriteString(strings.Repeat("x", pad))
		if newline {
			b.WriteString("\n")
		} else {
			b.WriteString("y")
		}
		return b.String()
	}
	var sizes []int
	for _, s := range []int{readChunk, 2 * readChunk, prefetchBufferMax} {
		sizes = append(sizes, s-1, s, s+1)
	}
	n := 0
	write := func(data string) string {
		p := filepath.Join(dir, fmt.Sprintf("%08x-0000-4000-8000-%012x.jsonl", n, n))
		n++
		if err := os.WriteFile(p, []byte(data), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	for _, s := range sizes {
		for _, nl := range []bool{true, false} {
			if data := make(s, nl); len(data) != s {
				t.Fatalf("made %d bytes, want %d", len(data), s)
			} else {
				write(data)
			}
		}
	}
	write("")                                           // empty
	write(head)                                         // one line
	write(strings.TrimSuffix(head, "\n"))               // one line without its newline
	write(head + msg("2026-01-01T00:00:01Z", "a")[:20]) // a partial last line
	sparse := write(head)
	if err := os.Truncate(sparse, int64(readChunk+17)); err != nil { // a hole after the head
		t.Fatal(err)
	}
	if f, err := os.OpenFile(sparse, os.O_WRONLY|os.O_APPEND, 0); err == nil {
		f.WriteString("\n" + msg("2026-01-01T00:00:02Z", "after the hole"))
		f.Close()
	}
	for range prefetchMin {
		write(head + msg("2026-01-01T00:00:03Z", "filler"))
	}
	for _, consumer := range []bool{false, true} {
		run := func(prefetch bool) (map[string]string, []string, int) {
			m := prefetchMin
			defer func() { prefetchMin = m }()
			if !prefetch {
				prefetchMin = 1 << 30
			}
			state := t.TempDir()
			ix := newLayoutIndexer(t, "wave", root, state, false)
			log := &callLog{}
			if consumer {
				ix.consumers = append(ix.consumers, log)
			}
			if err := ix.Reconcile(); err != nil {
				t.Fatal(err)
			}
			return treeFiles(t, filepath.Join(state, "index"), ""), log.calls, ix.prefetched
		}
		want, wantCalls, _ := run(false)
		got, gotCalls, prefetched := run(true)
		if prefetched == 0 {
			t.Fatalf("consumer %v: nothing read on the workers", consumer)
		}
		if len(got) != len(want) {
			t.Errorf("consumer %v: %d catalog files read on the workers, %d by the walk", consumer, len(got), len(want))
		}
		for p, data := range want {
			if got[p] != data {
				t.Errorf("consumer %v: catalog %s differs read on the workers:\n%s", consumer, p, lineDiff(data, got[p]))
			}
		}
		if strings.Join(gotCalls, "\n") != strings.Join(wantCalls, "\n") {
			t.Errorf("consumer %v: the consumer was handed %d calls read on the workers, %d by the walk", consumer, len(gotCalls), len(wantCalls))
		}
	}
}
