package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io/fs"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sessionwatch/sessionwatch/cmd/sessionload/gen"
	"github.com/sessionwatch/sessionwatch/indexer"
)

// crashPlan is one crash-and-converge run: writers append to many sessions (split
// lines included) and new sessions and projects appear, while the daemon is killed
// with SIGKILL at random moments and restarted.
type crashPlan struct {
	sessions int           // sessions written before the first start
	projects int           // their projects
	late     int           // sessions created while the daemon is being killed
	kills    int           // SIGKILLs
	maxUp    time.Duration // a daemon lives a uniform random time in [0, maxUp)
	rate     float64       // appends per second over all writers
	seed     uint64
}

// TestCrashAndConverge is the short crash test (the long one is behind the
// "long" build tag: go test -tags long -run CrashAndConvergeLong ./cmd/sessionwatch).
func TestCrashAndConverge(t *testing.T) {
	runCrash(t, crashPlan{sessions: 60, projects: 6, late: 12, kills: 12, maxUp: 400 * time.Millisecond, rate: 200, seed: 1})
}

func runCrash(t *testing.T, p crashPlan) {
	e := newEnv(t)
	rng := rand.New(rand.NewPCG(p.seed, 2))
	st, err := gen.Plan(e.root, gen.Spec{Layout: "wave", Projects: p.projects, Sessions: p.sessions, Lines: 4, LineSize: 300, Subagents: 0.2, Seed: int64(p.seed)})
	if err != nil {
		t.Fatal(err)
	}
	if err := st.Write(); err != nil {
		t.Fatal(err)
	}
	late, err := gen.Plan(e.root, gen.Spec{Layout: "wave", Projects: max(p.late/3, 1), Sessions: p.late, Lines: 2, LineSize: 300, Seed: int64(p.seed) + 1, ProjectPrefix: "late-"})
	if err != nil {
		t.Fatal(err)
	}

	// Writers run for the whole kill loop; Run completes a split line before it
	// returns, so the store ends with whole lines.
	ctx, stopWriters := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	var werr error
	wg.Add(1)
	go func() {
		defer wg.Done()
		_, werr = st.Run(ctx, gen.WriteOptions{Writers: 4, Rate: p.rate, Partial: 0.2, Seed: int64(p.seed)})
	}()
	defer func() { stopWriters(); wg.Wait() }()

	created := 0
	for k := 0; k < p.kills; k++ {
		cmd := exec.Command(binPath, "run")
		cmd.Env = append(os.Environ(), "HOME="+e.home, "SESSIONWATCH_CONFIG="+e.config)
		stderr := &syncWriter{b: &bytes.Buffer{}}
		cmd.Stderr = stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		// New sessions (in new project dirs) appear while the daemon runs or is dead.
		for n := 0; n < 2 && created < len(late.Sessions); n++ {
			writeSession(t, late, late.Sessions[created])
			created++
		}
		// The random moment of death: this sleep is the experiment, not a wait for
		// an outcome; everything asserted below is polled with a deadline.
		time.Sleep(time.Duration(rng.Int64N(int64(p.maxUp))))
		cmd.Process.Kill()
		err := cmd.Wait()
		if code := cmd.ProcessState.ExitCode(); code > 0 {
			// It may have failed before the kill: that is a finding, not a crash.
			t.Fatalf("daemon %d exited %d before SIGKILL (%v); stderr:\n%s", k, code, err, stderr.String())
		}
	}
	for created < len(late.Sessions) {
		writeSession(t, late, late.Sessions[created])
		created++
	}
	stopWriters()
	wg.Wait()
	if werr != nil {
		t.Fatal(werr)
	}

	// The last restart: once the store is quiet, everything converges.
	d := e.startDaemon()
	// reindex --check compares the search index with a rebuild too.
	waitFor(t, 60*time.Second, "catalog, native and search indexes equal a rebuild", func() bool {
		_, _, code := e.cli("reindex", "--check")
		return code == 0
	})
	checkConverged(t, e, append(st.Sessions, late.Sessions...))
	if code := d.stop(); code != 0 {
		t.Errorf("final daemon exit code %d, want 0; stderr:\n%s", code, d.stderr)
	}
}

func writeSession(t *testing.T, st *gen.Store, s *gen.Session) {
	t.Helper()
	one := *st
	one.Sessions = []*gen.Session{s}
	if err := one.Write(); err != nil {
		t.Fatal(err)
	}
}

// checkConverged asserts what must hold after any sequence of crashes: every index
// parses, no temp file is left, every session is listed once, with the message
// count the writers produced (no line lost, none counted twice).
func checkConverged(t *testing.T, e *testEnv, sessions []*gen.Session) {
	t.Helper()
	var temps []string
	seen := map[string]string{}
	for _, dir := range []string{e.state, e.root} {
		filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
			if err != nil {
				return nil
			}
			if strings.HasPrefix(d.Name(), indexer.TempPrefix) {
				temps = append(temps, p)
			}
			if d.IsDir() || d.Name() != indexer.CatalogName {
				return nil
			}
			data, err := os.ReadFile(p)
			if err != nil {
				t.Errorf("read %s: %v", p, err)
				return nil
			}
			if dir == e.root {
				var native struct {
					Sessions map[string]json.RawMessage `json:"sessions"`
				}
				if err := json.Unmarshal(data, &native); err != nil || native.Sessions == nil {
					t.Errorf("native index %s does not parse: %v", p, err)
				}
				return nil
			}
			c, err := indexer.DecodeCatalog(data)
			if err != nil {
				t.Errorf("catalog %s does not parse: %v", p, err)
				return nil
			}
			// Every session's resume state is beside it, in step with its line.
			if full, err := indexer.ReadCatalog(p); err != nil {
				t.Errorf("catalog %s: %v", p, err)
			} else {
				for _, s := range full.Sessions {
					if s.Tail == nil {
						t.Errorf("catalog %s: session %s has no resume state in %s", p, s.ID, indexer.ResumeName)
					}
				}
			}
			for _, s := range c.Sessions {
				if prev, dup := seen[s.ID]; dup {
					t.Errorf("session %s listed twice (%s and %s)", s.ID, prev, p)
				}
				seen[s.ID] = p
			}
			return nil
		})
	}
	if len(temps) > 0 {
		t.Errorf("%d temp files left behind: %s", len(temps), strings.Join(temps, ", "))
	}
	for _, s := range sessions {
		got := e.sessionIn(s.Project, s.ID)
		switch {
		case got == nil:
			t.Errorf("session %s (%s) missing from the catalog", s.ID, s.Rel)
		case got.MessageCount != s.Messages:
			t.Errorf("session %s: messageCount %d, want %d (lines written)", s.Rel, got.MessageCount, s.Messages)
		case got.LastActiveAt != indexer.FormatTime(s.LastTS):
			t.Errorf("session %s: lastActiveAt %s, want %s", s.Rel, got.LastActiveAt, indexer.FormatTime(s.LastTS))
		}
	}
	if len(seen) != len(sessions) {
		t.Errorf("catalogs list %d sessions, %d were written", len(seen), len(sessions))
	}
}
