package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sessionwatch/sessionwatch/janitor"
)

// TestDestructiveRefPathsOutsideTheScope: a REF that is a path never reaches a
// session outside the scope, however it is spelled. The file of another
// project's session (absolute, relative, through "..") is not found (exit 1);
// a symlink to a session, a catalog in the state dir, an archive are no
// session file (exit 2); restore takes no store path and no archive of
// another project. None of delete, delete --permanent, show or restore
// changes anything under HOME, with no daemon and while one runs (reading
// every catalog to tell "not found" from "rejected" only reads).
// (Without a daemon, show and delete may update the catalogs as list does.)
func TestDestructiveRefPathsOutsideTheScope(t *testing.T) {
	e := newEnv(t)
	work := filepath.Join(e.home, "proj")
	os.MkdirAll(work, 0o700)
	seedProject(t, e, work)
	t.Chdir(work)
	otherDir := e.project("/elsewhere/proj")
	otherFile := filepath.Join(otherDir, "55555555-eeee-4000-8000-000000000005.jsonl")
	mine := filepath.Join(e.project(work), "33333333-cccc-4000-8000-000000000003.jsonl")
	// An archived session of the other project.
	gone := filepath.Join(otherDir, "66666666-ffff-4000-8000-000000000006.jsonl")
	appendTo(t, gone, header("/elsewhere/proj")+message(time.Date(2026, 11, 1, 9, 0, 0, 0, time.UTC), "archived elsewhere"))
	if _, errs, code := e.cli("reindex"); code != 0 {
		t.Fatal(errs)
	}
	if _, errs, code := e.cli("delete", "--all", "--force", "66666666"); code != 0 || fileExists(gone) {
		t.Fatalf("delete --all = %d %s", code, errs)
	}
	ars, _ := janitor.ListArchives(e.archiveDir(), nil)
	if len(ars) != 1 {
		t.Fatalf("archives: %v", ars)
	}
	rel, err := filepath.Rel(work, otherFile)
	if err != nil {
		t.Fatal(err)
	}
	dotted := e.project(work) + "/../" + filepath.Base(otherDir) + "/" + filepath.Base(otherFile)
	linkOther, linkMine := filepath.Join(work, "other.jsonl"), filepath.Join(work, "mine.jsonl")
	if err := os.Symlink(otherFile, linkOther); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(mine, linkMine); err != nil {
		t.Fatal(err)
	}
	var catalog string
	filepath.WalkDir(e.state, func(p string, d os.DirEntry, err error) error {
		if err == nil && catalog == "" && d.Type().IsRegular() && strings.Contains(p, string(filepath.Separator)+"index"+string(filepath.Separator)) {
			catalog = p
		}
		return nil
	})
	if catalog == "" {
		t.Fatal("no catalog in the state dir")
	}
	notFound, rejected := "session not found for this project", "not a session file"
	cases := []struct {
		args []string
		code int
		want string
	}{
		{[]string{"delete", otherFile}, 1, notFound},
		{[]string{"delete", "--permanent", "--force", otherFile}, 1, notFound},
		{[]string{"delete", rel}, 1, notFound},
		{[]string{"delete", "--permanent", dotted}, 1, notFound},
		{[]string{"delete", "--source", "wave", "--type", "all", otherFile}, 1, notFound},
		{[]string{"delete", linkOther}, 2, rejected},
		{[]string{"delete", "--all", "--permanent", linkOther}, 2, rejected},
		{[]string{"delete", "--permanent", linkMine}, 2, rejected},
		{[]string{"show", linkOther}, 2, rejected},
		{[]string{"delete", "--all", "--permanent", catalog}, 2, rejected},
		{[]string{"delete", "--all", "--permanent", filepath.Join(e.state, janitor.JournalName)}, 2, rejected},
		{[]string{"delete", "--all", ars[0].Path}, 2, rejected},
		{[]string{"show", ars[0].Path}, 2, rejected},
		{[]string{"restore", ars[0].Path}, 2, ""},
		{[]string{"restore", mine}, 2, ""},
		{[]string{"restore", "--all", otherFile}, 2, ""},
	}
	check := func(when string, skip ...string) {
		t.Helper()
		for _, c := range cases {
			// restore, a writer, takes the pass lock and recovers first
			// (and, beside a daemon, marks the usage ledger behind): only
			// the stores and the archive must stay as they were.
			tree := func() string {
				if c.args[0] == "restore" {
					return statTree(t, e.root) + "\n" + statTree(t, e.archiveDir())
				}
				return statTree(t, e.home, skip...)
			}
			before := tree()
			out, errs, code := e.cli(c.args...)
			if code != c.code || !strings.Contains(errs, c.want) {
				t.Errorf("%s: %v = %d, %q %q; want %d, %q", when, c.args, code, out, errs, c.code, c.want)
			}
			if after := tree(); after != before {
				t.Errorf("%s: %v wrote:\n%s", when, c.args, diffLines(before, after))
			}
		}
		for _, p := range []string{otherFile, mine, linkOther, linkMine, ars[0].Path} {
			if _, err := os.Lstat(p); err != nil {
				t.Fatalf("%s: %s is gone", when, p)
			}
		}
	}
	// Without a daemon show and delete bring the catalogs up to date first,
	// under the writer lock (§6 list): nothing has changed, so nothing else.
	check("no daemon", "writer.lock")

	d := e.startDaemon()
	waitDaemonQuiet(t, e.home)
	check("daemon running", "status.json")
	if code := d.stop(); code != 0 {
		t.Errorf("daemon exit %d", code)
	}
}
