package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
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
	"github.com/sessionwatch/sessionwatch/janitor"
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

// janitorCrashPlan is one run of TestCrashDuringJanitorAndRestore.
type janitorCrashPlan struct {
	kills    int           // SIGKILLs of the daemon (start-up janitor pass and scheduled ones)
	restores int           // restores started and SIGKILLed at random moments
	maxUp    time.Duration // a daemon or restore lives a uniform random time in [0, maxUp)
	old      int           // sessions due for retirement at the start
	perKill  int           // more due sessions written before each start
	big      int           // of the initial ones, this many of a few MB (slow to archive and restore)
	live     int           // sessions appended to all along (never due)
	seed     uint64
}

// TestCrashDuringJanitorAndRestore kills the daemon while its janitor archives
// (sessions past a short retention) and kills `restore` while it writes,
// while writers append to live sessions. Afterwards every session is exactly
// once in the store or in the archive, byte for byte what was written,
// restorable, and no temp file remains after the next start (issue 11 §5).
// The long run (900 kills) is behind the "long" build tag.
func TestCrashDuringJanitorAndRestore(t *testing.T) {
	runJanitorCrash(t, janitorCrashPlan{kills: 12, restores: 6, maxUp: 1200 * time.Millisecond, old: 30, perKill: 2, big: 3, live: 6, seed: 7})
}

func runJanitorCrash(t *testing.T, p janitorCrashPlan) {
	e := newEnv(t)
	e.writeConfig(`{"state_dir":%q,"archive_dir":%q,"settle":"20ms","max_settle":"200ms",
	 "janitor":{"run_at_start":true,"schedule":"@every 1s"},
	 "sources":[{"name":"wave","layout":"wave","root":%q,"retention":"1d"}]}`, e.state, e.archiveDir(), e.root)
	rng := rand.New(rand.NewPCG(p.seed, 3))
	model := map[string][]byte{} // session file → every byte written to it
	var mu sync.Mutex
	oldIDs := map[string]string{} // session id → file, of the sessions due
	n := 0
	writeOld := func(big bool) {
		id := fmt.Sprintf("%08x-0000-4000-8000-%012x", p.seed, n)
		n++
		work := fmt.Sprintf("/work/crash-%d", n%4)
		ts := time.Now().Add(-3 * 24 * time.Hour)
		var b strings.Builder
		b.WriteString(header(work))
		lines := 3
		if big {
			lines = 12000
		}
		for i := 0; i < lines; i++ {
			b.WriteString(message(ts, fmt.Sprintf("line %d of %s %s", i, id, strings.Repeat("x", rng.IntN(300)))))
		}
		path := filepath.Join(e.project(work), id+".jsonl")
		if err := os.WriteFile(path, []byte(b.String()), 0o600); err != nil {
			t.Fatal(err)
		}
		os.Chtimes(path, ts, ts)
		mu.Lock()
		model[path] = []byte(b.String())
		mu.Unlock()
		oldIDs[id] = path
	}
	for i := 0; i < p.old; i++ {
		writeOld(i < p.big)
	}
	var live []string
	for i := 0; i < p.live; i++ {
		work := "/work/live"
		path := filepath.Join(e.project(work), fmt.Sprintf("%08x-1111-4000-8000-%012x.jsonl", p.seed, i))
		content := header(work) + message(time.Now(), "live "+path)
		if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		model[path] = []byte(content)
		live = append(live, path)
	}

	// Writers append to the live sessions all along; the model keeps every
	// byte of every write that succeeded.
	ctx, stopWriters := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	var appends int
	wg.Add(1)
	go func() {
		defer wg.Done()
		wr := rand.New(rand.NewPCG(p.seed, 4))
		for ctx.Err() == nil {
			path := live[wr.IntN(len(live))]
			line := message(time.Now(), fmt.Sprintf("append %d", wr.Int64()))
			if f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0); err == nil {
				if k, err := f.WriteString(line); err == nil && k == len(line) {
					mu.Lock()
					model[path] = append(model[path], line...)
					appends++
					mu.Unlock()
				}
				f.Close()
			}
			time.Sleep(time.Duration(wr.IntN(10)) * time.Millisecond)
		}
	}()
	defer func() { stopWriters(); wg.Wait() }()

	kill := func(args ...string) {
		cmd := exec.Command(binPath, args...)
		cmd.Env = append(os.Environ(), "HOME="+e.home, "SESSIONWATCH_CONFIG="+e.config)
		cmd.Dir = e.home
		out := &syncWriter{b: &bytes.Buffer{}}
		cmd.Stdout, cmd.Stderr = out, out
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		// The random moment of death: the experiment, not a wait for an outcome.
		time.Sleep(time.Duration(rng.Int64N(int64(p.maxUp))))
		cmd.Process.Kill()
		cmd.Wait()
		if code := cmd.ProcessState.ExitCode(); code > 0 && args[0] == "run" {
			t.Fatalf("%v exited %d before SIGKILL:\n%s", args, code, out.String())
		}
	}
	restores := 0
	for k := 0; k < p.kills; k++ {
		for i := 0; i < p.perKill; i++ {
			writeOld(false)
		}
		kill("run")
		if restores < p.restores && (k%2 == 1 || p.kills-k <= p.restores-restores) {
			if ars, _ := janitor.ListArchives(e.archiveDir(), nil); len(ars) > 0 {
				// The big ones first: their restore takes long enough to be killed in.
				pick := ars[rng.IntN(len(ars))]
				for _, a := range ars {
					if a.Size > 1<<20 && rng.IntN(2) == 0 {
						pick = a
					}
				}
				kill("restore", pick.Meta.ID)
				restores++
			}
		}
	}
	stopWriters()
	wg.Wait()

	// The next start: recovery, then a whole janitor pass.
	started := time.Now()
	d := e.startDaemon()
	waitFor(t, 60*time.Second, "a janitor pass after the last start", func() bool {
		st, err := readStatusFile(e.state)
		return err == nil && st.Janitor != nil && indexer.ParseTime(st.Janitor.LastRun).After(started.Add(-time.Second))
	})
	if code := d.stop(); code != 0 {
		t.Errorf("final daemon exit code %d; stderr:\n%s", code, d.stderr)
	}
	checkExactlyOnce(t, e, model, oldIDs, live)
	if out, _, _ := e.cli("doctor"); strings.Contains(out, "temp file") {
		t.Errorf("doctor reports temp files after the next start:\n%s", out)
	}
	t.Logf("janitor crash: %d daemon kills, %d restores killed, %d due sessions, %d appends to %d live sessions", p.kills, restores, len(oldIDs), appends, len(live))
}

