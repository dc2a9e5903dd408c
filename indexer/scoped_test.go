package indexer

import (
	"cmp"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// ProveProject answers for one project what a full refresh says of that
// project's rows, in every layout with projects: true (and the rows a refresh
// leaves in its catalog) when nothing of the project changed, false when one
// of its sessions was appended to, added or removed. A change to another
// project's files is not looked at: it does not make the project's proof fail
// (Unchanged, which stats every file, answers false to it), except a new file
// in Codex's shared date tree, which is doubt (the directory changed).
func TestProveProject(t *testing.T) {
	for _, layout := range []string{"wave", "claude", "codex", "gemini", "llxprt"} {
		for _, change := range []string{"none", "appendA", "newA", "removeA", "appendB", "newB", "catalogA"} {
			t.Run(layout+"/"+change, func(t *testing.T) {
				t.Parallel() // Codex's wait past the proof slack
				checkProveProject(t, layout, change)
			})
		}
	}
}

func checkProveProject(t *testing.T, layout, change string) {
	root, state := filepath.Join(t.TempDir(), "store"), t.TempDir()
	copyTree(t, filepath.Join("testdata", layout, "basic", "store"), root)
	ix := newLayoutIndexer(t, layout, root, state, false)
	ix.Reconcile() // a deliberately corrupt test file may report an error
	// Every directory an hour old, then a whole proof: the mark is newer than
	// any directory by more than proofSlack.
	age(t, root)
	age(t, state)
	if layout == "codex" {
		pastSlack(t)
	}
	lite := newLayoutIndexer(t, layout, root, state, false)
	start := time.Now()
	if err := lite.LoadLite(); err != nil || !lite.Unchanged() {
		t.Fatalf("the indexed store is not proven unchanged (%v)", err)
	}
	if err := lite.MarkProven(start); err != nil {
		t.Fatal(err)
	}
	// Project A: the first (by name) that ProveProject proves in the store
	// as it is; unit a, its largest main session's. Unit b: a session of
	// another project, in none of A's directories.
	byProject := map[string][]*unit{}
	all, _ := ReadCatalogs(state, []string{layout}, nil)
	for _, en := range all {
		rel, _ := ix.relOf(en.File)
		urel, _ := ix.layout.Classify(rel)
		if u := ix.units.get(urel); u != nil && en.Type == "main" && !slices.Contains(byProject[en.Project], u) {
			byProject[en.Project] = append(byProject[en.Project], u)
		}
	}
	projects := slices.Sorted(maps.Keys(byProject))
	projA := ""
	for _, p := range projects {
		if _, ok := newLayoutIndexer(t, layout, root, state, false).ProveProject([]string{p}); ok && p != "" {
			projA = p
			break
		}
	}
	if projA == "" {
		t.Fatalf("no project of %v is proven", projects)
	}
	size := func(u *unit) int64 { fi, _ := os.Stat(ix.unitPath(u.rel)); return fi.Size() }
	as := byProject[projA]
	slices.SortFunc(as, func(x, y *unit) int {
		return cmp.Or(cmp.Compare(size(y), size(x)), strings.Compare(x.rel, y.rel))
	})
	a := as[0]
	dirsA := map[string]bool{}
	for _, u := range as {
		dirsA[ix.layout.ProjectDir(u.rel)] = true
	}
	var b *unit
	for _, p := range projects {
		for _, u := range byProject[p] {
			if p != projA && b == nil && (ix.layout.ProjectDir(u.rel) == "" || !dirsA[ix.layout.ProjectDir(u.rel)]) {
				b = u
			}
		}
	}
	if b == nil && strings.HasPrefix(change, "new") || strings.HasSuffix(change, "B") && b == nil {
		t.Skipf("no session of another project outside %s's directories", projA)
	}

	want := true // ProveProject's answer
	switch change {
	case "appendA":
		appendFile(t, ix.unitPath(a.rel), "\n")
		want = false
	case "newA", "newB":
		u := a
		if change == "newB" {
			u = b
		}
		if !addTwin(t, ix, u.rel) {
			t.Fatalf("no name for a second session beside %s", u.rel)
		}
		// Codex: a new file in the shared date tree is doubt, whoever's it is.
		want = change == "newB" && layout != "codex"
	case "removeA":
		if err := os.Remove(ix.unitPath(a.rel)); err != nil {
			t.Fatal(err)
		}
		want = false
	case "appendB":
		appendFile(t, ix.unitPath(b.rel), "\n")
	case "catalogA":
		// The project's catalog is gone: a refresh rebuilds it.
		if err := os.RemoveAll(filepath.Join(CatalogDir(state, layout), ProjectKey(projA))); err != nil {
			t.Fatal(err)
		}
		// Found again through the directories the layout names for the
		// project; a Gemini directory that projects.json does not name (only
		// its .project_root does) is not among them: documented, seen by the
		// next whole refresh.
		want = false
		if pl, ok := ix.layout.(projectDirLayout); ok {
			want = !slices.Contains(pl.projectDirNames(root, projA), ix.layout.ProjectDir(a.rel))
		}
		if want && layout != "gemini" {
			t.Errorf("%s names no directory of %s for its project %s", layout, a.rel, projA)
		}
	}

	probe := newLayoutIndexer(t, layout, root, state, false)
	got, ok := probe.ProveProject([]string{projA})
	if ok != want {
		t.Fatalf("ProveProject(%s) after %s = %v, want %v", projA, change, ok, want)
	}
	if change == "appendB" {
		// Proven without looking at B: a whole proof sees B's append.
		whole := newLayoutIndexer(t, layout, root, state, false)
		whole.LoadLite()
		if whole.Unchanged() {
			t.Errorf("Unchanged() after an append to %s = true", b.rel)
		}
	}
	// What a full refresh leaves in the project's catalog.
	ref := newLayoutIndexer(t, layout, root, state, false)
	if err := ref.Load(); err != nil {
		t.Fatal(err)
	}
	ref.Refresh() // a deliberately corrupt test file may report an error
	wantRows, _ := ReadCatalogs(state, []string{layout}, []string{projA})
	if !ok || change == "catalogA" {
		return // (a Gemini directory projects.json does not name: see above)
	}
	SortEntries(got)
	if g, w := rowsOf(got), rowsOf(wantRows); !slices.Equal(g, w) || len(g) == 0 {
		t.Errorf("ProveProject's rows:\n%s\nthe refresh's:\n%s", strings.Join(g, "\n"), strings.Join(w, "\n"))
	}
}

// rowsOf is what a listing shows of each entry, one line each.
func rowsOf(es []Entry) []string {
	var out []string
	for _, e := range es {
		out = append(out, strings.Join([]string{e.Source, e.Project, e.ID, e.Type, e.File, e.FirstPrompt, e.Title, e.CreatedAt, e.LastActiveAt, strconv.Itoa(e.MessageCount), strconv.FormatInt(e.SizeBytes, 10)}, " | "))
	}
	return out
}

// pastSlack waits until the directories changed so far (their change times,
// which age cannot set back) are older than a proof mark made now by more than
// proofSlack.
func pastSlack(t *testing.T) {
	t.Helper()
	changed := time.Now()
	for time.Since(changed) <= proofSlack+10*time.Millisecond {
		time.Sleep(20 * time.Millisecond)
	}
}

// age sets the mtime of every directory under dir an hour back.
func age(t *testing.T, dir string) {
	t.Helper()
	old := time.Now().Add(-time.Hour)
	var dirs []string
	filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err == nil && d.IsDir() {
			dirs = append(dirs, p)
		}
		return nil
	})
	for _, d := range dirs {
		if err := os.Chtimes(d, old, old); err != nil {
			t.Fatal(err)
		}
	}
}

