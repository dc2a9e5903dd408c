package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sessionwatch/sessionwatch/indexer"
	"github.com/sessionwatch/sessionwatch/janitor"
)

const (
	idOld    = "0a0a0a0a-1111-4000-8000-000000000001"
	idYoung  = "0b0b0b0b-2222-4000-8000-000000000002"
	idLocked = "0c0c0c0c-3333-4000-8000-000000000003"
)

// janitorConfig rewrites the test config with a janitor section and extra keys
// for the Wave source.
func (e *testEnv) janitorConfig(janitorJSON, sourceExtra string) {
	e.t.Helper()
	if sourceExtra != "" {
		sourceExtra = "," + sourceExtra
	}
	e.writeConfig(`{"state_dir":%q,"archive_dir":%q,"settle":"20ms","max_settle":"200ms","janitor":%s,
	 "sources":[{"name":"wave","layout":"wave","root":%q%s}]}`, e.state, e.archiveDir(), janitorJSON, e.root, sourceExtra)
}

func (e *testEnv) archiveDir() string { return filepath.Join(e.home, "archive") }

// agedSession writes a Wave session last active age ago, with that file mtime.
func (e *testEnv) agedSession(workdir, id string, age time.Duration) string {
	e.t.Helper()
	ts := time.Now().Add(-age)
	path := filepath.Join(e.project(workdir), id+".jsonl")
	appendTo(e.t, path, header(workdir)+message(ts, "prompt of "+id))
	if err := os.Chtimes(path, ts, ts); err != nil {
		e.t.Fatal(err)
	}
	return path
}

func lockFor(t *testing.T, file string, pid int) {
	t.Helper()
	data := fmt.Sprintf(`{"pid":%d,"timestamp":%d,"sessionId":"x","ownerToken":"t"}`, pid, time.Now().UnixMilli())
	if err := os.WriteFile(file+janitor.LockSuffix, []byte(data), 0o600); err != nil {
		t.Fatal(err)
	}
}

func fileExists(p string) bool { _, err := os.Lstat(p); return err == nil }

func TestCleanArchivesWhatIsDue(t *testing.T) {
	e := newEnv(t)
	old := e.agedSession("/work/clean", idOld, 20*24*time.Hour)
	young := e.agedSession("/work/clean", idYoung, 2*24*time.Hour)
	locked := e.agedSession("/work/clean", idLocked, 30*24*time.Hour)
	lockFor(t, locked, os.Getpid())

	// Dry run first: every action printed, nothing changed.
	out, errs, code := e.cli("clean", "--dry-run")
	if code != 0 {
		t.Fatalf("clean --dry-run = %d: %s", code, errs)
	}
	if !strings.Contains(out, "archive") || !strings.Contains(out, idOld[:8]) || !strings.HasPrefix(lastLine(out), "dry run, nothing changed: retired 1 (archived 1, deleted 0), skipped in use 1, freed ") {
		t.Errorf("clean --dry-run printed:\n%s", out)
	}
	if !fileExists(old) || fileExists(e.archiveDir()) || fileExists(filepath.Join(e.state, janitor.JournalName)) {
		t.Fatalf("dry run changed something")
	}

	out, errs, code = e.cli("clean")
	if code != 0 {
		t.Fatalf("clean = %d: %s", code, errs)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 3 {
		t.Fatalf("clean printed %d lines, want 2 actions + summary:\n%s", len(lines), out)
	}
	if f := strings.Fields(lines[0]); len(f) < 6 || f[0] != "archive" || f[1] != "wave" || f[2] != idOld[:8] || !strings.Contains(lines[0], "inactive 20d (retention 14d)") || !strings.Contains(lines[0], tildePath(old)) {
		t.Errorf("archive line = %q", lines[0])
	}
	if f := strings.Fields(lines[1]); f[0] != "skip-in-use" || f[2] != idLocked[:8] || !strings.Contains(lines[1], fmt.Sprint(os.Getpid())) {
		t.Errorf("skip line = %q", lines[1])
	}
	if !strings.HasPrefix(lines[2], "retired 1 (archived 1, deleted 0), skipped in use 1, freed ") {
		t.Errorf("summary = %q", lines[2])
	}
	if fileExists(old) || !fileExists(young) || !fileExists(locked) {
		t.Errorf("after clean: old exists %v, young %v, locked %v", fileExists(old), fileExists(young), fileExists(locked))
	}
	if !fileExists(filepath.Join(e.archiveDir(), "wave", indexer.ProjectKey("/work/clean"), idOld+".jsonl.gz")) {
		t.Errorf("archive missing")
	}
	if s := e.sessionIn("/work/clean", idOld); s != nil {
		t.Errorf("catalog still lists the archived session")
	}

	// --json prints the report; --older-than overrides the retention.
	out, errs, code = e.cli("clean", "--older-than", "1d", "--json")
	if code != 0 {
		t.Fatalf("clean --json = %d: %s", code, errs)
	}
	var rep janitor.Report
	if err := json.Unmarshal([]byte(out), &rep); err != nil || rep.Retired != 1 || rep.Actions[0].ID != idYoung {
		t.Errorf("clean --json = %+v, %v\n%s", rep, err, out)
	}
}

func TestCleanOverrides(t *testing.T) {
	e := newEnv(t)
	e.janitorConfig(`{"run_at_start":false,"schedule":"off"}`, `"retention":"off","action":"delete"`)
	a := e.agedSession("/work/o", idOld, 3*24*time.Hour)
	b := e.agedSession("/work/o", idYoung, 2*24*time.Hour)
	if out, _, code := e.cli("clean"); code != 0 || !strings.Contains(out, "retired 0") {
		t.Errorf("clean with retention off = %d:\n%s", code, out)
	}
	// --older-than works on a source whose retention is off; the action is delete.
	out, errs, code := e.cli("clean", "--source", "wave", "--older-than", "60h")
	if code != 0 || !strings.Contains(out, "retired 1 (archived 0, deleted 1)") || fileExists(a) || !fileExists(b) {
		t.Errorf("clean --older-than 60h = %d:\n%s%s", code, out, errs)
	}
	// --max-sessions keeps the newest N.
	c := e.agedSession("/work/o", idLocked, 24*time.Hour)
	out, _, code = e.cli("clean", "--max-sessions", "1")
	if code != 0 || fileExists(b) || !fileExists(c) {
		t.Errorf("clean --max-sessions 1 = %d:\n%s", code, out)
	}
}

func TestCleanUsageErrors(t *testing.T) {
	e := newEnv(t)
	for _, args := range [][]string{
		{"clean", "--older-than", "soon"},
		{"clean", "--older-than", "0"},
		{"clean", "--older-than", "off"},
		{"clean", "--max-sessions", "0"},
		{"clean", "--max-sessions", "-3"},
		{"clean", "--invalid-only", "--max-sessions", "2"},
		{"clean", "--source", "nope"},
		{"clean", "extra"},
		{"delete"},
		{"delete", "a", "b"},
		{"restore"},
	} {
		_, errs, code := e.cli(args...)
		if code != 2 || !strings.HasPrefix(errs, "sessionwatch: ") {
			t.Errorf("%v = %d, %q; want exit 2 with a one-line error", args, code, errs)
		}
	}
}

func lastLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return lines[len(lines)-1]
}

