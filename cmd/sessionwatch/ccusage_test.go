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

	"github.com/sessionwatch/sessionwatch/cmd/sessionload/gen"
)

// TestCcusageDifferential runs ccusage's `daily --json --offline` and
// `sessionwatch usage daily --json` on the same Claude stores and compares the
// tokens per day and model. Opt-in: SESSIONWATCH_CCUSAGE names the directory
// ccusage was installed into (npm install --prefix DIR ccusage@20.0.24); node
// must be on PATH.
func TestCcusageDifferential(t *testing.T) {
	dir := os.Getenv("SESSIONWATCH_CCUSAGE")
	bin := filepath.Join(dir, "node_modules", ".bin", "ccusage")
	if dir == "" {
		t.Skip("SESSIONWATCH_CCUSAGE not set (npm install --prefix DIR ccusage@20.0.24)")
	}
	if _, err := exec.LookPath("node"); err != nil {
		t.Skip("node not on PATH")
	}
	if _, err := os.Stat(bin); err != nil {
		t.Skipf("no ccusage in %s: %v", dir, err)
	}
	t.Run("hand-made", func(t *testing.T) {
		e := newClaudeEnv(t)
		proj := filepath.Join(e.root, "-w-p")
		sid := "22222222-2222-4222-8222-222222222222"
		line := func(ts, id, req, model string, in, out, cw, cr int, extra string) string {
			s := `{"parentUuid":null,"isSidechain":false,"userType":"external","cwd":"/w/p","sessionId":"` + sid + `","version":"2.1.90","type":"assistant"` + extra
			if req != "" {
				s += `,"requestId":"` + req + `"`
			}
			s += `,"message":{"id":"` + id + `","type":"message","role":"assistant","model":"` + model + `","content":[{"type":"text","text":"x"}],"usage":{"input_tokens":` +
				fmt.Sprint(in) + `,"cache_creation_input_tokens":` + fmt.Sprint(cw) + `,"cache_read_input_tokens":` + fmt.Sprint(cr) + `,"output_tokens":` + fmt.Sprint(out) + `}},"uuid":"u-` + id + ts + `","timestamp":"` + ts + `"}` + "\n"
			return s
		}
		user := `{"type":"user","cwd":"/w/p","sessionId":"` + sid + `","timestamp":"2026-03-01T23:00:00.000Z","uuid":"u0","message":{"role":"user","content":"hi"}}` + "\n"
		body := user +
			// A streamed message: three copies, the last with the final output count.
			line("2026-03-01T23:10:00.000Z", "msg_a", "req_a", "claude-sonnet-4-5-20250929", 10, 1, 500, 2000, "") +
			line("2026-03-01T23:10:01.000Z", "msg_a", "req_a", "claude-sonnet-4-5-20250929", 10, 1, 500, 2000, "") +
			line("2026-03-01T23:10:02.000Z", "msg_a", "req_a", "claude-sonnet-4-5-20250929", 10, 250, 500, 2000, "") +
			// Another model, then a message streamed across midnight UTC.
			line("2026-03-01T23:40:00.000Z", "msg_b", "req_b", "claude-opus-4-5-20251101", 3, 40, 0, 100, "") +
			line("2026-03-01T23:59:59.000Z", "msg_c", "req_c", "claude-haiku-4-5-20251001", 7, 2, 0, 0, "") +
			line("2026-03-02T00:00:03.000Z", "msg_c", "req_c", "claude-haiku-4-5-20251001", 7, 90, 0, 0, "") +
			// A message without a requestId, written twice; one with a new request id.
			line("2026-03-02T01:00:00.000Z", "msg_d", "", "claude-sonnet-4-5-20250929", 5, 5, 0, 0, "") +
			line("2026-03-02T01:00:01.000Z", "msg_d", "", "claude-sonnet-4-5-20250929", 5, 5, 0, 0, "") +
			line("2026-03-02T02:00:00.000Z", "msg_a", "req_z", "claude-sonnet-4-5-20250929", 1, 1, 0, 0, "")
		os.MkdirAll(proj, 0o700)
		os.WriteFile(filepath.Join(proj, sid+".jsonl"), []byte(body), 0o600)
		compareCcusage(t, e, bin)
	})
	t.Run("generated", func(t *testing.T) {
		e := newClaudeEnv(t)
		st, err := gen.Plan(e.root, gen.Spec{Layout: "claude", Projects: 5, Sessions: 60, Lines: 40, Subagents: 0.2, Seed: 7})
		if err != nil {
			t.Fatal(err)
		}
		if err := st.Write(); err != nil {
			t.Fatal(err)
		}
		compareCcusage(t, e, bin)
	})
}

