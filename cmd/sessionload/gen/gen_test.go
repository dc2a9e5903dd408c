package gen_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sessionwatch/sessionwatch/cmd/sessionload/gen"
	"github.com/sessionwatch/sessionwatch/indexer"
)

func spec(layout string) gen.Spec {
	return gen.Spec{Layout: layout, Projects: 4, Sessions: 30, Lines: 9, LineSize: 600, Subagents: 0.25, Seed: 7}
}

func write(t *testing.T, sp gen.Spec) *gen.Store {
	t.Helper()
	home := t.TempDir()
	st, err := gen.Plan(gen.DefaultRoot(sp.Layout, home), sp)
	if err != nil {
		t.Fatal(err)
	}
	if err := st.Write(); err != nil {
		t.Fatal(err)
	}
	return st
}

// tree hashes every file under dir by its path relative to dir.
func tree(t *testing.T, dir string) map[string][32]byte {
	t.Helper()
	out := map[string][32]byte{}
	filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		rel, _ := filepath.Rel(dir, p)
		out[rel] = sha256.Sum256(data)
		return nil
	})
	return out
}

func TestWriteIsDeterministic(t *testing.T) {
	for _, layout := range gen.Layouts() {
		t.Run(layout, func(t *testing.T) {
			a, b := write(t, spec(layout)), write(t, spec(layout))
			ta, tb := tree(t, filepath.Dir(a.Root)), tree(t, filepath.Dir(b.Root))
			if len(ta) < len(a.Sessions) {
				t.Fatalf("%d files for %d sessions", len(ta), len(a.Sessions))
			}
			if len(ta) == 0 || len(ta) != len(tb) {
				t.Fatalf("same seed: %d files vs %d files", len(ta), len(tb))
			}
			for p, h := range ta {
				if tb[p] != h {
					t.Errorf("same seed: %s differs", p)
				}
			}
			other := spec(layout)
			other.Seed++
			c := write(t, other)
			tc := tree(t, filepath.Dir(c.Root))
			same := 0
			for _, s := range a.Sessions {
				rel, _ := filepath.Rel(filepath.Dir(a.Root), a.Path(s))
				for p, h := range tc {
					if h == ta[rel] {
						t.Errorf("another seed: %s is identical to %s", p, rel)
						same++
					}
				}
			}
		})
	}
}

// TestEveryLineIsAJSONObject checks the files line by line, and that line sizes
// follow Spec.LineSize.
func TestEveryLineIsAJSONObject(t *testing.T) {
	for _, layout := range gen.Layouts() {
		t.Run(layout, func(t *testing.T) {
			sp := spec(layout)
			sp.LineSize = 2000
			st := write(t, sp)
			var lines, size int
			for _, s := range st.Sessions {
				data, err := os.ReadFile(st.Path(s))
				if err != nil {
					t.Fatal(err)
				}
				if !bytes.HasSuffix(data, []byte("\n")) {
					t.Errorf("%s does not end in a newline", s.Rel)
				}
				for i, l := range bytes.Split(bytes.TrimSuffix(data, []byte("\n")), []byte("\n")) {
					var v map[string]any
					if err := json.Unmarshal(l, &v); err != nil {
						t.Fatalf("%s line %d: %v\n%s", s.Rel, i+1, err, l)
					}
					lines++
					size += len(l) + 1
				}
			}
			// Headers, $set and metadata lines are small: the mean is a little under.
			if mean := size / lines; mean < 700 || mean > 2600 {
				t.Errorf("mean line size %d, want about 2000", mean)
			}
		})
	}
}

// index runs a fresh indexer over the store and returns its sessions by id.
func index(t *testing.T, st *gen.Store) map[string]*indexer.Session {
	t.Helper()
	ix, err := indexer.New(indexer.Options{Source: st.Spec.Layout, Layout: st.Spec.Layout, Root: st.Root, StateDir: t.TempDir(), NativeIndex: true})
	if err != nil {
		t.Skipf("layout not in this build: %v", err)
	}
	if err := ix.Reconcile(); err != nil {
		t.Fatal(err)
	}
	out := map[string]*indexer.Session{}
	for _, s := range ix.Sessions() {
		out[s.ID] = s
	}
	return out
}

