package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestTermSafe(t *testing.T) {
	tests := []struct{ in, want string }{
		{"plain text", "plain text"},
		{"héllo 日本語 ✓", "héllo 日本語 ✓"},
		{"\x1b]0;PWNED\x07\x1b[31m", `\x1b]0;PWNED\x07\x1b[31m`},
		{"tab\there\nnew\rline", `tab\x09here\x0anew\x0dline`},
		{"del\x7f", `del\x7f`},
		{"c1 \u009b31m \u0085", `c1 \u009b31m \u0085`},
		{"bidi \u202eevil\u2066", `bidi \u202eevil\u2066`},
		{"bad \xff\xfe utf8", `bad \xff\xfe utf8`},
		{"", ""},
	}
	for _, tt := range tests {
		if got := termSafe(tt.in); got != tt.want {
			t.Errorf("termSafe(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

// noControl fails if s holds a byte a terminal would act on.
func noControl(t *testing.T, what, s string) {
	t.Helper()
	for i, r := range s {
		if (r < 0x20 && r != '\n') || r == 0x7f || (r >= 0x80 && r <= 0x9f) {
			t.Errorf("%s: control character %U at byte %d:\n%q", what, r, i, s)
			return
		}
	}
}

// TestHostileTextIsEscaped is issue 11 §8: a first prompt holding OSC and CSI
// sequences, and an id taken from a file name with control characters, reach the
// terminal only escaped (list, show, clean, restore, errors); --json is exact.
func TestHostileTextIsEscaped(t *testing.T) {
	e := newEnv(t)
	const evil = "\x1b]0;PWNED\x07\x1b[31m"
	const evilShown = `\x1b]0;PWNED\x07\x1b[31m`
	work := filepath.Join(e.home, "evil")
	os.MkdirAll(work, 0o700)
	claudeRoot := filepath.Join(e.home, ".claude", "projects")
	e.writeConfig(`{"state_dir":%q,"archive_dir":%q,"janitor":{"run_at_start":false,"schedule":"off"},
	 "sources":[{"name":"wave","layout":"wave","root":%q},{"name":"claude","layout":"claude","root":%q,"retention":"1d"}]}`,
		e.state, e.archiveDir(), e.root, claudeRoot)
	dir := e.project(work)
	wave := filepath.Join(dir, "e1e1e1e1-0000-4000-8000-000000000001.jsonl")
	msg, _ := json.Marshal(map[string]any{"timestamp": time.Now().Add(-time.Hour).UTC().Format(time.RFC3339Nano), "id": "m", "role": "user",
		"blocks": []any{map[string]any{"type": "text", "content": evil + " quoted page"}}})
	appendTo(t, wave, header(work)+string(msg)+"\n")

	// A legacy Claude subagent file: its id is the file name's.
	agentID := "x" + evil
	cdir := filepath.Join(claudeRoot, "-evil")
	os.MkdirAll(cdir, 0o700)
	agent := filepath.Join(cdir, "agent-"+agentID+".jsonl")
	old := time.Now().Add(-3 * 24 * time.Hour)
	line, _ := json.Marshal(map[string]any{"type": "user", "cwd": work, "sessionId": "c1c1c1c1-0000-4000-8000-000000000001",
		"isSidechain": true, "agentId": agentID, "timestamp": old.UTC().Format(time.RFC3339), "message": map[string]any{"role": "user", "content": evil + "sub"}})
	appendTo(t, agent, string(line)+"\n")
	os.Chtimes(agent, old, old)
	if _, errs, code := e.cli("reindex"); code != 0 {
		t.Fatal(errs)
	}
	t.Chdir(work)

	out, errs, code := e.cli("list", "--type", "all")
	noControl(t, "list", out+errs)
	if code != 0 || !strings.Contains(out, evilShown) || !strings.Contains(out, `x\x1b]0;P`) {
		t.Errorf("list = %d:\n%s%s\nwant the prompt and the id escaped", code, out, errs)
	}
	out, _, _ = e.cli("list", "--type", "all", "--json")
	var rows []listed
	if err := json.Unmarshal([]byte(out), &rows); err != nil || len(rows) != 2 {
		t.Fatalf("list --json: %v\n%s", err, out)
	}
	for _, r := range rows {
		if r.ID != agentID && r.FirstPrompt != evil+" quoted page" {
			t.Errorf("list --json row %+v: want the exact text", r)
		}
	}
	for _, ref := range []string{"1", "2"} {
		out, errs, code = e.cli("show", "--type", "all", ref)
		noControl(t, "show "+ref, out+errs)
		if code != 0 || !strings.Contains(out, `\x1b`) {
			t.Errorf("show %s = %d:\n%s%s", ref, code, out, errs)
		}
	}
	out, errs, _ = e.cli("show", "--type", "all", "x"+evil[:3])
	noControl(t, "show by a prefix holding ESC", out+errs)
	out, errs, code = e.cli("show", "nope"+evil)
	noControl(t, "not found error", out+errs)
	if code != 1 || !strings.Contains(errs, "nope"+evilShown) {
		t.Errorf("show of a hostile REF = %d %q", code, errs)
	}

	out, errs, code = e.cli("clean", "--source", "claude")
	noControl(t, "clean", out+errs)
	if code != 0 || !strings.Contains(out, `x\x1b]0;PWNED\x07\x1b[31m`) || fileExists(agent) {
		t.Fatalf("clean = %d:\n%s%s\nwant the archived id escaped", code, out, errs)
	}
	out, errs, code = e.cli("restore", "1")
	noControl(t, "restore", out+errs)
	if code != 0 || !strings.Contains(out, "restored claude session x"+evilShown) || !fileExists(agent) {
		t.Errorf("restore = %d:\n%s%s", code, out, errs)
	}
	out, errs, _ = e.cli("status")
	noControl(t, "status", out+errs)
}

// TestTildeText: paths under the home directory inside a message (a janitor
// reason, a refusal) are shortened to ~/…, only where a path starts.
func TestTildeText(t *testing.T) {
	home := t.TempDir()
	t.Setenv("HOME", home)
	tests := []struct{ in, want string }{
		{"in use by pid 7: lock " + home + "/.wave/x.jsonl.lock held", "in use by pid 7: lock ~/.wave/x.jsonl.lock held"},
		{home + "/a and (" + home + "/b)", "~/a and (~/b)"},
		{"/elsewhere" + home + "/a", "/elsewhere" + home + "/a"},
		{"no path here", "no path here"},
		{home, home},
	}
	for _, tt := range tests {
		if got := tildeText(tt.in); got != tt.want {
			t.Errorf("tildeText(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}