func newClaudeEnv(t *testing.T) *testEnv {
	e := newEnv(t)
	e.root = filepath.Join(e.home, ".claude", "projects")
	os.MkdirAll(e.root, 0o700)
	e.writeConfig(`{"state_dir":%q,"archive_dir":%q,"janitor":{"run_at_start":false,"schedule":"off"},
	 "sources":[{"name":"claude","layout":"claude","root":%q,"native_index":false}]}`, e.state, filepath.Join(e.home, "archive"), e.root)
	return e
}

type dayModel struct{ day, model string }

func compareCcusage(t *testing.T, e *testEnv, bin string) {
	t.Helper()
	cmd := exec.Command(bin, "daily", "--json", "--offline", "--breakdown", "--timezone", "UTC")
	cmd.Env = append(os.Environ(), "HOME="+e.home, "CLAUDE_CONFIG_DIR="+filepath.Dir(e.root))
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("ccusage: %v\n%s", err, out)
	}
	var cc struct {
		Daily []struct {
			Date      string `json:"period"`
			Breakdown []struct {
				Model      string `json:"modelName"`
				Input      int64  `json:"inputTokens"`
				Output     int64  `json:"outputTokens"`
				CacheWrite int64  `json:"cacheCreationTokens"`
				CacheRead  int64  `json:"cacheReadTokens"`
			} `json:"modelBreakdowns"`
		} `json:"daily"`
	}
	if err := json.Unmarshal(out, &cc); err != nil {
		t.Fatalf("ccusage output %q: %v", out, err)
	}
	want := map[dayModel][4]int64{}
	for _, d := range cc.Daily {
		for _, b := range d.Breakdown {
			want[dayModel{d.Date, b.Model}] = [4]int64{b.Input, b.Output, b.CacheWrite, b.CacheRead}
		}
	}
	compareWith(t, e, want, "ccusage")
}

// compareWith compares sessionwatch's daily report per day and model with want,
// what the other tool (named) reported, and logs the comparison.
func compareWith(t *testing.T, e *testEnv, want map[dayModel][4]int64, other string, args ...string) {
	t.Helper()
	sout, serr, code := e.cli(append([]string{"usage", "daily", "--all", "--by", "model", "--json", "--utc"}, args...)...)
	if code != 0 {
		t.Fatalf("sessionwatch usage = %d: %s", code, serr)
	}
	var sw struct {
		Rows []struct {
			Key        string `json:"key"`
			Model      string `json:"model"`
			Input      int64  `json:"inputTokens"`
			Output     int64  `json:"outputTokens"`
			CacheWrite int64  `json:"cacheWriteTokens"`
			CacheRead  int64  `json:"cacheReadTokens"`
		} `json:"rows"`
	}
	if err := json.Unmarshal([]byte(sout), &sw); err != nil {
		t.Fatal(err)
	}
	got := map[dayModel][4]int64{}
	for _, r := range sw.Rows {
		got[dayModel{r.Key, r.Model}] = [4]int64{r.Input, r.Output, r.CacheWrite, r.CacheRead}
	}
	var keys []dayModel
	for k := range want {
		keys = append(keys, k)
	}
	for k := range got {
		if _, ok := want[k]; !ok {
			keys = append(keys, k)
		}
	}
	sort.Slice(keys, func(i, j int) bool { return keys[i].day+keys[i].model < keys[j].day+keys[j].model })
	var report []string
	for _, k := range keys {
		mark := "equal"
		if got[k] != want[k] {
			mark = "DIFFERS"
			t.Errorf("%s %s: sessionwatch %v, %s %v (input, output, cache write, cache read)", k.day, k.model, got[k], other, want[k])
		}
		report = append(report, fmt.Sprintf("%s %-28s sessionwatch %v %s %v %s", k.day, k.model, got[k], other, want[k], mark))
	}
	t.Logf("%d day×model rows:\n%s", len(keys), strings.Join(report, "\n"))
}

