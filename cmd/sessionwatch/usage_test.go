package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sessionwatch/sessionwatch/usage"
)

func waveAssistant(ts, model string, prompt, completion int) string {
	return `{"timestamp":"` + ts + `","id":"a","role":"assistant","blocks":[{"type":"text","content":"ok"}],"usage":{"prompt_tokens":` +
		itoa(prompt) + `,"completion_tokens":` + itoa(completion) + `,"total_tokens":1,"model":"` + model + `"}}` + "\n"
}

func itoa(n int) string { b, _ := json.Marshal(n); return string(b) }

func TestUsageCommand(t *testing.T) {
	e := newEnv(t)
	dir := e.project("/w/p")
	file := filepath.Join(dir, "11111111-1111-4111-8111-111111111111.jsonl")
	appendTo(t, file, header("/w/p")+waveAssistant("2026-03-01T10:00:00Z", "claude-sonnet-4-5", 1_000_000, 1_000_000)+
		waveAssistant("2026-03-02T10:00:00Z", `mystery\u001b[31m`, 10, 20))

	out, errOut, code := e.cli("usage", "daily", "--all", "--json", "--utc")
	if code != 0 {
		t.Fatalf("usage daily = %d, stderr %q", code, errOut)
	}
	var rep struct {
		Rows []struct {
			Key   string   `json:"key"`
			Total int64    `json:"totalTokens"`
			Cost  *float64 `json:"cost"`
		} `json:"rows"`
		Totals struct {
			Total int64 `json:"totalTokens"`
		} `json:"totals"`
		Unpriced []string `json:"unpricedModels"`
	}
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("usage --json printed %q: %v", out, err)
	}
	if len(rep.Rows) != 2 || rep.Rows[0].Key != "2026-03-01" || rep.Rows[0].Total != 2_000_000 || rep.Rows[0].Cost == nil || *rep.Rows[0].Cost != 18 {
		t.Fatalf("rows %+v, want 2026-03-01 with 2M tokens costing $18", rep.Rows)
	}
	if rep.Rows[1].Cost != nil || len(rep.Unpriced) != 1 || rep.Totals.Total != 2_000_030 {
		t.Errorf("an unpriced model: rows %+v, unpriced %v, totals %+v", rep.Rows, rep.Unpriced, rep.Totals)
	}

	out, errOut, code = e.cli("usage", "daily", "--all", "--by", "model", "--utc")
	if code != 0 || !strings.Contains(out, "$18.00") || !strings.Contains(out, "?") || strings.Contains(out, "\x1b") {
		t.Errorf("usage table (code %d):\n%s\nstderr %q; want $18.00, ? and no raw escape", code, out, errOut)
	}
	if !strings.Contains(errOut, "prices.") {
		t.Errorf("no hint naming the prices config key: %q", errOut)
	}

	// Another project's usage is not this directory's.
	wd, _ := os.Getwd()
	t.Cleanup(func() { os.Chdir(wd) })
	os.Chdir(t.TempDir())
	if out, errOut, code := e.cli("usage"); code != 0 || out != "" || !strings.Contains(errOut, "No usage") {
		t.Errorf("usage elsewhere = %d %q %q, want nothing for this project", code, out, errOut)
	}

	out, _, code = e.cli("usage", "--statusline", "--session", "11111111-1111-4111-8111-111111111111")
	if code != 0 || !strings.Contains(out, "session ? · 2.0M tok") {
		t.Errorf("statusline = %d %q", code, out)
	}
	usageStdin = strings.NewReader(`{"session_id":"11111111-1111-4111-8111-111111111111","model":{"id":"x"}}`)
	t.Cleanup(func() { usageStdin = os.Stdin })
	if out, _, _ := e.cli("usage", "--statusline"); !strings.Contains(out, "session ? · 2.0M tok") {
		t.Errorf("statusline from stdin JSON = %q", out)
	}

	// Flags the mode would ignore are usage errors, not silently dropped.
	for _, args := range [][]string{{"--session", "x"}, {"session", "--session", "x"}, {"--statusline", "--json"},
		{"--statusline", "--all"}, {"--statusline", "weekly"}, {"--statusline", "--by", "model"}} {
		if out, errOut, code := e.cli(append([]string{"usage"}, args...)...); code != 2 || out != "" || !strings.HasPrefix(errOut, "sessionwatch: usage: --s") {
			t.Errorf("usage %q = %d %q %q; want exit 2 and nothing on stdout", args, code, out, errOut)
		}
	}

	if out, errOut, code := e.cli("reindex", "--check"); code != 0 {
		t.Errorf("reindex --check = %d\n%s%s", code, out, errOut)
	}
	// The ledger tampered with: reindex --check says so.
	shards, _ := filepath.Glob(filepath.Join(e.state, "usage", usage.UnitsName))
	for _, p := range shards {
		data, _ := os.ReadFile(p)
		os.WriteFile(p, []byte(strings.ReplaceAll(string(data), "1000000,", "1000001,")), 0o600)
	}
	if out, _, code := e.cli("reindex", "--check"); code != 1 || !strings.Contains(out, "usage of") {
		t.Errorf("reindex --check of a tampered ledger = %d %q, want 1 naming the usage", code, out)
	}
}

