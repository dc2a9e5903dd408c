package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sessionwatch/sessionwatch/indexer"
)

// TestListHidesWhatThePickerHides: a Claude session with only file-history
// snapshots is left out of `list` and shown, marked, by `list --type all`.
func TestListHidesWhatThePickerHides(t *testing.T) {
	e := newEnv(t)
	root := filepath.Join(e.home, ".claude", "projects")
	e.writeConfig(`{"state_dir":%q,"archive_dir":%q,"janitor":{"run_at_start":false,"schedule":"off"},"sources":[{"name":"claude","layout":"claude","root":%q}]}`,
		e.state, filepath.Join(e.home, "archive"), root)
	proj := filepath.Join(e.home, "code", "p")
	dir := filepath.Join(root, indexer.SanitizeClaudePath(proj))
	os.MkdirAll(dir, 0o700)
	shown, hidden := "c1a0de00-0000-4000-8000-000000000001", "c1a0de00-0000-4000-8000-000000000002"
	appendTo(t, filepath.Join(dir, shown+".jsonl"), `{"type":"user","uuid":"u1","timestamp":"2026-11-01T10:00:00Z","cwd":"`+proj+`","message":{"role":"user","content":"hello"}}`+"\n")
	appendTo(t, filepath.Join(dir, hidden+".jsonl"), `{"type":"file-history-snapshot","messageId":"m","snapshot":{"messageId":"m","trackedFileBackups":{},"timestamp":"2026-11-01T09:00:00Z"},"isSnapshotUpdate":false}`+"\n")
	ids := func(args ...string) (string, map[string]bool) {
		out, errOut, code := e.cli(args...)
		if code != 0 {
			t.Fatalf("%v: exit %d: %s", args, code, errOut)
		}
		got := map[string]bool{}
		if strings.Contains(strings.Join(args, " "), "--json") {
			var rows []struct {
				ID     string `json:"id"`
				Hidden bool   `json:"hidden"`
			}
			if err := json.Unmarshal([]byte(out), &rows); err != nil {
				t.Fatal(err)
			}
			for _, r := range rows {
				got[r.ID] = r.Hidden
			}
		}
		return out, got
	}
	if _, errOut, code := e.cli("reindex"); code != 0 {
		t.Fatalf("reindex: exit %d: %s", code, errOut)
	}
	if _, got := ids("list", "--all", "--json"); len(got) != 1 || got[shown] {
		t.Errorf("list --all --json = %v, want only %s", got, shown)
	}
	if _, got := ids("list", "--all", "--type", "all", "--json"); len(got) != 2 || !got[hidden] || got[shown] {
		t.Errorf("list --all --type all --json = %v, want both, %s marked hidden", got, hidden)
	}
	if out, _ := ids("list", "--all", "--type", "all"); !strings.Contains(out, "(hidden) No prompt") {
		t.Errorf("list --type all table does not mark the hidden session:\n%s", out)
	}
}
