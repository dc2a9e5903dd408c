package main

import (
	"encoding/json"
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
