package indexer

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// codexProvenStore is Codex's basic store, indexed, every directory an hour
// old, and proven whole with the mark of a walk that began at start(now).
// It returns the indexer that indexed it, the root, the state dir and the
// unit of a main session of /home/u/proj.
func codexProvenStore(t *testing.T, start func(now time.Time) time.Time) (*Indexer, string, string, string) {
	t.Helper()
	root, state := filepath.Join(t.TempDir(), "store"), t.TempDir()
	copyTree(t, filepath.Join("testdata", "codex", "basic", "store"), root)
	ix := newLayoutIndexer(t, "codex", root, state, false)
	ix.Reconcile() // the store's deliberately corrupt file reports an error
	age(t, root)
	age(t, state)
	pastSlack(t)
	lite := newLayoutIndexer(t, "codex", root, state, false)
	now := time.Now()
	if err := lite.LoadLite(); err != nil || !lite.Unchanged() {
		t.Fatalf("the indexed store is not proven unchanged (%v)", err)
	}
	if err := lite.MarkProven(start(now)); err != nil {
		t.Fatal(err)
	}
	rows, _ := ReadCatalogs(state, []string{"codex"}, []string{"/home/u/proj"})
	for _, en := range rows {
		if en.Type == "main" {
			rel, _ := ix.relOf(en.File)
			if _, ok := newLayoutIndexer(t, "codex", root, state, false).ProveProject([]string{"/home/u/proj"}); !ok {
				t.Fatal("ProveProject of the proven store = false")
			}
			return ix, root, state, rel
		}
	}
	t.Fatal("no main session of /home/u/proj")
	return nil, "", "", ""
}

// checkProvedAsRefresh fails unless ProveProject(project) either answers false
// or gives the rows a full refresh leaves in the project's catalogs.
func checkProvedAsRefresh(t *testing.T, root, state, project string) {
	t.Helper()
	got, ok := newLayoutIndexer(t, "codex", root, state, false).ProveProject([]string{project})
	ref := newLayoutIndexer(t, "codex", root, state, false)
	if err := ref.Load(); err != nil {
		t.Fatal(err)
	}
	ref.Refresh()
	want, _ := ReadCatalogs(state, []string{"codex"}, []string{project})
	if !ok {
		return
	}
	SortEntries(got)
	if g, w := rowsOf(got), rowsOf(want); !slices.Equal(g, w) {
		t.Errorf("ProveProject(%s) = true with rows:\n%s\na full refresh's rows:\n%s", project, strings.Join(g, "\n"), strings.Join(w, "\n"))
	}
}

// A new session of the project copied into an existing date directory by a
// tool that keeps the source's directory mtimes (rsync -a, cp -a, tar x: the
// directory's mtime is set back after its entries were written) leaves every
// directory's mtime older than the mark: its ctime is not.
func TestProveProjectCodexDirMtimeSetBack(t *testing.T) {
	ix, root, state, rel := codexProvenStore(t, func(now time.Time) time.Time { return now })
	dir := filepath.Dir(ix.unitPath(rel))
	fi, err := os.Stat(dir)
	if err != nil {
		t.Fatal(err)
	}
	if !addTwin(t, ix, rel) {
		t.Fatalf("no name for a second session beside %s", rel)
	}
	if err := os.Chtimes(dir, fi.ModTime(), fi.ModTime()); err != nil {
		t.Fatal(err)
	}
	checkProvedAsRefresh(t, root, state, "/home/u/proj")
}

// A mark written while the clock ran ahead (a clock stepped back since: NTP,
// a VM restored) is newer than the directories a new session changes now.
func TestProveProjectCodexClockSteppedBack(t *testing.T) {
	ix, root, state, rel := codexProvenStore(t, func(now time.Time) time.Time { return now.Add(time.Hour) })
	if !addTwin(t, ix, rel) {
		t.Fatalf("no name for a second session beside %s", rel)
	}
	checkProvedAsRefresh(t, root, state, "/home/u/proj")
}

// A Codex rollout indexed while its first line (session_meta, which names its
// cwd) was still being written belongs to no project; the rest of the line
// makes it the project's. Its directory does not change.
func TestProveProjectCodexMetaCompleted(t *testing.T) {
	root, state := filepath.Join(t.TempDir(), "store"), t.TempDir()
	copyTree(t, filepath.Join("testdata", "codex", "basic", "store"), root)
	f := filepath.Join(root, "2026", "03", "01", "rollout-2026-03-01T11-00-00-0199a1b2-c3d4-7e5f-8a6b-7c8d9e0f9999.jsonl")
	line := `{"timestamp":"2026-03-01T10:00:00.000Z","type":"session_meta","payload":{"id":"0199a1b2-c3d4-7e5f-8a6b-7c8d9e0f9999","timestamp":"2026-03-01T10:00:00.000Z","cwd":"/home/u/proj","originator":"codex_cli_rs","cli_version":"0.98.0","source":"cli","model_provider":"openai"}}` + "\n" +
		`{"timestamp":"2026-03-01T10:00:01.000Z","type":"event_msg","payload":{"type":"user_message","message":"hello"}}` + "\n"
	if err := os.WriteFile(f, []byte(line[:40]), 0o600); err != nil {
		t.Fatal(err)
	}
	newLayoutIndexer(t, "codex", root, state, false).Reconcile()
	age(t, root)
	age(t, state)
	pastSlack(t)
	lite := newLayoutIndexer(t, "codex", root, state, false)
	start := time.Now()
	if err := lite.LoadLite(); err != nil || !lite.Unchanged() {
		t.Fatalf("the indexed store is not proven unchanged (%v)", err)
	}
	if err := lite.MarkProven(start); err != nil {
		t.Fatal(err)
	}
	appendFile(t, f, line[40:])
	got, ok := newLayoutIndexer(t, "codex", root, state, false).ProveProject([]string{"/home/u/proj"})
	t.Logf("ProveProject = %v, %d rows", ok, len(got))
	checkProvedAsRefresh(t, root, state, "/home/u/proj")
}
