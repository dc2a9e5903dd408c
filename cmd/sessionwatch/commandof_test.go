package main

import "testing"

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
