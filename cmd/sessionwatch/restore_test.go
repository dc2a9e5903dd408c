package main

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"io"
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
	if _, errs, code := e.cli("restore", idOld[:6]); code != 1 || !strings.Contains(errs, "already exists") || !strings.Contains(errs, tildePath(old)) {
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

// TestRestoreByActionID: a session archived twice is ambiguous by id; the
// journal action id of one archive picks it (§5 of issue 11).
func TestRestoreByActionID(t *testing.T) {
	e := newEnv(t)
	work := filepath.Join(e.home, "code", "aproj")
	os.MkdirAll(work, 0o700)
	old := e.agedSession(work, idOld, 20*24*time.Hour)
	first, _ := os.ReadFile(old)
	if _, errs, code := e.cli("clean"); code != 0 || fileExists(old) {
		t.Fatalf("clean: %d %s", code, errs)
	}
	// The agent writes the session again; it is archived a second time.
	e.agedSession(work, idOld, 30*24*time.Hour)
	appendTo(t, old, `{"timestamp":"2026-01-01T00:00:00Z","id":"m9","role":"user","blocks":[{"type":"text","content":"again"}]}`+"\n")
	past := time.Now().Add(-30 * 24 * time.Hour)
	os.Chtimes(old, past, past)
	second, _ := os.ReadFile(old)
	if _, errs, code := e.cli("clean"); code != 0 || fileExists(old) {
		t.Fatalf("second clean: %d %s", code, errs)
	}
	t.Chdir(work)
	_, errs, code := e.cli("restore", idOld)
	if code != 1 || !strings.Contains(errs, "action ") {
		t.Fatalf("restore of a twice-archived id = %d, %q, want ambiguous naming action ids", code, errs)
	}
	js, _ := janitor.ReadJournal(filepath.Join(e.state, janitor.JournalName))
	var ids []string
	for _, j := range js {
		if j.Action == janitor.KindArchive && j.ID == idOld {
			if j.ActionID == "" {
				t.Errorf("journal archive line without an action id: %+v", j)
			}
			ids = append(ids, j.ActionID)
		}
	}
	if len(ids) != 2 {
		t.Fatalf("journal archive lines for %s: %d, want 2", idOld, len(ids))
	}
	out, errs, code := e.cli("restore", ids[0])
	if code != 0 || !strings.Contains(out, "restored wave session "+idOld) {
		t.Fatalf("restore %s = %d, %q %q", ids[0], code, out, errs)
	}
	if got, _ := os.ReadFile(old); !bytes.Equal(got, first) {
		t.Errorf("restore by action id brought back the wrong archive")
	}
	if ars, _ := janitor.ListArchives(e.archiveDir(), nil); len(ars) != 1 {
		t.Errorf("archives left: %d, want 1", len(ars))
	} else if got := gunzipFile(t, ars[0].Path); !bytes.Equal(got, second) {
		t.Errorf("the archive left is not the second one")
	}
	if _, errs, code := e.cli("restore", "0f0f0f0f-0000-4000-8000-000000000000"); code != 1 || !strings.Contains(errs, "no archive written by action 0f0f0f0f") {
		t.Errorf("restore of an unknown action = %d, %q", code, errs)
	}
}

func gunzipFile(t *testing.T, path string) []byte {
	t.Helper()
	fh, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer fh.Close()
	zr, err := gzip.NewReader(fh)
	if err != nil {
		t.Fatal(err)
	}
	data, err := io.ReadAll(zr)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// TestRestoreByActionIDOnlyOfAnArchive: the action id `restore` takes is the
// one of the archive action that wrote the archive; the id of any other
// journal line naming that archive path (the restore that emptied it, as every
// line now has an actionId: an expire-archive, a restore of a record) names no
// archive to restore, even once the same path holds a newer archive of the
// same session.
func TestRestoreByActionIDOnlyOfAnArchive(t *testing.T) {
	e := newEnv(t)
	work := filepath.Join(e.home, "code", "oproj")
	os.MkdirAll(work, 0o700)
	old := e.agedSession(work, idOld, 20*24*time.Hour)
	if _, errs, code := e.cli("clean"); code != 0 || fileExists(old) {
		t.Fatalf("clean: %d %s", code, errs)
	}
	t.Chdir(work)
	if _, errs, code := e.cli("restore", idOld); code != 0 || !fileExists(old) {
		t.Fatalf("restore: %d %s", code, errs)
	}
	past := time.Now().Add(-30 * 24 * time.Hour)
	os.Chtimes(old, past, past)
	if _, errs, code := e.cli("delete", idOld); code != 0 || fileExists(old) {
		t.Fatalf("delete (archive again): %d %s", code, errs)
	}
	js, _ := janitor.ReadJournal(filepath.Join(e.state, janitor.JournalName))
	var restoreID, archiveID string
	for _, j := range js {
		switch {
		case j.Action == janitor.KindRestore && j.ID == idOld:
			restoreID = j.ActionID
		case j.Action == janitor.KindArchive && j.ID == idOld:
			archiveID = j.ActionID
		}
	}
	ars, _ := janitor.ListArchives(e.archiveDir(), nil)
	if restoreID == "" || archiveID == "" || len(ars) != 1 {
		t.Fatalf("journal: restore %q, last archive %q; archives %v", restoreID, archiveID, ars)
	}
	_, errs, code := e.cli("restore", restoreID)
	if code != 1 || !strings.Contains(errs, "no archive written by action "+restoreID) || fileExists(old) {
		t.Fatalf("restore by the id of a restore = %d, %q (restored: %v), want not found", code, errs, fileExists(old))
	}
	if _, errs, code := e.cli("restore", archiveID); code != 0 || !fileExists(old) {
		t.Fatalf("restore by the archive's action id = %d, %q", code, errs)
	}
}
