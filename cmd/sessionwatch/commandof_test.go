package main

import (
	"runtime/debug"
	"testing"
)

// main tunes the collector by the command a command line runs, found after
// the global flags: `sessionwatch --config F list` is a list (it ran with the
// collector on, as a daemon does, when the flag came first).
func TestCommandOf(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"list", "--all"}, "list"},
		{[]string{"--config", "/x.json", "list", "--all"}, "list"},
		{[]string{"--config=/x.json", "show", "1"}, "show"},
		{[]string{"-config", "/x.json", "reindex"}, "reindex"},
		{[]string{"--config", "/x.json", completeCmd, "list"}, completeCmd},
		{[]string{"--config"}, ""},
		{[]string{"--bogus", "list"}, ""},
		{nil, ""},
	} {
		if got := commandOf(tc.args); got != tc.want {
			t.Errorf("commandOf(%q) = %q, want %q", tc.args, got, tc.want)
		}
	}
}

// TestSetGCPercentLeavesTheEnvironmentsGOGC: a command's own GOGC (a listing's
// off, a rebuild's 200, a search's 400) applies unless the user set GOGC or
// GOMEMLIMIT.
func TestSetGCPercentLeavesTheEnvironmentsGOGC(t *testing.T) {
	before := debug.SetGCPercent(100)
	defer debug.SetGCPercent(before)
	t.Setenv("GOGC", "")
	t.Setenv("GOMEMLIMIT", "")
	restore := setGCPercent(300)
	if got := debug.SetGCPercent(300); got != 300 {
		t.Errorf("without GOGC in the environment: GOGC %d, want the command's 300", got)
	}
	restore()
	if got := debug.SetGCPercent(100); got != 100 {
		t.Errorf("after restore: GOGC %d, want 100", got)
	}
	t.Setenv("GOGC", "77")
	debug.SetGCPercent(77) // as the runtime read it at start
	restore = setGCPercent(300)
	if got := debug.SetGCPercent(77); got != 77 {
		t.Errorf("GOGC=77 in the environment: GOGC %d after the command's 300, want 77", got)
	}
	restore()
	t.Setenv("GOGC", "")
	t.Setenv("GOMEMLIMIT", "1GiB")
	debug.SetGCPercent(100)
	restore = setGCPercent(300)
	if got := debug.SetGCPercent(100); got != 100 {
		t.Errorf("GOMEMLIMIT in the environment: GOGC %d, want 100 (the collector left to the environment)", got)
	}
	restore()
}
