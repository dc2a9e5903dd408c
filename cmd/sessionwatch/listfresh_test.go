package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"syscall"
	"testing"
	"time"
)

// listRows runs list --json with args and decodes it.
func listRows(t *testing.T, e *testEnv, args ...string) []listed {
	t.Helper()
	out, errs, code := e.cli(append([]string{"list", "--json"}, args...)...)
	if code != 0 {
		t.Fatalf("list = %d: %s", code, errs)
	}
	var rows []listed
	if err := json.Unmarshal([]byte(out), &rows); err != nil {
		t.Fatalf("list --json: %v\n%s", err, out)
	}
	return rows
}

// indexFiles maps every file under the state dir's index to its mtime and size.
func indexFiles(t *testing.T, e *testEnv) map[string]string {
	t.Helper()
	out := map[string]string{}
	filepath.WalkDir(filepath.Join(e.state, "index"), func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			fi, _ := d.Info()
			out[p] = fmt.Sprint(fi.ModTime().UnixNano(), " ", fi.Size())
		}
		return nil
	})
	return out
}

// Without a daemon, list brings the catalogs up to date first: when nothing
// changed it lists what it loaded and writes nothing; when a file changed it
// refreshes and lists the new state; catalogs of sources no longer configured
// are still listed from disk.
func TestListWithoutDaemonIsCurrent(t *testing.T) {
	e := newEnv(t)
	work := filepath.Join(e.home, "code", "proj")
	os.MkdirAll(work, 0o700)
	seedProject(t, e, work)
	t.Chdir(work)

	before := indexFiles(t, e)
	fresh := listRows(t, e, "--all", "--type", "all")
	if after := indexFiles(t, e); !reflect.DeepEqual(before, after) {
		t.Errorf("list over an unchanged store rewrote the index:\n%v\n%v", before, after)
	}
	// The same rows as a listing of the catalogs alone (a daemon holds the state dir).
	lock, err := os.OpenFile(filepath.Join(e.state, "daemon.pid"), os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_EX); err != nil {
		t.Fatal(err)
	}
	fromCatalogs := listRows(t, e, "--all", "--type", "all")
	lock.Close()
	if !reflect.DeepEqual(fresh, fromCatalogs) {
		t.Errorf("list without a daemon = %+v\nfrom the catalogs = %+v", fresh, fromCatalogs)
	}

	// An append: list refreshes and shows it, and the catalog on disk has it too.
	var target listed
	for _, r := range fresh {
		if r.FirstPrompt == "middle prompt" {
			target = r
		}
	}
	appendTo(t, target.File, message(time.Date(2026, 11, 2, 9, 0, 0, 0, time.UTC), "one more"))
	rows := listRows(t, e)
	if len(rows) != 3 || rows[0].ID != target.ID || rows[0].MessageCount != target.MessageCount+1 {
		t.Errorf("after an append, list = %+v; want %s first with %d messages", rows, target.ID, target.MessageCount+1)
	}
	if s := e.sessionIn(work, target.ID); s == nil || s.MessageCount != target.MessageCount+1 {
		t.Errorf("catalog after the refresh: %+v", s)
	}

	// A source that is no longer configured keeps being listed from its catalogs.
	src, dst := filepath.Join(e.state, "index", "wave"), filepath.Join(e.state, "index", "retired")
	if err := os.CopyFS(dst, os.DirFS(src)); err != nil {
		t.Fatal(err)
	}
	all := listRows(t, e, "--all", "--type", "all")
	if len(all) != 2*len(fresh) {
		t.Errorf("list --all with a retired source's catalogs: %d rows, want %d", len(all), 2*len(fresh))
	}
	if out, errs, code := e.cli("show", "1", "--json"); code != 0 || !json.Valid([]byte(out)) {
		t.Errorf("show 1 = %d: %s%s", code, out, errs)
	}
}

// Without a daemon, once list has proved nothing changed, it prints the table a
// daemon-present list prints from the catalogs alone, byte for byte (stdout and
// stderr), for every scope and width; and the proof writes nothing.
func TestListTableWithoutDaemonIsDaemonTable(t *testing.T) {
	e := newEnv(t)
	work := filepath.Join(e.home, "code", "proj")
	empty := filepath.Join(e.home, "code", "empty")
	for _, d := range []string{work, empty} {
		os.MkdirAll(d, 0o700)
	}
	seedProject(t, e, work)
	e.cli("reindex")
	type run struct{ dir, columns string }
	var runs []run
	for _, dir := range []string{work, empty} {
		for _, columns := range []string{"", "200", "60"} {
			runs = append(runs, run{dir, columns})
		}
	}
	argSets := [][]string{{"list"}, {"list", "--all"}, {"list", "--all", "--type", "all"}, {"list", "--type", "subagent"},
		{"list", "--all", "--source", "wave"}}
	listing := func() []string {
		var outs []string
		for _, r := range runs {
			t.Chdir(r.dir)
			t.Setenv("COLUMNS", r.columns)
			for _, args := range argSets {
				out, errs, code := e.cli(args...)
				outs = append(outs, fmt.Sprintf("%s %v COLUMNS=%q: exit %d\n%s--- stderr\n%s", r.dir, args, r.columns, code, out, errs))
			}
		}
		return outs
	}
	before := indexFiles(t, e)
	fresh := listing()
	if after := indexFiles(t, e); !reflect.DeepEqual(before, after) {
		t.Errorf("list over an unchanged store rewrote the index:\n%v\n%v", before, after)
	}
	lock, err := os.OpenFile(filepath.Join(e.state, "daemon.pid"), os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	defer lock.Close()
	if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_EX); err != nil {
		t.Fatal(err)
	}
	fromCatalogs := listing()
	rows := 0
	for i := range fresh {
		if fresh[i] != fromCatalogs[i] {
			t.Errorf("without a daemon:\n%s\nwith one:\n%s", fresh[i], fromCatalogs[i])
		}
		rows += strings.Count(fresh[i], "oldest prompt")
	}
	if rows == 0 {
		t.Fatalf("no listing showed a session:\n%s", strings.Join(fresh, "\n"))
	}
}
