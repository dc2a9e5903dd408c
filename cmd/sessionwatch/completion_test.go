package main

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"
)

// completionEnv is a project with three sessions (one titled with an escape
// sequence) and the sessionwatch binary first on PATH.
func completionEnv(t *testing.T) (*testEnv, string) {
	t.Helper()
	e := newEnv(t)
	work := filepath.Join(e.home, "comp")
	os.MkdirAll(work, 0o700)
	dir := e.project(work)
	now := time.Now()
	appendTo(t, filepath.Join(dir, "3a3a3a3a-0000-4000-8000-000000000001.jsonl"), header(work)+message(now.Add(-time.Hour), "fix the build"))
	appendTo(t, filepath.Join(dir, "3b3b3b3b-0000-4000-8000-000000000002.jsonl"), header(work)+message(now.Add(-2*time.Hour), "write: the docs"))
	appendTo(t, filepath.Join(dir, "4c4c4c4c-0000-4000-8000-000000000003.jsonl"), header(work)+message(now.Add(-3*time.Hour), "other"))
	e.agedSession("/elsewhere/x", "3d3d3d3d-0000-4000-8000-000000000004", 5*time.Hour)
	if _, errs, code := e.cli("reindex"); code != 0 {
		t.Fatal(errs)
	}
	t.Chdir(work)
	t.Setenv("PATH", filepath.Dir(binPath)+string(os.PathListSeparator)+os.Getenv("PATH"))
	return e, work
}

func TestCompleteRefs(t *testing.T) {
	e, _ := completionEnv(t)
	tests := []struct {
		args []string
		want string
	}{
		{[]string{"bash", "refs", "3", "show"}, "3a3a3a3a-0000-4000-8000-000000000001\n3b3b3b3b-0000-4000-8000-000000000002\n"},
		{[]string{"bash", "refs", "3", "--all", "delete"}, "3a3a3a3a-0000-4000-8000-000000000001\n3b3b3b3b-0000-4000-8000-000000000002\n3d3d3d3d-0000-4000-8000-000000000004\n"},
		{[]string{"zsh", "refs", "3b", "show"}, "3b3b3b3b-0000-4000-8000-000000000002:write: the docs\n"},
		{[]string{"fish", "refs", "4", "show"}, "4c4c4c4c-0000-4000-8000-000000000003\tother\n"},
		{[]string{"bash", "refs", "", "show", "--source", "nope"}, ""},
		{[]string{"bash", "sources", "w", "list"}, "wave\n"},
	}
	for _, tt := range tests {
		out, errs, code := e.cli(append([]string{completeCmd}, tt.args...)...)
		if code != 0 || out != tt.want {
			t.Errorf("__complete %q = %d %q %q, want %q", tt.args, code, out, errs, tt.want)
		}
	}
}