// Without a daemon, `usage` runs an index pass only when something under a root
// changed since its last pass (the stamp); an append, a new session and a new
// project are each seen.
func TestUsageSkipsPassWhileNothingChanged(t *testing.T) {
	e, file := usageStore(t)
	total := func() int64 { return usageTotal(t, e) }
	if got := total(); got != 101 {
		t.Fatalf("total %d, want 101", got)
	}
	total() // a second pass settles what the first wrote into the store (native indexes)
	// Nothing changed: a third look (the stat-only refresh of every command
	// without a daemon) rewrites nothing in the state dir.
	before := stateFiles(t, e.state)
	if got := total(); got != 101 {
		t.Errorf("total %d with nothing changed, want 101", got)
	}
	if after := stateFiles(t, e.state); after != before {
		t.Errorf("usage with nothing changed rewrote the state dir:\nbefore %s\nafter  %s", before, after)
	}
	appendTo(t, file, waveAssistant("2026-03-01T11:00:00Z", "claude-sonnet-4-5", 10, 0))
	if got := total(); got != 111 {
		t.Errorf("after an append the total is %d, want 111", got)
	}
	appendTo(t, filepath.Join(filepath.Dir(file), "22222222-2222-4222-8222-222222222222.jsonl"), header("/w/p")+waveAssistant("2026-03-01T12:00:00Z", "claude-sonnet-4-5", 5, 0))
	if got := total(); got != 116 {
		t.Errorf("after a new session the total is %d, want 116", got)
	}
	other := e.project("/w/q")
	appendTo(t, filepath.Join(other, "33333333-3333-4333-8333-333333333333.jsonl"), header("/w/q")+waveAssistant("2026-03-01T12:00:00Z", "claude-sonnet-4-5", 4, 0))
	if got := total(); got != 120 {
		t.Errorf("after a new project the total is %d, want 120", got)
	}
}

// stateFiles describes every file of the state dir by name, size and mtime, but
// the writer lock (taken, and stamped, by every refresh).
func stateFiles(t *testing.T, state string) string {
	t.Helper()
	var b strings.Builder
	filepath.WalkDir(state, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() || d.Name() == "writer.lock" {
			return nil
		}
		if fi, err := d.Info(); err == nil {
			fmt.Fprintf(&b, "%s %d %d; ", strings.TrimPrefix(p, state), fi.Size(), fi.ModTime().UnixNano())
		}
		return nil
	})
	return b.String()
}

// usageTotal is the total tokens of `usage daily --all --json --utc`.
func usageTotal(t *testing.T, e *testEnv) int64 {
	t.Helper()
	out, errOut, code := e.cli("usage", "daily", "--all", "--json", "--utc")
	if code != 0 {
		t.Fatalf("usage = %d: %s", code, errOut)
	}
	var rep struct {
		Totals struct {
			Total int64 `json:"totalTokens"`
		} `json:"totals"`
	}
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatal(err)
	}
	return rep.Totals.Total
}

// usageStore is a Wave project with one session of 101 tokens.
func usageStore(t *testing.T) (*testEnv, string) {
	t.Helper()
	e := newEnv(t)
	file := filepath.Join(e.project("/w/p"), "11111111-1111-4111-8111-111111111111.jsonl")
	appendTo(t, file, header("/w/p")+waveAssistant("2026-03-01T10:00:00Z", "claude-sonnet-4-5", 100, 1))
	return e, file
}

// TestUsageSessionAndProjectReports: `usage session` has a row per session,
// `usage project` a row per project (split by model with --by model); without
// --all only the current directory's project is counted; --since and --until
// bound both.
func TestUsageSessionAndProjectReports(t *testing.T) {
	e := newEnv(t)
	work := filepath.Join(e.home, "work")
	os.MkdirAll(work, 0o700)
	const s1, s2, s3 = "11111111-1111-4111-8111-111111111111", "22222222-2222-4222-8222-222222222222", "33333333-3333-4333-8333-333333333333"
	appendTo(t, filepath.Join(e.project(work), s1+".jsonl"), header(work)+
		waveAssistant("2026-03-01T10:00:00Z", "claude-sonnet-4-5", 100, 1)+waveAssistant("2026-03-02T10:00:00Z", "gpt-5", 200, 2))
	appendTo(t, filepath.Join(e.project(work), s2+".jsonl"), header(work)+waveAssistant("2026-03-05T10:00:00Z", "claude-sonnet-4-5", 1000, 10))
	appendTo(t, filepath.Join(e.project("/w/other"), s3+".jsonl"), header("/w/other")+waveAssistant("2026-03-03T10:00:00Z", "gpt-5", 5000, 50))
	t.Chdir(work)
	report := func(args ...string) map[string]int64 {
		t.Helper()
		out, errOut, code := e.cli(append([]string{"usage"}, append(args, "--json", "--utc")...)...)
		var rep usage.Report
		if code != 0 || json.Unmarshal([]byte(out), &rep) != nil {
			t.Fatalf("usage %v = %d\n%s%s", args, code, out, errOut)
		}
		got := map[string]int64{}
		for _, r := range rep.Rows {
			k := r.Key
			if r.Model != "" {
				k += " " + r.Model
			}
			got[k] += r.Total
		}
		return got
	}
	for _, c := range []struct {
		args []string
		want map[string]int64
	}{
		{[]string{"session", "--all"}, map[string]int64{s1: 303, s2: 1010, s3: 5050}},
		{[]string{"session"}, map[string]int64{s1: 303, s2: 1010}},
		{[]string{"session", "--all", "--since", "2026-03-03"}, map[string]int64{s2: 1010, s3: 5050}},
		{[]string{"project", "--all"}, map[string]int64{work: 1313, "/w/other": 5050}},
		{[]string{"project"}, map[string]int64{work: 1313}},
		{[]string{"project", "--all", "--until", "2026-03-01"}, map[string]int64{work: 101}},
		{[]string{"project", "--all", "--by", "model"}, map[string]int64{work + " claude-sonnet-4-5": 1111, work + " gpt-5": 202, "/w/other gpt-5": 5050}},
	} {
		if got := report(c.args...); fmt.Sprint(got) != fmt.Sprint(c.want) {
			t.Errorf("usage %v: rows %v, want %v", c.args, got, c.want)
		}
	}
}
