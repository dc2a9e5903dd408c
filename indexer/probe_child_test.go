package indexer

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// FuzzOnlyChildAgrees holds each layout's onlyChild to its SkipDir and
// Classify: in a directory that names one child, every other name is skipped
// as a directory and is no unit as a file, and the child is walked. The seeds
// run as a normal test.
func FuzzOnlyChildAgrees(f *testing.F) {
	const id = "5f0c8a2e-3b1d-4c6e-9a7f-1e2d3c4b5a69"
	for _, dir := range []string{"-home-u-proj/" + id, "p/" + "5F0C8A2E-3B1D-4C6E-9A7F-1E2D3C4B5A69", "p", "p/x", "/" + id, "p/" + id + "/subagents", ""} {
		for _, name := range []string{"subagents", "tool-results", "workflows", id + ".jsonl", "agent-a1.jsonl", "agent-.jsonl",
			"subagents.jsonl", "journal.jsonl", "x", "", "a/b", "agent-a1.jsonl/agent-b.jsonl"} {
			f.Add(dir, name)
		}
	}
	f.Fuzz(func(t *testing.T, dir, name string) {
		if name == "" || name == "." || name == ".." || strings.Contains(name, "/") {
			return // not a directory entry's name
		}
		for _, l := range []Layout{claudeLayout{}} {
			child, only := onlyChildOf(l, dir)
			if !only {
				continue
			}
			rel := dir + "/" + name
			if name == child {
				if l.SkipDir(rel) {
					t.Errorf("%s: onlyChild(%q) = %q, which SkipDir skips", l.Name(), dir, child)
				}
				continue
			}
			if _, kind := l.Classify(rel); kind != UnitNone {
				t.Errorf("%s: onlyChild(%q) = %q, but %q is a unit", l.Name(), dir, child, rel)
			}
			if !l.SkipDir(rel) {
				t.Errorf("%s: onlyChild(%q) = %q, but SkipDir walks %q", l.Name(), dir, child, rel)
			}
		}
	})
}

// The raw walk's shortcut into a Claude session's subagents/ (rawChild) sees
// what a listing of the session directory would: every change under
// subagents/, the directory gone, replaced by a symlink or a file; and nothing
// in what it does not list. Both walks give the answer a refresh gives.
func TestUnchangedSessionDirShortcut(t *testing.T) {
	const sess = "-home-u-proj/5f0c8a2e-3b1d-4c6e-9a7f-1e2d3c4b5a69"
	agent := sess + "/subagents/agent-a1b2c3d4e5f60718.jsonl"
	changes := map[string]struct {
		do   func(t *testing.T, root string)
		want bool // unchanged
	}{
		"none":   {func(*testing.T, string) {}, true},
		"append": {func(t *testing.T, root string) { appendFile(t, filepath.Join(root, agent), "\n") }, false},
		"new agent": {func(t *testing.T, root string) {
			data, _ := os.ReadFile(filepath.Join(root, agent))
			os.WriteFile(filepath.Join(root, sess, "subagents", "agent-ffffffffffffffff.jsonl"), data, 0o600)
		}, false},
		"gone": {func(t *testing.T, root string) { os.RemoveAll(filepath.Join(root, sess, "subagents")) }, false},
		"symlink": {func(t *testing.T, root string) {
			d := filepath.Join(root, sess, "subagents")
			os.Rename(d, d+"-real")
			if err := os.Symlink(d+"-real", d); err != nil {
				t.Fatal(err)
			}
		}, false},
		"file": {func(t *testing.T, root string) {
			d := filepath.Join(root, sess, "subagents")
			os.RemoveAll(d)
			os.WriteFile(d, []byte("x\n"), 0o600)
		}, false},
		"beside": {func(t *testing.T, root string) {
			// Neither a unit nor a walked directory beside subagents/.
			data, _ := os.ReadFile(filepath.Join(root, agent))
			os.WriteFile(filepath.Join(root, sess, "agent-eeeeeeeeeeeeeeee.jsonl"), data, 0o600)
			os.MkdirAll(filepath.Join(root, sess, "other", "subagents"), 0o700)
			os.WriteFile(filepath.Join(root, sess, "other", "subagents", "agent-dddddddddddddddd.jsonl"), data, 0o600)
		}, true},
	}
	for _, raw := range []bool{true, false} {
		if raw && !probeRaw {
			continue
		}
		for name, c := range changes {
			t.Run(name, func(t *testing.T) {
				defer func(r bool) { probeRaw = r }(probeRaw)
				probeRaw = raw
				root, state := filepath.Join(t.TempDir(), "store"), t.TempDir()
				copyTree(t, "testdata/claude/basic/store", root)
				ix := newLayoutIndexer(t, "claude", root, state, false)
				ix.Reconcile()
				if ix.units[agent] == nil {
					t.Fatalf("%s not indexed", agent)
				}
				c.do(t, root)
				probe := newLayoutIndexer(t, "claude", root, state, false)
				if err := probe.LoadLite(); err != nil {
					t.Fatal(err)
				}
				got := probe.Unchanged()
				ref := newLayoutIndexer(t, "claude", root, state, false)
				ref.Load()
				ref.Refresh()
				writes := ref.Stats().CatalogWrites
				if got != c.want || got && writes > 0 || !got && writes == 0 {
					t.Errorf("raw %v: Unchanged() = %v, want %v (the refresh wrote %d files)", raw, got, c.want, writes)
				}
			})
		}
	}
}