// TestCcusageCodexDifferential runs @ccusage/codex's `daily --json --offline` and
// `sessionwatch usage daily --json --source codex` on the same Codex stores and
// compares the tokens per day and model. Opt-in like TestCcusageDifferential
// (npm install --prefix DIR @ccusage/codex).
func TestCcusageCodexDifferential(t *testing.T) {
	dir := os.Getenv("SESSIONWATCH_CCUSAGE")
	bin := filepath.Join(dir, "node_modules", ".bin", "ccusage-codex")
	if dir == "" {
		t.Skip("SESSIONWATCH_CCUSAGE not set (npm install --prefix DIR @ccusage/codex)")
	}
	if _, err := exec.LookPath("node"); err != nil {
		t.Skip("node not on PATH")
	}
	if _, err := os.Stat(bin); err != nil {
		t.Skipf("no ccusage-codex in %s: %v", dir, err)
	}
	t.Run("hand-made", func(t *testing.T) {
		e := newCodexEnv(t)
		ev := func(ts, typ string, payload string) string {
			return `{"timestamp":"` + ts + `","type":"` + typ + `","payload":` + payload + "}\n"
		}
		usage := func(in, cached, out, reasoning int) string {
			return fmt.Sprintf(`{"input_tokens":%d,"cached_input_tokens":%d,"output_tokens":%d,"reasoning_output_tokens":%d,"total_tokens":%d}`, in, cached, out, reasoning, in+out)
		}
		count := func(ts, info string) string {
			return ev(ts, "event_msg", `{"type":"token_count","info":`+info+`,"rate_limits":null}`)
		}
		meta := func(id string) string {
			return ev("2026-03-01T22:00:00.000Z", "session_meta", `{"id":"`+id+`","timestamp":"2026-03-01T22:00:00.000Z","cwd":"/w/p","originator":"codex_cli_rs","cli_version":"0.63.0"}`)
		}
		a := "019a0000-0000-7000-8000-00000000000a"
		bodyA := meta(a) +
			ev("2026-03-01T22:00:01.000Z", "turn_context", `{"cwd":"/w/p","model":"gpt-5-codex"}`) +
			// last_token_usage is what a turn used; total_token_usage runs on.
			count("2026-03-01T22:01:00.000Z", `{"total_token_usage":`+usage(1000, 200, 50, 10)+`,"last_token_usage":`+usage(1000, 200, 50, 10)+`}`) +
			count("2026-03-01T22:02:00.000Z", `{"total_token_usage":`+usage(3000, 1200, 80, 10)+`,"last_token_usage":`+usage(2000, 1000, 30, 0)+`}`) +
			// A repeat of the same totals with no last usage: nothing new.
			count("2026-03-01T22:02:01.000Z", `{"total_token_usage":`+usage(3000, 1200, 80, 10)+`}`) +
			// Another model from the next turn on; usage given only as a running total.
			ev("2026-03-01T23:00:00.000Z", "turn_context", `{"cwd":"/w/p","model":"gpt-5.1-codex-max"}`) +
			count("2026-03-01T23:59:59.000Z", `{"total_token_usage":`+usage(4000, 1500, 100, 20)+`}`) +
			// Across midnight UTC.
			count("2026-03-02T00:00:30.000Z", `{"total_token_usage":`+usage(4500, 1500, 130, 20)+`}`) +
			// An event naming its own model: it holds for the next event too.
			count("2026-03-02T00:10:00.000Z", `{"model":"o3","total_token_usage":`+usage(4600, 1500, 140, 20)+`,"last_token_usage":`+usage(100, 0, 10, 0)+`}`) +
			count("2026-03-02T00:11:00.000Z", `{"last_token_usage":`+usage(7, 0, 1, 0)+`}`) +
			// More cached than input: cached is capped at the input.
			count("2026-03-02T00:12:00.000Z", `{"last_token_usage":`+usage(5, 9, 1, 0)+`}`) +
			// All zeros: skipped; no info: skipped.
			count("2026-03-02T00:13:00.000Z", `{"last_token_usage":`+usage(0, 0, 0, 0)+`}`) +
			ev("2026-03-02T00:14:00.000Z", "event_msg", `{"type":"token_count","info":null}`)
		b := "019a0000-0000-7000-8000-00000000000b"
		// No turn_context at all (an old session): the fallback model; a running
		// total that goes down counts nothing.
		bodyB := meta(b) +
			count("2026-03-01T10:00:00.000Z", `{"total_token_usage":`+usage(100, 0, 10, 0)+`}`) +
			count("2026-03-01T10:05:00.000Z", `{"total_token_usage":`+usage(50, 0, 5, 0)+`}`) +
			count("2026-03-01T10:06:00.000Z", `{"total_token_usage":`+usage(80, 0, 9, 0)+`}`)
		day := filepath.Join(e.root, "2026", "03", "01")
		os.MkdirAll(day, 0o700)
		os.WriteFile(filepath.Join(day, "rollout-2026-03-01T22-00-00-"+a+".jsonl"), []byte(bodyA), 0o600)
		os.WriteFile(filepath.Join(day, "rollout-2026-03-01T10-00-00-"+b+".jsonl"), []byte(bodyB), 0o600)
		compareCcusageCodex(t, e, bin)
	})
	t.Run("generated", func(t *testing.T) {
		e := newCodexEnv(t)
		st, err := gen.Plan(e.root, gen.Spec{Layout: "codex", Projects: 5, Sessions: 60, Lines: 40, Subagents: 0.2, Seed: 7})
		if err != nil {
			t.Fatal(err)
		}
		if err := st.Write(); err != nil {
			t.Fatal(err)
		}
		compareCcusageCodex(t, e, bin)
	})
}

