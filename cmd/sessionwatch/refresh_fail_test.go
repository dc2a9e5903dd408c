package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sessionwatch/sessionwatch/config"
	"github.com/sessionwatch/sessionwatch/indexer"
)

// TestRefreshSourcesReportsAFailedSource: a source that cannot be loaded or
// refreshed (its catalogs' directory is a file) is reported, counts as not
// refreshed, and is not recorded as fresh. Before, the error of Load and
// Refresh was kept in a variable of the if statement and the one checked was
// another: every source counted as refreshed (a usage ledger's behind mark
// was then cleared although nothing reached it).
func TestRefreshSourcesReportsAFailedSource(t *testing.T) {
	e := newEnv(t)
	appendTo(t, filepath.Join(e.project("/home/u/p"), "s1.jsonl"), header("/home/u/p")+message(time.Now(), "hello"))
	if err := os.MkdirAll(filepath.Join(e.state, "index"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(e.state, "index", "wave"), []byte("not a directory"), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg, err := config.Load(e.config)
	if err != nil {
		t.Fatal(err)
	}
	var stderr bytes.Buffer
	fresh := &refreshed{bySource: map[string][]indexer.Entry{}}
	if refreshSources(&env{stderr: &stderr}, cfg, nil, fresh) {
		t.Error("a source that failed counted as refreshed")
	}
	if _, ok := fresh.bySource["wave"]; ok {
		t.Error("a source that failed was recorded as fresh")
	}
	if !strings.Contains(stderr.String(), "index wave:") {
		t.Errorf("no error named the source: %q", stderr.String())
	}
}
