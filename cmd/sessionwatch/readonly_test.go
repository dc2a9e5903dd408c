package main

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"testing"
	"time"
)

// statTree describes every file and directory under dir (name, type, mode,
// size, mtime, inode), skipping the names in skip: a rename over a file, a
// touch, a new or removed file all show.
func statTree(t *testing.T, dir string, skip ...string) string {
	t.Helper()
	var lines []string
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		for _, s := range skip {
			if d.Name() == s {
				return nil
			}
		}
		fi, err := os.Lstat(p)
		if err != nil {
			return err
		}
		var ino uint64
		if st, ok := fi.Sys().(*syscall.Stat_t); ok {
			ino = uint64(st.Ino)
		}
		rel, _ := filepath.Rel(dir, p)
		lines = append(lines, fmt.Sprintf("%s %v %d %d %d", rel, fi.Mode(), fi.Size(), fi.ModTime().UnixNano(), ino))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	sort.Strings(lines)
	return strings.Join(lines, "\n")
}

// diffLines names the lines of a and b that the other lacks.
func diffLines(a, b string) string {
	in := func(s string) map[string]bool {
		m := map[string]bool{}
		for _, l := range strings.Split(s, "\n") {
			m[l] = true
		}
		return m
	}
	ma, mb := in(a), in(b)
	var out []string
	for l := range ma {
		if !mb[l] {
			out = append(out, "- "+l)
		}
	}
	for l := range mb {
		if !ma[l] {
			out = append(out, "+ "+l)
		}
	}
	sort.Strings(out)
	return strings.Join(out, "\n")
}

// TestReadOnlyCommandsWriteNothing holds the Writers rule: status, doctor,
// reindex --check, config show|check and every --dry-run write and delete
// nothing (stores, state dir, archive, config), with or without a daemon; and
// while a daemon runs, neither do search, usage, list and show.
func TestReadOnlyCommandsWriteNothing(t *testing.T) {
	e := newEnv(t)
	work := filepath.Join(e.home, "proj")
	os.MkdirAll(work, 0o700)
	t.Chdir(work)
	old := e.agedSession(work, idOld, 40*24*time.Hour)
	e.agedSession(work, idYoung, 2*time.Hour)
	e.agedSession(work, "cccccccc-0000-4000-8000-00000000000c", 30*24*time.Hour)
	dead := deadPID(t)
	lockFor(t, old, dead) // a stale lock: a real delete or pass would remove it
	if _, errs, code := e.cli("reindex"); code != 0 {
		t.Fatal(errs)
	}
	// One archived session, for the archive's side of the dry runs and listings.
	if _, errs, code := e.cli("delete", "cccccccc"); code != 0 {
		t.Fatalf("delete = %d %s", code, errs)
	}
	readOnly := [][]string{
		{"status"}, {"status", "--json"}, {"doctor"}, {"reindex", "--check"}, {"config", "show"}, {"config", "check"},
		{"clean", "--dry-run"}, {"clean", "--dry-run", "--json", "--max-sessions", "1"}, {"clean", "--dry-run", "--older-than", "1h"},
		{"clean", "--dry-run", "--invalid-only"},
		{"delete", idOld[:8], "--dry-run"}, {"delete", idOld[:8], "--dry-run", "--permanent"}, {"delete", idYoung[:8], "--dry-run", "--force"},
	}
	check := func(when string, cmds [][]string, skip ...string) {
		t.Helper()
		for _, args := range cmds {
			before := statTree(t, e.home, skip...)
			out, errs, code := e.cli(args...)
			if code == 2 {
				t.Errorf("%s: %v = %d (a usage error tests nothing):\n%s%s", when, args, code, out, errs)
			}
			if after := statTree(t, e.home, skip...); after != before {
				t.Errorf("%s: %v wrote:\n%s", when, args, diffLines(before, after))
			}
		}
	}
	check("no daemon", readOnly)
	if !fileExists(old) || !fileExists(old+".lock") {
		t.Fatal("a dry run removed the session or its stale lock")
	}

	d := e.startDaemon()
	waitDaemonQuiet(t, e.home)
	whileRunning := append(readOnly,
		[]string{"search", "prompt"}, []string{"search", "prompt", "--all", "--json", "--archived", "--source", "wave", "--since", "90d", "--until", "2099-01-01", "--role", "user", "--limit", "5"},
		[]string{"usage"}, []string{"usage", "daily", "--all", "--by", "model", "--json", "--utc"}, []string{"usage", "--statusline"},
		[]string{"usage", "project", "--all"}, []string{"usage", "session", "--since", "20200101"},
		[]string{"list"}, []string{"list", "--all", "--json", "--type", "all"}, []string{"list", "--archived", "--all"},
		[]string{"show", "1"}, []string{"show", "1", "--messages"}, []string{"show", "1", "--grep", "prompt"}, []string{"show", "1", "--archived", "--all"},
	)
	check("daemon running", whileRunning, "status.json")
	if code := d.stop(); code != 0 {
		t.Errorf("daemon exit %d", code)
	}
}

// deadPID is the pid of a process that has exited.
func deadPID(t *testing.T) int {
	t.Helper()
	p, err := os.StartProcess("/bin/true", []string{"true"}, &os.ProcAttr{})
	if err != nil {
		t.Skip("no /bin/true:", err)
	}
	p.Wait()
	return p.Pid
}

// waitDaemonQuiet waits until nothing under home but the daemon's status file
// changes for 200 ms: the daemon has settled what it writes at start-up, and
// writes only its status file until something changes.
func waitDaemonQuiet(t *testing.T, home string) {
	t.Helper()
	quiet := statTree(t, home, "status.json")
	waitFor(t, 20*time.Second, "the daemon quiet", func() bool {
		time.Sleep(200 * time.Millisecond)
		now := statTree(t, home, "status.json")
		same := now == quiet
		quiet = now
		return same
	})
}