func newCodexEnv(t *testing.T) *testEnv {
	e := newEnv(t)
	e.root = filepath.Join(e.home, ".codex", "sessions")
	os.MkdirAll(e.root, 0o700)
	e.writeConfig(`{"state_dir":%q,"archive_dir":%q,"janitor":{"run_at_start":false,"schedule":"off"},
	 "sources":[{"name":"codex","layout":"codex","root":%q}]}`, e.state, filepath.Join(e.home, "archive"), e.root)
	return e
}

func compareCcusageCodex(t *testing.T, e *testEnv, bin string) {
	t.Helper()
	cmd := exec.Command(bin, "daily", "--json", "--offline", "--timezone", "UTC")
	cmd.Env = append(os.Environ(), "HOME="+e.home, "CODEX_HOME="+filepath.Dir(e.root))
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("ccusage-codex: %v\n%s", err, out)
	}
	var cc struct {
		Daily []struct {
			Date   string `json:"date"`
			Models map[string]struct {
				Input  int64 `json:"inputTokens"` // cached included
				Cached int64 `json:"cachedInputTokens"`
				Output int64 `json:"outputTokens"`
			} `json:"models"`
		} `json:"daily"`
	}
	if err := json.Unmarshal(out, &cc); err != nil {
		t.Fatalf("ccusage-codex output %q: %v", out, err)
	}
	want := map[dayModel][4]int64{}
	for _, d := range cc.Daily {
		day, err := time.Parse("Jan 02, 2006", d.Date)
		if err != nil {
			t.Fatalf("ccusage-codex date %q: %v", d.Date, err)
		}
		for m, u := range d.Models {
			want[dayModel{day.Format(time.DateOnly), m}] = [4]int64{u.Input - u.Cached, u.Output, 0, u.Cached}
		}
	}
	compareWith(t, e, want, "ccusage-codex", "--source", "codex")
}
