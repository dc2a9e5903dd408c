package main

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"testing"
	"time"

	"github.com/sessionwatch/sessionwatch/cmd/sessionload/gen"
	"github.com/sessionwatch/sessionwatch/indexer"
)

func TestGenWriteAndScan(t *testing.T) {
	root := filepath.Join(t.TempDir(), ".wave", "projects")
	flags := []string{"--layout", "wave", "--projects", "3", "--sessions", "40", "--lines", "6", "--line-size", "400", "--seed", "5"}
	if code := run(context.Background(), append(append([]string{"gen"}, flags...), root), io.Discard, os.Stderr); code != 0 {
		t.Fatalf("gen exit %d", code)
	}
	if code := run(context.Background(), append(append([]string{"write"}, flags...), "--rate", "0", "--count", "100", "--duration", "0", "--partial", "0.5", root), io.Discard, os.Stderr); code != 0 {
		t.Fatalf("write exit %d", code)
	}
	// The store as the writers left it: replay the plan over the files.
	st, err := gen.Plan(root, gen.Spec{Layout: "wave", Projects: 3, Sessions: 40, Lines: 6, LineSize: 400, Subagents: 0.1, Seed: 5})
	if err != nil {
		t.Fatal(err)
	}
	if err := st.Resume(); err != nil {
		t.Fatal(err)
	}
	l, _ := indexer.LookupLayout("wave")
	for _, mode := range []string{modeHeadTail, modeFull} {
		ss, err := scanStore(l.(indexer.LineLayout), root, mode, mode == modeFull, runtime.GOMAXPROCS(0))
		if err != nil {
			t.Fatal(err)
		}
		byID := map[string]*indexer.Session{}
		for _, s := range ss {
			byID[s.ID] = s
		}
		mains := 0
		for _, s := range st.Sessions {
			if s.Subagent {
				if byID[s.ID] != nil {
					t.Errorf("%s: subagent %s listed", mode, s.ID)
				}
				continue
			}
			mains++
			got := byID[s.ID]
			if got == nil || got.MessageCount != s.Messages || got.FirstPrompt != s.FirstPrompt {
				t.Errorf("%s: session %s = %+v, want %d messages, prompt %q", mode, s.ID, got, s.Messages, s.FirstPrompt)
			}
		}
		if len(ss) != mains {
			t.Errorf("%s listed %d sessions, want %d", mode, len(ss), mains)
		}
	}
}

// TestHeadTailReadsOnlyTheEnds: on transcripts longer than two windows the
// head-and-tail lister sees the first prompt and the last activity but not the
// middle (so its message count is short), as the agents' lite readers do.
func TestHeadTailReadsOnlyTheEnds(t *testing.T) {
	root := filepath.Join(t.TempDir(), ".wave", "projects")
	st, err := gen.Plan(root, gen.Spec{Layout: "wave", Projects: 1, Sessions: 2, Lines: 400, Spread: -1, LineSize: 1024, Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	if err := st.Write(); err != nil {
		t.Fatal(err)
	}
	l, _ := indexer.LookupLayout("wave")
	ht, err := scanStore(l.(indexer.LineLayout), root, modeHeadTail, true, 1)
	if err != nil {
		t.Fatal(err)
	}
	full, err := scanStore(l.(indexer.LineLayout), root, modeFull, false, 1)
	if err != nil {
		t.Fatal(err)
	}
	for i := range full {
		h, f := ht[i], full[i]
		if h.ID != f.ID || h.FirstPrompt != f.FirstPrompt || h.LastActiveAt != f.LastActiveAt {
			t.Errorf("head+tail %+v and full %+v disagree on the ends", h, f)
		}
		if h.MessageCount >= f.MessageCount || h.MessageCount == 0 {
			t.Errorf("head+tail counted %d of %d messages: it read more than the ends", h.MessageCount, f.MessageCount)
		}
	}
}

func TestTrackerSeesCatalogUpdates(t *testing.T) {
	dir := t.TempDir()
	catalog := filepath.Join(dir, indexer.CatalogName)
	tr, err := newTracker([]string{dir})
	if err != nil {
		t.Fatal(err)
	}
	defer tr.close()
	t0 := time.Date(2026, 11, 1, 10, 0, 0, 0, time.UTC)
	sent := time.Now()
	tr.add(catalog, "s1", t0, sent)
	tr.add(catalog, "s1", t0.Add(time.Millisecond), sent)
	tr.add(catalog, "s2", t0, sent)
	write := func(body string) {
		tmp := filepath.Join(dir, indexer.TempPrefix+"x")
		if err := os.WriteFile(tmp, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(tmp, catalog); err != nil {
			t.Fatal(err)
		}
	}
	// s1 shows its second append (so both are settled); s2 not yet.
	write("{\"version\":1,\"sessions\":[\n" +
		`{"id":"s1","lastActiveAt":"2026-11-01T10:00:00.001Z","tail":{"lastTs":"x"}},` + "\n" +
		`{"id":"s2","lastActiveAt":"2026-11-01T09:00:00.000Z"}` + "\n]}\n")
	pending := func() int {
		tr.mu.Lock()
		defer tr.mu.Unlock()
		return tr.n
	}
	for deadline := time.Now().Add(5 * time.Second); pending() != 1; time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%d appends pending after s1's update, want 1", pending())
		}
	}
	write("{\"version\":1,\"sessions\":[\n" + `{"id":"s2","lastActiveAt":"2026-11-01T10:00:00.000Z"}` + "\n]}\n")
	if n := tr.wait(5 * time.Second); n != 0 {
		t.Fatalf("%d appends pending after s2's update", n)
	}
	lat, _, lost := tr.take()
	if len(lat) != 3 || lost != 0 {
		t.Errorf("took %d latencies, %d lost; want 3, 0", len(lat), lost)
	}
	if q := quantile([]time.Duration{1, 2, 3, 4}, 0.5); q != 2 {
		t.Errorf("median of 1..4 = %d, want 2", q)
	}
}

// TestBenchStateDir: --state-dir moves every store's state dir out of the work
// directory, one directory per store; without it the state stays beside the store.
func TestBenchStateDir(t *testing.T) {
	work, elsewhere := t.TempDir(), t.TempDir()
	b := &bench{work: work}
	if got, want := b.stateDir("scale"), filepath.Join(work, "scale", "state"); got != want {
		t.Errorf("default state dir = %s, want %s", got, want)
	}
	b.o.stateDir = elsewhere
	for _, name := range []string{"scale", "search-10000"} {
		if got, want := b.stateDir(name), filepath.Join(elsewhere, name); got != want {
			t.Errorf("--state-dir: state dir of %s = %s, want %s", name, got, want)
		}
	}
}
