package indexer

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/sessionwatch/sessionwatch/config"
)

// A root that is a symlink is resolved by NewGroup; one that does not exist yet
// is resolved when it appears (RootsMoved tells the daemon to rebuild).
func TestGroupResolvesSymlinkRoots(t *testing.T) {
	home := t.TempDir()
	real := filepath.Join(home, "real")
	os.MkdirAll(real, 0o700)
	link := filepath.Join(home, "link")
	later := filepath.Join(home, "later")
	os.Symlink(real, link)
	cfg := config.Default()
	cfg.StateDir = filepath.Join(home, "state")
	cfg.Sources = []config.Source{
		{Name: "wave", Layout: "wave", Root: link, Enabled: true},
		{Name: "codex", Layout: "codex", Root: later, Enabled: true},
	}
	g, err := NewGroup(cfg, nil, false)
	if err != nil {
		t.Fatal(err)
	}
	if got := g.Indexer("wave").Root(); got != real {
		t.Errorf("root of a symlinked source = %q, want %q", got, real)
	}
	if got := g.WatchRoots()[0].Path; got != real {
		t.Errorf("watched root = %q, want %q", got, real)
	}
	if g.RootsMoved() {
		t.Error("RootsMoved before anything changed")
	}
	os.Symlink(real, later)
	if !g.RootsMoved() {
		t.Error("RootsMoved = false after a missing root appeared as a symlink")
	}
	g2, _ := NewGroup(cfg, nil, false)
	if got := g2.Indexer("codex").Root(); got != real {
		t.Errorf("root after it appeared = %q, want %q", got, real)
	}
}