// check compares the indexer's summaries with what the generator wrote.
func check(t *testing.T, st *gen.Store, got map[string]*indexer.Session) {
	t.Helper()
	if len(got) != len(st.Sessions) {
		t.Errorf("indexed %d sessions, generated %d", len(got), len(st.Sessions))
	}
	for _, s := range st.Sessions {
		g := got[s.ID]
		if g == nil {
			t.Errorf("session %s (%s) not indexed", s.ID, s.Rel)
			continue
		}
		typ := indexer.TypeMain
		if s.Subagent {
			typ = indexer.TypeSubagent
		}
		for _, c := range []struct{ field, got, want string }{
			{"type", g.Type, typ},
			{"project", g.Project, s.Project},
			{"firstPrompt", g.FirstPrompt, s.FirstPrompt},
			{"lastActiveAt", g.LastActiveAt, indexer.FormatTime(s.LastTS)},
			{"createdAt", g.CreatedAt, indexer.FormatTime(s.Created)},
		} {
			if c.got != c.want {
				t.Errorf("%s %s = %q, want %q", s.Rel, c.field, c.got, c.want)
			}
		}
		if g.MessageCount != s.Messages {
			t.Errorf("%s messageCount = %d, want %d", s.Rel, g.MessageCount, s.Messages)
		}
		if s.Title != "" && g.Title != s.Title {
			t.Errorf("%s title = %q, want %q", s.Rel, g.Title, s.Title)
		}
		if g.SkippedLines != 0 {
			t.Errorf("%s: %d lines skipped", s.Rel, g.SkippedLines)
		}
	}
}

// TestIndexerReadsTheStore: sessionwatch's own layout parsers agree with the
// generator's ground truth for every layout this build has.
func TestIndexerReadsTheStore(t *testing.T) {
	for _, layout := range gen.Layouts() {
		t.Run(layout, func(t *testing.T) {
			st := write(t, spec(layout))
			check(t, st, index(t, st))
		})
	}
}

func TestRunAppendsWholeLinesAndResumes(t *testing.T) {
	for _, layout := range gen.Layouts() {
		t.Run(layout, func(t *testing.T) {
			st := write(t, spec(layout))
			var seen atomic.Int64 // OnAppend runs on the writers' goroutines
			ws, err := st.Run(context.Background(), gen.WriteOptions{Writers: 3, Count: 120, Partial: 0.3, Seed: 1,
				OnAppend: func(*gen.Session, time.Time, int, time.Time) { seen.Add(1) }})
			if err != nil {
				t.Fatal(err)
			}
			if ws.Appends != 120 || ws.Partials == 0 {
				t.Errorf("stats %+v, want 120 appends, some partial", ws)
			}
			if n := seen.Load(); n != 120 {
				t.Errorf("OnAppend called %d times, want 120", n)
			}
			for _, s := range st.Sessions {
				data, _ := os.ReadFile(st.Path(s))
				if !bytes.HasSuffix(data, []byte("\n")) {
					t.Errorf("%s ends in a partial line after Run", s.Rel)
				}
			}
			check(t, st, index(t, st))

			again, err := gen.Plan(st.Root, st.Spec)
			if err != nil {
				t.Fatal(err)
			}
			if err := again.Resume(); err != nil {
				t.Fatal(err)
			}
			for i, s := range again.Sessions {
				if w := st.Sessions[i]; s.Lines != w.Lines || s.Messages != w.Messages || s.FirstPrompt != w.FirstPrompt {
					t.Errorf("%s resumed at %d lines/%d messages, want %d/%d", s.Rel, s.Lines, s.Messages, w.Lines, w.Messages)
				}
			}
		})
	}
}

func TestRunKeepsTheRate(t *testing.T) {
	st := write(t, spec("wave"))
	ws, err := st.Run(context.Background(), gen.WriteOptions{Writers: 4, Rate: 200, Duration: 500 * time.Millisecond, Seed: 2})
	if err != nil {
		t.Fatal(err)
	}
	// Not a timing assertion: on a loaded machine a writer may fall behind, but it
	// must never run ahead of the rate (one append per writer may be due at once).
	if max := int64(200*ws.Elapsed.Seconds()) + 4; ws.Appends < 1 || ws.Appends > max {
		t.Errorf("%d appends in %s at 200/s, want 1..%d", ws.Appends, ws.Elapsed, max)
	}
}

func TestPlanRejectsBadSpecs(t *testing.T) {
	_, err := gen.Plan(t.TempDir(), gen.Spec{Layout: "nope", Projects: 0, Sessions: -1})
	if err == nil {
		t.Fatal("bad spec accepted")
	}
	for _, want := range []string{"layout:", "projects:", "sessions:"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not name %s", err, want)
		}
	}
}

// TestIDsDifferAcrossLayouts: stores of every layout generated with one seed (into
// one home) never share a session id, so a REF prefix picks one agent's session.
func TestIDsDifferAcrossLayouts(t *testing.T) {
	owner := map[string]string{}
	for _, layout := range gen.Layouts() {
		st, err := gen.Plan(t.TempDir(), spec(layout))
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range st.Sessions {
			if other, dup := owner[s.ID]; dup && other != layout {
				t.Fatalf("session id %s is generated for both %s and %s", s.ID, other, layout)
			}
			owner[s.ID] = layout
		}
	}
	if len(owner) < 2*30 {
		t.Fatalf("only %d distinct ids over %d layouts", len(owner), len(gen.Layouts()))
	}
}
