package main

import (
	"math"
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

// TestListGCKeepsABound: a listing never runs with its collector off and no
// memory limit. GOGC=off alone in the environment keeps the listing's own
// limit (and roomForSessions raises it, to a bound still); GOMEMLIMIT=off
// alone leaves the collector on.
func TestListGCKeepsABound(t *testing.T) {
	pct := debug.SetGCPercent(100)
	lim := debug.SetMemoryLimit(math.MaxInt64)
	defer func() { debug.SetGCPercent(pct); debug.SetMemoryLimit(lim) }()
	reset := func() { debug.SetGCPercent(100); debug.SetMemoryLimit(math.MaxInt64) }

	t.Setenv("GOMEMLIMIT", "")
	t.Setenv("GOGC", "off")
	reset()
	debug.SetGCPercent(-1) // as the runtime read GOGC=off at start
	tuneListGC()
	if got := debug.SetMemoryLimit(-1); got != listMemLimit {
		t.Errorf("GOGC=off: list's memory limit %d, want its own %d (the collector is off)", got, listMemLimit)
	}
	roomForSessions()
	if got := debug.SetMemoryLimit(-1); got == math.MaxInt64 || got < listMemLimit {
		t.Errorf("GOGC=off: limit %d after roomForSessions, want a bound above %d", got, listMemLimit)
	}

	t.Setenv("GOGC", "")
	t.Setenv("GOMEMLIMIT", "off")
	reset()
	tuneListGC()
	roomForSessions()
	if got := debug.SetGCPercent(100); got < 0 {
		t.Errorf("GOMEMLIMIT=off: list's collector off (GOGC %d) with no limit", got)
	}
	if got := debug.SetMemoryLimit(-1); got != math.MaxInt64 {
		t.Errorf("GOMEMLIMIT=off: limit %d, want the environment's (none)", got)
	}

	t.Setenv("GOMEMLIMIT", "")
	reset()
	tuneListGC()
	if p, l := debug.SetGCPercent(100), debug.SetMemoryLimit(-1); p != -1 || l != listMemLimit {
		t.Errorf("no GOGC nor GOMEMLIMIT: GOGC %d limit %d, want off under %d", p, l, listMemLimit)
	}
}