// TestCompletionScripts: each script parses in its shell (when installed), and
// bash's and fish's complete commands, flags and REFs for real.
func TestCompletionScripts(t *testing.T) {
	e, _ := completionEnv(t)
	for _, sh := range completionShells {
		out, errs, code := e.cli("completion", sh)
		if code != 0 || !strings.Contains(out, "sessionwatch completion "+sh) || !strings.Contains(out, "__complete "+sh+" refs") {
			t.Fatalf("completion %s = %d %q", sh, code, errs)
		}
		for _, flag := range []string{"dry-run", "older-than", "max-sessions", "invalid-only", "binary", "launchd", "check", "once"} {
			if !strings.Contains(out, flag) {
				t.Errorf("completion %s lacks --%s", sh, flag)
			}
		}
		script := filepath.Join(t.TempDir(), "sessionwatch."+sh)
		os.WriteFile(script, []byte(out), 0o600)
		shell, err := exec.LookPath(sh)
		if err != nil {
			t.Logf("%s not installed: not parsed", sh)
			continue
		}
		if msg, err := exec.Command(shell, "-n", script).CombinedOutput(); err != nil {
			t.Errorf("%s -n: %v\n%s", sh, err, msg)
		}
		switch sh {
		case "bash":
			for line, want := range map[string]string{
				"sessionwatch show 3":     "3a3a3a3a-0000-4000-8000-000000000001 3b3b3b3b-0000-4000-8000-000000000002",
				"sessionwatch lis":        "list",
				"sessionwatch list --al":  "--all",
				"sessionwatch config ch":  "check",
				"sessionwatch --source w": "wave",
				"sessionwatch completion": "bash fish zsh",
			} {
				words := strings.Fields(line)
				if line == "sessionwatch completion" {
					words = append(words, "")
				}
				cmd := exec.Command(shell, append([]string{"-c", `source "$0"; COMP_WORDS=("${@}"); COMP_CWORD=$(($#-1)); _sessionwatch; printf '%s\n' "${COMPREPLY[@]}"`, script}, words...)...)
				got, err := cmd.CombinedOutput()
				list := strings.Fields(string(got))
				sort.Strings(list)
				if err != nil || strings.Join(list, " ") != want {
					t.Errorf("bash completes %q to %q (%v), want %q", line, got, err, want)
				}
			}
		case "fish":
			got, err := exec.Command(shell, "--no-config", "-c", `source $argv[1]; complete -C"sessionwatch show 3"; complete -C"sessionwatch lis"`, script).CombinedOutput()
			if err != nil || !strings.Contains(string(got), "3a3a3a3a-0000-4000-8000-000000000001\tfix the build") || !strings.Contains(string(got), "list\t") {
				t.Errorf("fish completes to %q (%v)", got, err)
			}
		}
	}
}

// TestCompleteRefsEscapesHostileIDs: Codex takes a session's id from its
// transcript (payload.id), so an id can carry terminal escapes. The shell
// prints completion candidates to the terminal as they are: such an id must not
// be offered (escaped it would no longer name the session), and no byte of it
// may come out raw.
func TestCompleteRefsEscapesHostileIDs(t *testing.T) {
	e := newEnv(t)
	codex := filepath.Join(e.home, "codex")
	e.writeConfig(`{"state_dir":%q,"archive_dir":%q,"janitor":{"run_at_start":false,"schedule":"off"},
	 "sources":[{"name":"codex","layout":"codex","root":%q}]}`, e.state, filepath.Join(e.home, "archive"), codex)
	proj := filepath.Join(e.home, "proj")
	os.MkdirAll(proj, 0o700)
	dir := filepath.Join(codex, "2026", "11", "01")
	os.MkdirAll(dir, 0o700)
	for i, id := range []string{"c0de0000-0000-4000-8000-000000000001", "c0de\x1b]0;PWNED\x07\x1b[31m"} {
		meta, _ := json.Marshal(map[string]any{"timestamp": "2026-11-01T10:00:00Z", "type": "session_meta",
			"payload": map[string]any{"id": id, "timestamp": "2026-11-01T10:00:00Z", "cwd": proj, "source": "cli"}})
		msg := `{"timestamp":"2026-11-01T10:00:01Z","type":"event_msg","payload":{"type":"user_message","message":"hi"}}`
		name := fmt.Sprintf("rollout-2026-11-01T10-00-0%d-c0de0000-0000-4000-8000-00000000000%d.jsonl", i, i+1)
		appendTo(t, filepath.Join(dir, name), string(meta)+"\n"+msg+"\n")
	}
	t.Chdir(proj)
	if out, errs, code := e.cli("list", "--json"); code != 0 || strings.Count(out, `"id"`) != 2 {
		t.Fatalf("list --json = %d %s %s, want both sessions", code, out, errs)
	}
	for _, sh := range []string{"bash", "zsh", "fish"} {
		out, errs, code := e.cli(completeCmd, sh, "refs", "c", "show")
		if code != 0 || strings.ContainsAny(out+errs, "\x1b\x07") {
			t.Errorf("__complete %s refs = %d %q %q: raw control characters", sh, code, out, errs)
		}
		if !strings.Contains(out, "c0de0000-0000-4000-8000-000000000001") {
			t.Errorf("__complete %s refs = %q, want the plain id offered", sh, out)
		}
	}
}
