package main

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sessionwatch/sessionwatch/janitor"
)

func TestDeleteCommand(t *testing.T) {
	e := newEnv(t)
	locked := e.agedSession("/work/del", idLocked, 3*24*time.Hour)
	lockFor(t, locked, os.Getpid())
	old := e.agedSession("/work/del", idOld, 3*24*time.Hour)
	young := e.agedSession("/work/del", idYoung, time.Minute)
	if _, errs, code := e.cli("reindex"); code != 0 {
		t.Fatal(errs)
	}

	// A live lock: refused naming the pid, with or without --force.
	for _, args := range [][]string{{"delete", "--all", idLocked}, {"delete", "--all", idLocked[:8], "--force"}} {
		_, errs, code := e.cli(args...)
		if code != 1 || !strings.Contains(errs, fmt.Sprintf("sessionwatch: session %s is in use by pid %d (", idLocked, os.Getpid())) || !strings.Contains(errs, "hint: ") {
			t.Errorf("%v = %d, %q; want exit 1 naming pid %d", args, code, errs, os.Getpid())
		}
	}
	if !fileExists(locked) || !fileExists(locked+janitor.LockSuffix) {
		t.Fatal("refused delete removed something")
	}

	// Recently active: refused, --force overrides.
	if _, errs, code := e.cli("delete", "--all", idYoung); code != 1 || !strings.Contains(errs, "active_grace") || !strings.Contains(errs, "--force") {
		t.Errorf("delete recent = %d, %q", code, errs)
	}
	if out, errs, code := e.cli("delete", "--all", idYoung, "--force", "--permanent"); code != 0 || fileExists(young) || !strings.HasPrefix(out, "delete") {
		t.Errorf("delete --force recent = %d, %q %q", code, out, errs)
	}

	// Dry run, then the real thing, with a stale lock removed first.
	dead := exec.Command("true")
	dead.Run()
	lockFor(t, old, dead.Process.Pid)
	if out, _, code := e.cli("delete", "--all", idOld, "--dry-run"); code != 0 || !fileExists(old) || !strings.Contains(out, "remove-lock") || !strings.Contains(out, "dry run") {
		t.Errorf("delete --dry-run = %d:\n%s", code, out)
	}
	out, errs, code := e.cli("delete", "--all", idOld, "--permanent")
	if code != 0 || fileExists(old) || fileExists(old+janitor.LockSuffix) {
		t.Fatalf("delete = %d, %q %q", code, out, errs)
	}
	if lines := strings.Split(strings.TrimSpace(out), "\n"); len(lines) != 2 || !strings.HasPrefix(lines[0], "remove-lock") || !strings.HasPrefix(lines[1], "delete") {
		t.Errorf("delete printed:\n%s", out)
	}
	if e.sessionIn("/work/del", idOld) != nil {
		t.Errorf("catalog still lists the deleted session")
	}
	js, err := janitor.ReadJournal(filepath.Join(e.state, janitor.JournalName))
	if err != nil || len(js) != 3 || js[2].Action != "delete" || js[2].File != old || js[2].Bytes <= 0 || js[2].Reason == "" {
		t.Errorf("journal = %+v, %v", js, err)
	}

	// Not found and bad references.
	if _, errs, code := e.cli("delete", "--all", "ffffffff"); code != 1 || !strings.Contains(errs, "session not found") {
		t.Errorf("delete unknown = %d, %q", code, errs)
	}
	if _, _, code := e.cli("delete", "--all", "../etc/passwd"); code != 2 {
		t.Errorf("delete ../etc/passwd = %d, want 2", code)
	}
}

func TestShowNamesTheLockHolder(t *testing.T) {
	e := newEnv(t)
	locked := e.agedSession("/work/show", idLocked, time.Hour)
	lockFor(t, locked, os.Getpid())
	free := e.agedSession("/work/show", idOld, time.Hour)
	if _, errs, code := e.cli("reindex"); code != 0 {
		t.Fatal(errs)
	}
	out, _, code := e.cli("show", idLocked, "--all", "--json")
	var got shown
	if code != 0 || json.Unmarshal([]byte(out), &got) != nil {
		t.Fatalf("show --json = %d %s", code, out)
	}
	if !got.InUse || got.LockHolder == nil || got.LockHolder.PID != os.Getpid() || len(got.LockFiles) != 1 || got.LockFiles[0] != locked+janitor.LockSuffix {
		t.Errorf("show of a locked session: inUse %v holder %+v lockFiles %v", got.InUse, got.LockHolder, got.LockFiles)
	}
	out, _, _ = e.cli("show", idOld, "--all", "--json")
	got = shown{}
	json.Unmarshal([]byte(out), &got)
	if got.InUse || got.LockHolder != nil || len(got.LockFiles) != 0 || got.File != free {
		t.Errorf("show of a free session: %+v", got)
	}
	out, _, _ = e.cli("show", "--all", idLocked)
	if !strings.Contains(out, fmt.Sprintf("in use:        by pid %d", os.Getpid())) {
		t.Errorf("show text lacks the holder:\n%s", out)
	}
}