func TestDaemonJanitorAtStartAndOnSchedule(t *testing.T) {
	e := newEnv(t)
	e.janitorConfig(`{"run_at_start":true,"schedule":"@every 1s","first_run":"apply"}`, "")
	first := e.agedSession("/work/d", idOld, 20*24*time.Hour)
	keep := e.agedSession("/work/d", idYoung, 2*24*time.Hour)
	d := e.startDaemon()
	waitFor(t, 20*time.Second, "the start-up pass to archive the old session", func() bool { return !fileExists(first) })
	waitFor(t, 20*time.Second, "the janitor in status.json", func() bool {
		st, err := readStatusFile(e.state)
		return err == nil && st.Janitor != nil && st.Janitor.LastRun != "" && st.Janitor.Archived+st.Janitor.Retired >= 1
	})
	// A session that turns old while the daemon runs is retired by a scheduled pass.
	second := e.agedSession("/work/d", idLocked, 30*24*time.Hour)
	waitFor(t, 20*time.Second, "a scheduled pass to archive the new old session", func() bool { return !fileExists(second) })
	if !fileExists(keep) {
		t.Errorf("young session archived")
	}
	// The transcript leaves the store (moved aside) before its archive is
	// written: wait for the archive too.
	waitFor(t, 20*time.Second, "two archives", func() bool {
		ars, _ := janitor.ListArchives(e.archiveDir(), nil)
		return len(ars) == 2
	})
	waitFor(t, 20*time.Second, "catalog without the archived sessions", func() bool {
		c := e.catalogOf("/work/d")
		return c != nil && len(c.Sessions) == 1 && c.Sessions[0].ID == idYoung
	})
	if code := d.stop(); code != 0 {
		t.Errorf("stop = %d; stderr:\n%s", code, d.stderr)
	}
	if _, _, code := e.cli("reindex", "--check"); code != 0 {
		t.Errorf("reindex --check after janitor passes = %d", code)
	}
}

func TestRunOnceRunsOneJanitorPass(t *testing.T) {
	e := newEnv(t)
	e.janitorConfig(`{"run_at_start":false,"schedule":"off","first_run":"apply"}`, "")
	old := e.agedSession("/work/once", idOld, 20*24*time.Hour)
	_, errs, code := e.cli("run", "--once")
	if code != 0 || fileExists(old) {
		t.Fatalf("run --once = %d, old exists %v:\n%s", code, fileExists(old), errs)
	}
	st, err := readStatusFile(e.state)
	if err != nil || st.Janitor == nil || st.Janitor.Archived != 1 || st.Running {
		t.Errorf("status after run --once = %+v, %v", st, err)
	}
}

func TestJanitorWarningsReachStatus(t *testing.T) {
	e := newEnv(t)
	e.janitorConfig(`{"run_at_start":false,"schedule":"off"}`, `"warn_count":1`)
	e.agedSession("/work/w", idOld, time.Hour)
	e.agedSession("/work/w", idYoung, time.Hour)
	out, _, code := e.cli("clean")
	if code != 0 || !strings.Contains(out, "warn") || !strings.Contains(out, "2 sessions (warn_count 1)") {
		t.Errorf("clean with warn_count 1 = %d:\n%s", code, out)
	}
	_, errs, code := e.cli("run", "--once")
	if code != 0 {
		t.Fatal(errs)
	}
	if !strings.Contains(errs, "level=WARN") || !strings.Contains(errs, "hint=") {
		t.Errorf("run --once did not log the warning with a hint:\n%s", errs)
	}
	st, _ := readStatusFile(e.state)
	if st == nil || len(st.Warnings) != 1 || !strings.Contains(st.Warnings[0], "warn_count 1") {
		t.Errorf("status warnings = %+v", st)
	}
}
