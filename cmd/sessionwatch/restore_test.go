package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sessionwatch/sessionwatch/janitor"
)

func TestRestoreCommand(t *testing.T) {
	e := newEnv(t)
	work := filepath.Join(e.home, "code", "rproj")
	os.MkdirAll(work, 0o700)
	old := e.agedSession(work, idOld, 20*24*time.Hour)
	want, _ := os.ReadFile(old)
	before, _ := os.Stat(old)
	if _, errs, code := e.cli("clean"); code != 0 {
		t.Fatal(errs)
	}
	if fileExists(old) {
		t.Fatal("not archived")
	}
	t.Chdir(work)

	if _, errs, code := e.cli("restore", "ffff"); code != 1 || !strings.Contains(errs, "no archived session matches ffff") {
		t.Errorf("restore unknown = %d, %q", code, errs)
	}
	// Something in the way: refused, the archive kept.
	os.MkdirAll(filepath.Dir(old), 0o700)
	os.WriteFile(old, []byte("new"), 0o600)
	if _, errs, code := e.cli("restore", idOld[:6]); code != 1 || !strings.Contains(errs, "already exists") {
		t.Errorf("restore over a file = %d, %q", code, errs)
	}
	os.Remove(old)

	out, errs, code := e.cli("restore", idOld[:6])
	if code != 0 || !strings.Contains(out, "restored wave session "+idOld) {
		t.Fatalf("restore = %d, %q %q", code, out, errs)
	}
	got, _ := os.ReadFile(old)
	after, _ := os.Stat(old)
	if !bytes.Equal(got, want) || !after.ModTime().Equal(before.ModTime()) {
		t.Errorf("restored file differs (mtime %v, want %v)", after.ModTime(), before.ModTime())
	}
	if ars, _ := janitor.ListArchives(e.archiveDir(), nil); len(ars) != 0 {
		t.Errorf("archive kept after restore: %v", ars)
	}
	out, _, _ = e.cli("list", "--json")
	if !strings.Contains(out, idOld) {
		t.Errorf("restored session not listed:\n%s", out)
	}
	// A clean right after keeps the restored session.
	if out, _, _ := e.cli("clean"); !strings.Contains(out, "retired 0") || !fileExists(old) {
		t.Errorf("clean after restore:\n%s", out)
	}
}

func TestListShowsInUse(t *testing.T) {
	e := newEnv(t)
	locked := e.agedSession("/work/inuse", idLocked, time.Hour)
	lockFor(t, locked, os.Getpid())
	e.agedSession("/work/inuse", idOld, time.Hour)
	if _, errs, code := e.cli("reindex"); code != 0 {
		t.Fatal(errs)
	}
	out, _, code := e.cli("list", "--all", "--json")
	if code != 0 {
		t.Fatal(out)
	}
	var rows []listed
	if err := json.Unmarshal([]byte(out), &rows); err != nil {
		t.Fatal(err)
	}
	for _, r := range rows {
		if r.InUse != (r.ID == idLocked) {
			t.Errorf("list: %s inUse = %v", r.ID, r.InUse)
		}
	}
	out, _, _ = e.cli("show", "--all", idLocked, "--json")
	if !strings.Contains(out, `"inUse": true`) {
		t.Errorf("show --json of a locked session:\n%s", out)
	}
}
