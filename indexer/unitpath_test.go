package indexer

import (
	"path/filepath"
	"testing"
)

// unitPath's shortcut gives filepath.Join's path for every root and unit path,
// clean or not.
func TestUnitPathIsJoin(t *testing.T) {
	roots := []string{"/", ".", "", "/a", "/a/b", "a", "a/b", "/a/", "/a//b", "/a/./b", "/a/../b", "..", "../x", t.TempDir()}
	rels := []string{".", "", "x", "x/y", "x/y.jsonl", "/x", "x/", "x//y", "./x", "x/.", "x/./y", "..", "../x", "x/..", "x/../y", "...", "x/.../y", ".x/y.", "x/y/z/w.json"}
	for _, root := range roots {
		ix, err := New(Options{Source: "s", Layout: "claude", Root: root, StateDir: t.TempDir()})
		if err != nil {
			t.Fatal(err)
		}
		for _, rel := range rels {
			if got, want := ix.unitPath(rel), filepath.Join(root, filepath.FromSlash(rel)); got != want {
				t.Errorf("root %q unit %q: unitPath %q, Join %q", root, rel, got, want)
			}
		}
	}
}

func TestPlainRel(t *testing.T) {
	for rel, want := range map[string]bool{
		"x": true, "x/y": true, "...": true, ".x/y.": true, "a/b/c.jsonl": true,
		"": false, ".": false, "..": false, "/x": false, "x/": false, "x//y": false, "x/./y": false, "x/../y": false, "../x": false, "x/..": false,
	} {
		if got := plainRel(rel); got != want {
			t.Errorf("plainRel(%q) = %v, want %v", rel, got, want)
		}
	}
}
