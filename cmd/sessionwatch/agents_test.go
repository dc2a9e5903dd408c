package main

import (
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sessionwatch/sessionwatch/indexer"
)

// agentStores writes one session of each of Claude Code, Codex, Gemini CLI and
// llxprt for project proj under home, at their default roots, and returns the
// transcript of each by agent name.
func agentStores(t *testing.T, home, proj string) map[string]string {
	t.Helper()
	ts := func(m int) string { return time.Date(2026, 11, 1, 10, m, 0, 0, time.UTC).Format(time.RFC3339) }
	files := map[string]string{
		"claude": filepath.Join(home, ".claude", "projects", indexer.SanitizeClaudePath(proj), "c1a0de00-0000-4000-8000-000000000001.jsonl"),
		"codex":  filepath.Join(home, ".codex", "sessions", "2026", "11", "01", "rollout-2026-11-01T10-01-00-c0de0000-0000-4000-8000-000000000002.jsonl"),
		"gemini": filepath.Join(home, ".gemini", "tmp", "proj", "chats", "session-2026-11-01T10-02-9e000000.jsonl"),
		"llxprt": filepath.Join(home, ".local", "state", "llxprt-code", "tmp", fmt.Sprintf("%x", sha256.Sum256([]byte(proj))), "chats", "session-2026-11-01T10-03-00-11000000-0000.jsonl"),
	}
	lines := map[string]string{
		"claude": fmt.Sprintf(`{"type":"user","uuid":"u1","sessionId":"c1a0de00-0000-4000-8000-000000000001","timestamp":%q,"cwd":%q,"gitBranch":"main","message":{"role":"user","content":"hello claude"}}`, ts(0), proj),
		"codex": fmt.Sprintf(`{"timestamp":%q,"type":"session_meta","payload":{"id":"c0de0000-0000-4000-8000-000000000002","timestamp":%q,"cwd":%q,"model_provider":"openai","source":"cli"}}`, ts(1), ts(1), proj) + "\n" +
			fmt.Sprintf(`{"timestamp":%q,"type":"event_msg","payload":{"type":"user_message","message":"hello codex"}}`, ts(1)),
		"gemini": fmt.Sprintf(`{"sessionId":"9e000000-0000-4000-8000-000000000003","projectHash":"x","startTime":%q,"lastUpdated":%q}`, ts(2), ts(2)) + "\n" +
			fmt.Sprintf(`{"id":"m1","timestamp":%q,"type":"user","content":"hello gemini"}`, ts(2)),
		"llxprt": fmt.Sprintf(`{"v":1,"seq":1,"ts":%q,"type":"session_start","payload":{"sessionId":"11000000-0000-4000-8000-000000000004","projectHash":"h","cwd":%q,"provider":"anthropic","model":"claude-x","startTime":%q}}`, ts(3), proj, ts(3)) + "\n" +
			fmt.Sprintf(`{"v":1,"seq":2,"ts":%q,"type":"content","payload":{"content":{"speaker":"human","blocks":[{"type":"text","text":"hello llxprt"}]}}}`, ts(3)),
	}
	for agent, f := range files {
		if err := os.MkdirAll(filepath.Dir(f), 0o700); err != nil {
			t.Fatal(err)
		}
		appendTo(t, f, lines[agent]+"\n")
	}
	os.WriteFile(filepath.Join(home, ".gemini", "projects.json"), []byte(fmt.Sprintf(`{"projects":{%q:"proj"}}`, proj)), 0o600)
	return files
}

