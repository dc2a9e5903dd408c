package main

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/sessionwatch/sessionwatch/janitor"
)

func (e *testEnv) archivedJSON(args ...string) []archivedRow {
	e.t.Helper()
	out, errs, code := e.cli(append([]string{"list", "--archived", "--json"}, args...)...)
	var rows []archivedRow
	if code != 0 || json.Unmarshal([]byte(out), &rows) != nil {
		e.t.Fatalf("list --archived --json %v = %d:\n%s%s", args, code, out, errs)
	}
	return rows
}

// list --archived numbers the archives as restore reads REFs; show --archived
// and restore take its REFs.
func TestListArchivedShowAndRestoreAgree(t *testing.T) {
	e := newEnv(t)
	if out, errs, code := e.cli("list", "--archived", "--all"); code != 0 || out != "" || !strings.Contains(errs, "No archived sessions") {
		t.Errorf("list --archived with no archives = %d, %q, %q", code, out, errs)
	}
	files := map[string]string{}
	for i, id := range []string{idOld, idYoung, idLocked} {
		files[id] = e.agedSession("/work/arch", id, time.Duration(20+i)*24*time.Hour)
	}
	if out, errs, code := e.cli("clean"); code != 0 || !strings.Contains(out, "archived 3") || !strings.Contains(errs, "hint: see them with 'sessionwatch list --archived") {
		t.Fatalf("clean = %d:\n%s%s", code, out, errs)
	}
	rows := e.archivedJSON("--all")
	ars, _ := janitor.ListArchives(e.archiveDir(), nil)
	if len(rows) != 3 || len(ars) != 3 {
		t.Fatalf("list --archived --all --json = %d rows, %d archives", len(rows), len(ars))
	}
	for i, r := range rows {
		if r.N != i+1 || r.ID != ars[i].Meta.ID || r.File != files[r.ID] || r.Archive != ars[i].Path || r.ArchivedAt == "" ||
			!strings.Contains(r.Reason, "retention 14d") || r.FirstPrompt != "prompt of "+r.ID || r.MessageCount != 1 || r.SizeBytes == 0 ||
			r.Project != "/work/arch" || r.LastActiveAt == "" {
			t.Errorf("row %d = %+v", i+1, r)
		}
	}
	out, _, code := e.cli("list", "--archived", "--all")
	if lines := strings.Split(strings.TrimSpace(out), "\n"); code != 0 || len(lines) != 4 ||
		!strings.Contains(lines[0], "ARCHIVED") || !strings.Contains(lines[0], "REASON") || !strings.Contains(lines[2], "prompt of "+rows[1].ID) {
		t.Errorf("list --archived --all =\n%s", out)
	}
	out, _, code = e.cli("show", "--archived", "--all", "2")
	if code != 0 || !strings.Contains(out, rows[1].ID) || !strings.Contains(out, "retention 14d") || !strings.Contains(out, "sessionwatch restore "+rows[1].ID+" --all") {
		t.Errorf("show --archived --all 2 =\n%s", out)
	}
	// The same number restores the same session.
	if out, errs, code := e.cli("restore", "--all", "2"); code != 0 || !fileExists(rows[1].File) || !strings.Contains(out, rows[1].ID) {
		t.Fatalf("restore --all 2 = %d, restored %v:\n%s%s", code, fileExists(rows[1].File), out, errs)
	}
	if after := e.archivedJSON("--all"); len(after) != 2 || after[0].ID != rows[0].ID || after[1].ID != rows[2].ID {
		t.Errorf("list --archived after restoring row 2 = %+v", after)
	}
	// Not found: the hint names list --archived.
	for _, args := range [][]string{{"restore", "--all", "ffffffff"}, {"restore", "ffffffff"}, {"show", "--archived", "--all", "9"}} {
		if _, errs, code := e.cli(args...); code != 1 || !strings.Contains(errs, "sessionwatch list --archived") {
			t.Errorf("%v = %d, %q; want exit 1 and a hint naming list --archived", args, code, errs)
		}
	}
}

func TestDeleteArchivesUnlessPermanent(t *testing.T) {
	e := newEnv(t)
	old := e.agedSession("/work/del", idOld, 3*24*time.Hour)
	gone := e.agedSession("/work/del", idYoung, 3*24*time.Hour)
	if _, errs, code := e.cli("reindex"); code != 0 {
		t.Fatal(errs)
	}
	out, errs, code := e.cli("delete", "--all", idOld)
	if code != 0 || fileExists(old) || !strings.HasPrefix(out, "archive") || !strings.Contains(out, "sessionwatch restore "+idOld) {
		t.Fatalf("delete = %d:\n%s%s", code, out, errs)
	}
	rows := e.archivedJSON("--all")
	if len(rows) != 1 || rows[0].ID != idOld || rows[0].Reason != "archived by request" || rows[0].FirstPrompt != "prompt of "+idOld {
		t.Fatalf("list --archived after delete = %+v", rows)
	}
	if _, errs, code := e.cli("restore", "--all", idOld[:8]); code != 0 || !fileExists(old) {
		t.Errorf("restore after delete = %d, %s", code, errs)
	}
	if out, errs, code := e.cli("delete", "--all", idYoung, "--permanent"); code != 0 || fileExists(gone) || !strings.HasPrefix(out, "delete") {
		t.Errorf("delete --permanent = %d:\n%s%s", code, out, errs)
	}
	if rows := e.archivedJSON("--all"); len(rows) != 0 {
		t.Errorf("delete --permanent archived: %+v", rows)
	}
	out, _, _ = e.cli("delete", "--help")
	if !strings.Contains(out, "--permanent") || !strings.Contains(out, "archived") || !strings.Contains(out, "restore") {
		t.Errorf("delete --help does not say it archives:\n%s", out)
	}
}