// A Gemini project's first session, in the directory projects.json gives it,
// is a change to that project (it has no catalog yet: the directory is found
// through the registry), also when the registry spells the path with escapes.
func TestProveProjectGeminiRegistry(t *testing.T) {
	for _, reg := range []string{
		`{"projects":{"/home/u/webapp":"webapp","/home/u/fresh":"fresh-slug"}}`,
		`{"projects":{"/home/u/webapp":"webapp","\u002fhome\u002fu\u002ffresh":"fresh-slug"}}`,
	} {
		top := t.TempDir()
		root, state := filepath.Join(top, "tmp"), t.TempDir()
		copyTree(t, filepath.Join("testdata", "gemini", "basic", "store"), root)
		if err := os.WriteFile(filepath.Join(top, "projects.json"), []byte(reg), 0o600); err != nil {
			t.Fatal(err)
		}
		newLayoutIndexer(t, "gemini", root, state, false).Reconcile()
		if _, ok := newLayoutIndexer(t, "gemini", root, state, false).ProveProject([]string{"/home/u/fresh"}); !ok {
			t.Fatal("ProveProject of a project without sessions = false")
		}
		src := filepath.Join(root, "webapp", "chats", "session-2026-03-01T10-00-1a2b3c4d.jsonl")
		data, err := os.ReadFile(src)
		if err != nil {
			t.Fatal(err)
		}
		os.MkdirAll(filepath.Join(root, "fresh-slug", "chats"), 0o700)
		if err := os.WriteFile(filepath.Join(root, "fresh-slug", "chats", "session-2026-03-09T10-00-99aa88bb.jsonl"), data, 0o600); err != nil {
			t.Fatal(err)
		}
		if _, ok := newLayoutIndexer(t, "gemini", root, state, false).ProveProject([]string{"/home/u/fresh"}); ok {
			t.Errorf("registry %s: ProveProject after a first session in the project's directory = true", reg)
		}
		// A refresh files it under that project indeed.
		ref := newLayoutIndexer(t, "gemini", root, state, false)
		ref.Load()
		ref.Refresh()
		if rows, _ := ReadCatalogs(state, []string{"gemini"}, []string{"/home/u/fresh"}); len(rows) != 1 {
			t.Errorf("registry %s: a refresh lists %d sessions of /home/u/fresh, want 1", reg, len(rows))
		}
	}
}
