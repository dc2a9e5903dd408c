package main

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/sessionwatch/sessionwatch/cmd/sessionload/gen"
	"github.com/sessionwatch/sessionwatch/indexer"
)

// scopedLayouts are the layouts whose sessions belong to projects, each a
// source of TestListProjectWithoutDaemonIsScoped's store.
var scopedLayouts = []string{"wave", "claude", "codex", "gemini", "llxprt"}

// Without a daemon, `list` of one project proves and refreshes only what can
// change that project's rows: a change to another project's sessions is left
// to a later refresh (that project's catalogs are not rewritten), while the
// project's own appended, new and removed sessions show exactly as a full
// refresh shows them, in every layout with projects (Codex's shared date tree
// too).
func TestListProjectWithoutDaemonIsScoped(t *testing.T) {
	e := newEnv(t)
	home := filepath.Join(e.home, "u")
	var sources []string
	stores := map[string]*gen.Store{}
	for i, l := range scopedLayouts {
		root := gen.DefaultRoot(l, e.home)
		// One home, no prefix: the layouts share their project paths.
		st, err := gen.Plan(root, gen.Spec{Layout: l, Projects: 2, Sessions: 8, Lines: 2, LineSize: 200, Seed: int64(i + 1), Home: home})
		if err != nil {
			t.Fatal(err)
		}
		if err := st.Write(); err != nil {
			t.Fatal(err)
		}
		stores[l] = st
		sources = append(sources, fmt.Sprintf(`{"name":%q,"layout":%q,"root":%q}`, l, l, root))
	}
	e.writeConfig(`{"state_dir":%q,"archive_dir":%q,"sources":[%s]}`, e.state, filepath.Join(e.home, "archive"), strings.Join(sources, ","))
	projA := stores["wave"].Sessions[0].Project
	projB := ""
	for _, s := range stores["wave"].Sessions {
		if s.Project != projA {
			projB = s.Project
		}
	}
	for _, p := range []string{projA, projB} {
		os.MkdirAll(p, 0o700)
	}
	t.Chdir(projA)
	if _, errs, code := e.cli("reindex"); code != 0 {
		t.Fatalf("reindex = %d: %s", code, errs)
	}
	// Every directory an hour old, and a whole proof (list --all): Codex's
	// proof mark is then newer than any directory by more than its slack.
	ageDirs(t, e.home)
	// A directory's change time (which ageDirs cannot set back) must be
	// older than the mark by more than its slack.
	for changed := time.Now(); time.Since(changed) <= 1100*time.Millisecond; {
		time.Sleep(20 * time.Millisecond)
	}
	listRows(t, e, "--all")
	if _, err := os.Stat(filepath.Join(e.state, "proofs", "codex")); err != nil {
		t.Fatalf("no proof mark after list --all: %v", err)
	}

	// mains are the main sessions of project p in layout l.
	mains := func(l, p string) []*gen.Session {
		var out []*gen.Session
		for _, s := range stores[l].Sessions {
			if s.Project == p && !s.Subagent {
				out = append(out, s)
			}
		}
		return out
	}
	later := time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)

	// 1. Project B changes in every layout: A's list neither looks at it nor
	// rewrites B's catalogs, and shows what a full refresh shows of A.
	before := listRows(t, e, "--type", "all")
	for _, l := range scopedLayouts {
		s := mains(l, projB)[0]
		appendTo(t, stores[l].Path(s), string(stores[l].Next(s, later)))
	}
	catsB := projectIndexFiles(t, e, projB)
	rows := listRows(t, e, "--type", "all")
	if !reflect.DeepEqual(rows, before) {
		t.Errorf("after a change to another project, list = %+v\nwant %+v", rows, before)
	}
	if got := projectIndexFiles(t, e, projB); !reflect.DeepEqual(got, catsB) {
		t.Errorf("list of %s rewrote %s's catalogs:\n%v\n%v", projA, projB, catsB, got)
	}
	checkSameAsFullRefresh(t, e, projA, rows)

	// 2. A's own sessions: appended to, added, removed.
	for i, l := range scopedLayouts {
		ms := mains(l, projA)
		if len(ms) < 2 {
			t.Fatalf("%s: %d main sessions of %s", l, len(ms), projA)
		}
		appendTo(t, stores[l].Path(ms[0]), string(stores[l].Next(ms[0], later)))
		if err := os.Remove(stores[l].Path(ms[1])); err != nil {
			t.Fatal(err)
		}
		late, err := gen.Plan(stores[l].Root, gen.Spec{Layout: l, Projects: 2, Sessions: 2, Lines: 1, LineSize: 200, Seed: int64(100 + i), Home: home,
			Start: time.Date(2026, 11, 20, 0, 0, 0, 0, time.UTC)})
		if err != nil {
			t.Fatal(err)
		}
		late.Sessions = late.Sessions[:1] // project 0: A
		if late.Sessions[0].Project != projA {
			t.Fatalf("the late session's project is %s", late.Sessions[0].Project)
		}
		if err := late.Write(); err != nil {
			t.Fatal(err)
		}
	}
	rows = listRows(t, e, "--type", "all")
	if reflect.DeepEqual(rows, before) {
		t.Error("list did not change after appends, new and removed sessions")
	}
	checkSameAsFullRefresh(t, e, projA, rows)
}

// checkSameAsFullRefresh holds rows (a list of project p) to what list --all
// (a refresh of every source) lists of p.
func checkSameAsFullRefresh(t *testing.T, e *testEnv, p string, rows []listed) {
	t.Helper()
	var want []listed
	for _, r := range listRows(t, e, "--all", "--type", "all") {
		if r.Project == p {
			r.N = len(want) + 1
			want = append(want, r)
		}
	}
	if !reflect.DeepEqual(rows, want) {
		t.Errorf("list of %s:\n%+v\na full refresh lists:\n%+v", p, rows, want)
	}
	var bySource = map[string]int{}
	for _, r := range rows {
		bySource[r.Source]++
	}
	for _, l := range scopedLayouts {
		if bySource[l] == 0 {
			t.Errorf("no %s session listed for %s", l, p)
		}
	}
}

// projectIndexFiles is indexFiles restricted to the catalogs of project p.
func projectIndexFiles(t *testing.T, e *testEnv, p string) map[string]string {
	t.Helper()
	out := map[string]string{}
	key := string(filepath.Separator) + indexer.ProjectKey(p) + string(filepath.Separator)
	for f, v := range indexFiles(t, e) {
		if strings.Contains(f, key) {
			out[f] = v
		}
	}
	if len(out) == 0 {
		t.Fatalf("no catalog of %s", p)
	}
	return out
}

// ageDirs sets the mtime of every directory under dir an hour back.
func ageDirs(t *testing.T, dir string) {
	t.Helper()
	old := time.Now().Add(-time.Hour)
	filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err == nil && d.IsDir() {
			if err := os.Chtimes(p, old, old); err != nil {
				t.Fatal(err)
			}
		}
		return nil
	})
}
