package indexer

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// FuzzOnlyChildAgrees holds each layout's onlyChild (Claude's session
// directories, Gemini's and llxprt's project directories) to its SkipDir and
// Classify: in a directory that names one child, every other name is skipped
// as a directory and is no unit as a file, and the child is walked. The seeds
// run as a normal test.
func FuzzOnlyChildAgrees(f *testing.F) {
	const id = "5f0c8a2e-3b1d-4c6e-9a7f-1e2d3c4b5a69"
	for _, dir := range []string{"-home-u-proj/" + id, "p/" + "5F0C8A2E-3B1D-4C6E-9A7F-1E2D3C4B5A69", "p", "p/x", "/" + id, "p/" + id + "/subagents", "", "0a1b2c3d4e5f60718293a4b5c6d7e8f9", "proj/chats", "proj/chats/" + id} {
		for _, name := range []string{"subagents", "tool-results", "workflows", id + ".jsonl", "agent-a1.jsonl", "agent-.jsonl",
			"subagents.jsonl", "journal.jsonl", "x", "", "a/b", "agent-a1.jsonl/agent-b.jsonl",
			"chats", "logs.json", "session-a.jsonl", "session-2025-01-01T00-00-" + id[:8] + ".jsonl", "session-2025-01-01T00-00-" + id[:8] + ".json", id, "checkpoints"} {
			f.Add(dir, name)
		}
	}
	f.Fuzz(func(t *testing.T, dir, name string) {
		if name == "" || name == "." || name == ".." || strings.Contains(name, "/") {
			return // not a directory entry's name
		}
		for _, l := range []Layout{claudeLayout{}, geminiLayout{}, llxprtLayout{}} {
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

// The raw walk's shortcut into the one child directory that can hold units
// (rawChild: a Claude session's subagents/, a Gemini or llxprt project's
// chats/) sees what a listing of the parent would: every change in the child,
// the child gone, replaced by a symlink or a file; and nothing in what it does
// not list. Both walks give the answer a refresh gives.
func TestUnchangedOnlyChildShortcut(t *testing.T) {
	cases := []struct {
		layout, child, unit, twin string // twin: another unit's name in child
	}{
		{"claude", "-home-u-proj/5f0c8a2e-3b1d-4c6e-9a7f-1e2d3c4b5a69/subagents", "agent-a1b2c3d4e5f60718.jsonl", "agent-ffffffffffffffff.jsonl"},
		{"gemini", "webapp/chats", "session-2026-03-01T10-00-1a2b3c4d.jsonl", "session-2026-03-09T10-00-ffffffff.jsonl"},
		{"llxprt", "8a28130a8b3616126348f5e624b8cd3102949df11a91e9aa0ff13c2b3734e244/chats", "session-2026-03-04T08-30-00-0b9a8c7d-6e5.jsonl", "session-2026-03-09T08-30-00-ffffffff-fff.jsonl"},
	}
	for _, c := range cases {
		l, err := LookupLayout(c.layout)
		if err != nil {
			t.Fatal(err)
		}
		if _, only := onlyChildOf(l, filepath.Dir(c.child)); !only {
			t.Fatalf("%s: no onlyChild for %s", c.layout, filepath.Dir(c.child))
		}
		unit := c.child + "/" + c.unit
		changes := []struct {
			name string
			do   func(t *testing.T, child string)
			want bool // unchanged
		}{
			{"none", func(*testing.T, string) {}, true},
			{"append", func(t *testing.T, child string) { appendFile(t, filepath.Join(child, c.unit), "\n") }, false},
			{"new", func(t *testing.T, child string) {
				data, _ := os.ReadFile(filepath.Join(child, c.unit))
				os.WriteFile(filepath.Join(child, c.twin), data, 0o600)
			}, false},
			{"gone", func(t *testing.T, child string) { os.RemoveAll(child) }, false},
			{"symlink", func(t *testing.T, child string) {
				os.Rename(child, child+"-real")
				if err := os.Symlink(child+"-real", child); err != nil {
					t.Fatal(err)
				}
			}, false},
			{"file", func(t *testing.T, child string) {
				os.RemoveAll(child)
				os.WriteFile(child, []byte("x\n"), 0o600)
			}, false},
			{"beside", func(t *testing.T, child string) {
				// Beside the child: neither a unit nor a walked directory.
				data, _ := os.ReadFile(filepath.Join(child, c.unit))
				parent := filepath.Dir(child)
				os.WriteFile(filepath.Join(parent, c.twin), data, 0o600)
				os.MkdirAll(filepath.Join(parent, "other", filepath.Base(child)), 0o700)
				os.WriteFile(filepath.Join(parent, "other", filepath.Base(child), c.twin), data, 0o600)
			}, true},
		}
		for _, raw := range []bool{true, false} {
			if raw && !probeRaw {
				continue
			}
			for _, ch := range changes {
				t.Run(fmt.Sprintf("%s/raw=%v/%s", c.layout, raw, ch.name), func(t *testing.T) {
					defer func(r bool) { probeRaw = r }(probeRaw)
					probeRaw = raw
					root, state := filepath.Join(t.TempDir(), "store"), t.TempDir()
					copyTree(t, filepath.Join("testdata", c.layout, "basic", "store"), root)
					ix := newLayoutIndexer(t, c.layout, root, state, false)
					ix.Reconcile()
					if ix.units.get(unit) == nil {
						t.Fatalf("%s not indexed", unit)
					}
					ch.do(t, filepath.Join(root, c.child))
					probe := newLayoutIndexer(t, c.layout, root, state, false)
					if err := probe.LoadLite(); err != nil {
						t.Fatal(err)
					}
					got := probe.Unchanged()
					ref := newLayoutIndexer(t, c.layout, root, state, false)
					ref.Load()
					ref.Refresh()
					writes := ref.Stats().CatalogWrites
					if got != ch.want || got && writes > 0 || !got && writes == 0 {
						t.Errorf("Unchanged() = %v, want %v (the refresh wrote %d files)", got, ch.want, writes)
					}
				})
			}
		}
	}
}