// TestDaemonAllAgentsOneProject: with sessions of all four agents for one project
// at their default roots, `list` there shows them together, appends to each reach
// the catalog, the Claude native index stays current in its v1 schema, delete
// honours llxprt locks, and reindex --check passes.
func TestDaemonAllAgentsOneProject(t *testing.T) {
	e := newEnv(t)
	t.Setenv("CLAUDE_CONFIG_DIR", "")
	t.Setenv("CODEX_HOME", "")
	e.writeConfig(`{"state_dir":%q,"archive_dir":%q,"settle":"20ms","janitor":{"run_at_start":false,"schedule":"off"}}`, e.state, filepath.Join(e.home, "archive"))
	proj := filepath.Join(e.home, "code", "proj")
	os.MkdirAll(proj, 0o700)
	files := agentStores(t, e.home, proj)
	e.startDaemon()
	t.Chdir(proj)

	listAgents := func() map[string]listed {
		out, errs, code := e.cli("list", "--json")
		var rows []listed
		if code != 0 || json.Unmarshal([]byte(out), &rows) != nil {
			t.Fatalf("list --json = %d %s %s", code, out, errs)
		}
		got := map[string]listed{}
		for _, r := range rows {
			got[r.Source] = r
		}
		return got
	}
	rows := listAgents()
	for agent, prompt := range map[string]string{"claude": "hello claude", "codex": "hello codex", "gemini": "hello gemini", "llxprt": "hello llxprt"} {
		if r, ok := rows[agent]; !ok || r.FirstPrompt != prompt || r.Project != proj {
			t.Errorf("list in the project: %s row = %+v, want prompt %q", agent, r, prompt)
		}
	}
	out, _, _ := e.cli("list")
	if !strings.Contains(out, "AGENT") || strings.Count(out, "\n") != 5 {
		t.Errorf("list table:\n%s", out)
	}

	// An append to each agent's transcript reaches the catalog.
	later := time.Date(2026, 11, 2, 9, 0, 0, 0, time.UTC).Format(time.RFC3339)
	appendTo(t, files["claude"], fmt.Sprintf(`{"type":"assistant","uuid":"u2","sessionId":"c1a0de00-0000-4000-8000-000000000001","timestamp":%q,"cwd":%q,"message":{"role":"assistant","model":"m","content":[{"type":"text","text":"hi"}]}}`+"\n", later, proj))
	appendTo(t, files["codex"], fmt.Sprintf(`{"timestamp":%q,"type":"event_msg","payload":{"type":"agent_message","message":"hi"}}`+"\n", later))
	appendTo(t, files["gemini"], fmt.Sprintf(`{"id":"m2","timestamp":%q,"type":"gemini","content":"hi"}`+"\n", later))
	appendTo(t, files["llxprt"], fmt.Sprintf(`{"v":1,"seq":3,"ts":%q,"type":"content","payload":{"content":{"speaker":"ai","blocks":[{"type":"text","text":"hi"}]}}}`+"\n", later))
	waitFor(t, 10*time.Second, "every agent's append in the catalog", func() bool {
		rows := listAgents()
		for _, a := range []string{"claude", "codex", "gemini", "llxprt"} {
			if rows[a].MessageCount != 2 {
				return false
			}
		}
		return true
	})

	// Claude's native index: v1 schema, current.
	native := filepath.Join(filepath.Dir(files["claude"]), indexer.CatalogName)
	var idx struct {
		Version      int                      `json:"version"`
		OriginalPath string                   `json:"originalPath"`
		Entries      []map[string]interface{} `json:"entries"`
	}
	waitFor(t, 10*time.Second, "claude native index current", func() bool {
		data, err := os.ReadFile(native)
		return err == nil && json.Unmarshal(data, &idx) == nil && len(idx.Entries) == 1 && idx.Entries[0]["messageCount"] == float64(2)
	})
	fi, _ := os.Stat(files["claude"])
	en := idx.Entries[0]
	if idx.Version != 1 || idx.OriginalPath != proj || en["sessionId"] != "c1a0de00-0000-4000-8000-000000000001" || en["fullPath"] != files["claude"] ||
		en["fileMtime"] != float64(indexer.NodeMtimeMs(fi.ModTime().UnixNano())) || en["firstPrompt"] != "hello claude" || en["modified"] != "2026-11-02T09:00:00.000Z" ||
		en["gitBranch"] != "main" || en["projectPath"] != proj || en["isSidechain"] != false {
		t.Errorf("claude native index = %+v", idx)
	}
	for _, k := range []string{"sessionId", "fullPath", "fileMtime", "firstPrompt", "messageCount", "created", "modified", "gitBranch", "projectPath", "isSidechain"} {
		if _, ok := en[k]; !ok {
			t.Errorf("claude native entry lacks %q", k)
		}
	}

	// llxprt locks: a live one refuses delete (naming the pid), a stale one is
	// removed with the session.
	lock := filepath.Join(filepath.Dir(files["llxprt"]), "11000000-0000-4000-8000-000000000004.lock")
	writeLock := func(pid int) {
		os.WriteFile(lock, []byte(fmt.Sprintf(`{"pid":%d,"timestamp":%q,"sessionId":"11000000-0000-4000-8000-000000000004","ownerToken":"t"}`, pid, time.Now().UTC().Format(time.RFC3339))), 0o600)
	}
	writeLock(os.Getpid())
	_, errs, code := e.cli("delete", "11000000")
	if code != 1 || !strings.Contains(errs, fmt.Sprintf("pid %d", os.Getpid())) || !fileExists(files["llxprt"]) {
		t.Errorf("delete of a live-locked llxprt session = %d %q", code, errs)
	}
	dead := exec.Command("true")
	dead.Run()
	writeLock(dead.Process.Pid)
	if _, errs, code := e.cli("delete", "11000000", "--force"); code != 0 || fileExists(files["llxprt"]) || fileExists(lock) {
		t.Errorf("delete of a stale-locked llxprt session = %d %q (file left: %v, lock left: %v)", code, errs, fileExists(files["llxprt"]), fileExists(lock))
	}
	waitFor(t, 10*time.Second, "reindex --check clean", func() bool {
		_, _, code := e.cli("reindex", "--check")
		return code == 0
	})
}