// checkExactlyOnce asserts that every session is exactly once in the store or
// in the archive, byte-identical to the model, that the archived ones restore,
// and that no temp file is left anywhere.
func checkExactlyOnce(t *testing.T, e *testEnv, model map[string][]byte, oldIDs map[string]string, live []string) {
	t.Helper()
	for _, dir := range []string{e.root, e.archiveDir(), e.state} {
		filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
			if err == nil && strings.HasPrefix(d.Name(), indexer.TempPrefix) {
				t.Errorf("temp file left after the next start: %s", p)
			}
			return nil
		})
	}
	ars, err := janitor.ListArchives(e.archiveDir(), nil)
	if err != nil {
		t.Fatal(err)
	}
	byFile := map[string][]janitor.Archived{}
	for _, a := range ars {
		byFile[a.Meta.File] = append(byFile[a.Meta.File], a)
	}
	restored := 0
	for path, want := range model {
		got, serr := os.ReadFile(path)
		arch := byFile[path]
		switch {
		case serr == nil && len(arch) > 0:
			t.Errorf("%s is both in the store and archived (%d)", path, len(arch))
		case serr != nil && len(arch) == 0:
			t.Errorf("%s is neither in the store nor archived", path)
		case len(arch) > 1:
			t.Errorf("%s archived %d times: %s and %s", path, len(arch), arch[0].Path, arch[1].Path)
		case serr == nil:
			if !bytes.Equal(got, want) {
				t.Errorf("%s in the store: %d bytes, want the %d written", path, len(got), len(want))
			}
		default:
			if got := gunzipFile(t, arch[0].Path); !bytes.Equal(got, want) {
				t.Errorf("%s archived: %d bytes, want the %d written", path, len(got), len(want))
			}
			// Every few archived sessions, the CLI restores it byte for byte.
			if restored < 4 {
				restored++
				if _, errs, code := e.cli("restore", arch[0].Meta.ActionID); code != 0 {
					t.Errorf("restore %s (%s): %d %s", arch[0].Meta.ID, arch[0].Meta.ActionID, code, errs)
				} else if got, _ := os.ReadFile(path); !bytes.Equal(got, want) {
					t.Errorf("restored %s differs from what was written", path)
				}
			}
		}
	}
	for _, p := range live {
		if _, err := os.Stat(p); err != nil {
			t.Errorf("live session %s retired", p)
		}
	}
}
