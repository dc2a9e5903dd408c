package main

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/sessionwatch/sessionwatch/usage"
)

// Catalogs moved by a writer without the ledger attached (reindex while
// a daemon runs; the daemon then dies before its next pass) leave the ledger
// behind the catalogs while stamped: `usage` without a daemon skips the pass.
func TestUsageRunsAPassWhenTheLedgerIsBehindTheCatalogs(t *testing.T) {
	e, file := usageStore(t)
	total := func() int64 { return usageTotal(t, e) }
	total()
	total()
	if !usage.Stamped(e.state) {
		t.Fatal("not settled")
	}
	appendTo(t, file, waveAssistant("2026-03-01T11:00:00Z", "claude-sonnet-4-5", 10, 0))
	// A daemon is running (status file, live pid): reindex rebuilds the
	// catalogs only; the daemon would catch its ledger up at its next pass.
	status := filepath.Join(e.state, "status.json")
	if err := os.WriteFile(status, []byte(fmt.Sprintf(`{"running":true,"pid":%d}`, os.Getpid())), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, errOut, code := e.cli("reindex"); code != 0 {
		t.Fatalf("reindex = %d: %s", code, errOut)
	}
	// The daemon is killed before its next pass.
	os.Remove(status)
	if got := total(); got != 111 {
		t.Errorf("usage total %d after the daemon died, want 111 (ledger behind the catalogs, pass skipped)", got)
	}
	// The full pass caught the ledger up and cleared the marker: settled again.
	if _, err := os.Lstat(filepath.Join(e.state, usage.DirName, usage.BehindName)); err == nil {
		t.Error("the marker is still there after a full pass")
	}
	total()
	if !usage.Stamped(e.state) {
		t.Error("not settled after the catch-up")
	}
}
