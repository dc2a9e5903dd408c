package main

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/sessionwatch/sessionwatch/usage"
)

// Without a daemon, `usage` skips the index pass when every catalog is current
// and the ledger is settled (its stamp names the summary), but not when the
// summary is behind the units (a crash between the two files' writes): then the
// ledger is opened, which rewrites the summary, and the report is right.
func TestUsageWithoutPassTrustsOnlyAStampedSummary(t *testing.T) {
	e, file := usageStore(t)
	total := func() int64 { return usageTotal(t, e) }
	if got := total(); got != 101 {
		t.Fatalf("total %d, want 101", got)
	}
	total() // settles what the first pass wrote into the store
	summary := filepath.Join(e.state, usage.DirName, usage.SummaryName)
	old, err := os.ReadFile(summary)
	if err != nil {
		t.Fatal(err)
	}
	if !usage.Stamped(e.state) {
		t.Fatal("the ledger is not settled after two passes")
	}
	appendTo(t, file, waveAssistant("2026-03-01T11:00:00Z", "claude-sonnet-4-5", 10, 0))
	if got := total(); got != 111 {
		t.Fatalf("after an append the total is %d, want 111", got)
	}
	total() // settled again: the next pass is skipped
	// A crash between the units batch and the summary's: the summary is the one
	// before the append, the catalogs and the units are past it.
	if err := os.WriteFile(summary, old, 0o600); err != nil {
		t.Fatal(err)
	}
	if usage.Stamped(e.state) {
		t.Fatal("a summary behind the units is taken as settled")
	}
	if got := total(); got != 111 {
		t.Errorf("with the summary behind the units the total is %d, want 111", got)
	}
	if !usage.Stamped(e.state) {
		t.Error("the repaired ledger is not settled")
	}
}
