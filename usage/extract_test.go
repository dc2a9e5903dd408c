package usage

import (
	"strconv"
	"strings"
	"testing"
	"time"
)

func ms(s string) int64 {
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		panic(err)
	}
	return t.UnixMilli()
}

func claudeLine(ts, id, req, model string, in, out, cw, cr int, extra string) string {
	b := `{"type":"assistant","timestamp":"` + ts + `","sessionId":"s1","version":"2.1.90"`
	if req != "" {
		b += `,"requestId":"` + req + `"`
	}
	b += extra + `,"message":{`
	if id != "" {
		b += `"id":"` + id + `",`
	}
	b += `"model":"` + model + `","role":"assistant","usage":{"input_tokens":` + itoa(in) + `,"output_tokens":` + itoa(out) +
		`,"cache_creation_input_tokens":` + itoa(cw) + `,"cache_read_input_tokens":` + itoa(cr) + `}}}`
	return b
}

func itoa(n int) string { return strconv.Itoa(n) }

func TestParseLine(t *testing.T) {
	tests := []struct {
		name   string
		layout string
		line   string
		want   Event
		ok     bool
	}{
		{"claude assistant", "claude", claudeLine("2026-03-01T10:00:00.000Z", "msg_1", "req_1", "claude-sonnet-4-5", 10, 20, 30, 40, ""),
			Event{At: ms("2026-03-01T10:00:00Z"), Model: "claude-sonnet-4-5", T: Tokens{10, 20, 30, 40}, Dedupe: DedupeClaude, ID: "msg_1", Req: "req_1", HasReq: true}, true},
		{"claude without ids", "claude", claudeLine("2026-03-01T10:00:00Z", "", "", "m", 1, 2, 0, 0, ""),
			Event{At: ms("2026-03-01T10:00:00Z"), Model: "m", T: Tokens{1, 2, 0, 0}}, true},
		{"claude sidechain", "claude", claudeLine("2026-03-01T10:00:00Z", "msg_1", "r", "m", 1, 2, 0, 0, `,"isSidechain":true`),
			Event{At: ms("2026-03-01T10:00:00Z"), Model: "m", T: Tokens{1, 2, 0, 0}, Dedupe: DedupeClaude, ID: "msg_1", Req: "r", HasReq: true, Sidechain: true}, true},
		{"claude fast", "claude", strings.Replace(claudeLine("2026-03-01T10:00:00Z", "", "", "m", 1, 2, 0, 0, ""), `"usage":{`, `"usage":{"speed":"fast",`, 1),
			Event{At: ms("2026-03-01T10:00:00Z"), Model: "m-fast", T: Tokens{1, 2, 0, 0}}, true},
		{"claude cache split", "claude", strings.Replace(claudeLine("2026-03-01T10:00:00Z", "", "", "m", 1, 2, 99, 0, ""), `"usage":{`, `"usage":{"cache_creation":{"ephemeral_5m_input_tokens":3,"ephemeral_1h_input_tokens":4},`, 1),
			Event{At: ms("2026-03-01T10:00:00Z"), Model: "m", T: Tokens{1, 2, 7, 0}}, true},
		{"claude empty request id", "claude", claudeLine("2026-03-01T10:00:00Z", "msg_1", "", "m", 1, 2, 0, 0, `,"requestId":""`), Event{}, false},
		{"claude null model anywhere", "claude", claudeLine("2026-03-01T10:00:00Z", "msg_1", "r", "m", 1, 2, 0, 0, `,"x":{"model":null}`), Event{}, false},
		{"claude bad version", "claude", strings.Replace(claudeLine("2026-03-01T10:00:00Z", "", "", "m", 1, 2, 0, 0, ""), `"2.1.90"`, `"dev"`, 1), Event{}, false},
		{"claude fractional tokens", "claude", strings.Replace(claudeLine("2026-03-01T10:00:00Z", "", "", "m", 1, 2, 0, 0, ""), `"input_tokens":1`, `"input_tokens":1.5`, 1), Event{}, false},
		{"claude spaced usage is not read", "claude", strings.Replace(claudeLine("2026-03-01T10:00:00Z", "", "", "m", 1, 2, 0, 0, ""), `"usage":{`, `"usage": {`, 1), Event{}, false},
		{"claude user line", "claude", `{"type":"user","timestamp":"2026-03-01T10:00:00Z","message":{"role":"user","content":"hi"}}`, Event{}, false},
		{"claude progress line", "claude", `{"type":"progress","data":{"message":{"timestamp":"2026-03-01T10:00:00Z","requestId":"r9","message":{"id":"m9","model":"m","usage":{"input_tokens":5,"output_tokens":6}}}}}`,
			Event{At: ms("2026-03-01T10:00:00Z"), Model: "m", T: Tokens{5, 6, 0, 0}, Dedupe: DedupeClaude, ID: "m9", Req: "r9", HasReq: true}, true},
		{"codex last usage", "codex", `{"timestamp":"2026-03-01T10:00:00.000Z","type":"event_msg","payload":{"type":"token_count","info":{"total_token_usage":{"input_tokens":100,"cached_input_tokens":40,"output_tokens":7,"reasoning_output_tokens":3,"total_tokens":107},"last_token_usage":{"input_tokens":100,"cached_input_tokens":40,"output_tokens":7,"reasoning_output_tokens":3,"total_tokens":107}}}}`,
			Event{At: ms("2026-03-01T10:00:00Z"), Model: CodexFallbackModel, T: Tokens{Input: 60, Output: 7, CacheRead: 40}}, true},
		{"codex rate limits only", "codex", `{"timestamp":"2026-03-01T10:00:00.000Z","type":"event_msg","payload":{"type":"token_count","info":null,"rate_limits":{}}}`, Event{}, false},
		{"gemini message", "gemini", `{"id":"g1","timestamp":"2026-03-01T10:00:00Z","type":"gemini","content":"x","tokens":{"input":100,"output":10,"cached":30,"thoughts":5,"tool":2,"total":117},"model":"gemini-2.5-pro"}`,
			Event{At: ms("2026-03-01T10:00:00Z"), Model: "gemini-2.5-pro", T: Tokens{Input: 72, Output: 15, CacheRead: 30}, Dedupe: DedupeLast, ID: "g1"}, true},
		{"gemini user", "gemini", `{"id":"u1","timestamp":"2026-03-01T10:00:00Z","type":"user","content":"tokens"}`, Event{}, false},
		{"llxprt ai content", "llxprt", `{"v":1,"seq":3,"ts":"2026-03-01T10:00:00Z","type":"content","payload":{"content":{"speaker":"ai","blocks":[],"metadata":{"model":"claude-sonnet-4-5","usage":{"promptTokens":100,"completionTokens":9,"cachedTokens":20,"totalTokens":109}}}}}`,
			Event{At: ms("2026-03-01T10:00:00Z"), Model: "claude-sonnet-4-5", T: Tokens{Input: 80, Output: 9, CacheRead: 20}}, true},
		{"wave assistant", "wave", `{"timestamp":"2026-03-01T10:00:00Z","id":"w1","role":"assistant","blocks":[],"usage":{"prompt_tokens":100,"completion_tokens":8,"total_tokens":108,"model":"glm-5","cache_read_input_tokens":50,"cache_creation_input_tokens":10}}`,
			Event{At: ms("2026-03-01T10:00:00Z"), Model: "glm-5", T: Tokens{Input: 40, Output: 8, CacheRead: 50, CacheWrite: 10}}, true},
		{"wave user", "wave", `{"timestamp":"2026-03-01T10:00:00Z","id":"w1","role":"user","blocks":[],"usage":{"prompt_tokens":1}}`, Event{}, false},
		{"not json", "claude", `{"usage":{ broken`, Event{}, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var st ParseState
			got, ok := ParseLine(tc.layout, &st, []byte(tc.line))
			if ok != tc.ok || got != tc.want {
				t.Errorf("ParseLine(%s, %q) = %+v, %v, want %+v, %v", tc.layout, tc.line, got, ok, tc.want, tc.ok)
			}
		})
	}
}

func TestCodexStateAcrossLines(t *testing.T) {
	var st ParseState
	lines := []string{
		`{"timestamp":"2026-03-01T10:00:00Z","type":"turn_context","payload":{"cwd":"/p","model":"gpt-5-codex"}}`,
		// Totals only: the first counts whole, the second its increase.
		`{"timestamp":"2026-03-01T10:00:01Z","type":"event_msg","payload":{"type":"token_count","info":{"total_token_usage":{"input_tokens":100,"cached_input_tokens":10,"output_tokens":5,"total_tokens":105}}}}`,
		`{"timestamp":"2026-03-01T10:00:02Z","type":"event_msg","payload":{"type":"token_count","info":{"total_token_usage":{"input_tokens":250,"cached_input_tokens":110,"output_tokens":8,"total_tokens":258}}}}`,
		// The same totals again (a repeated event): nothing new.
		`{"timestamp":"2026-03-01T10:00:03Z","type":"event_msg","payload":{"type":"token_count","info":{"total_token_usage":{"input_tokens":250,"cached_input_tokens":110,"output_tokens":8,"total_tokens":258}}}}`,
	}
	var got []Event
	for _, l := range lines {
		if ev, ok := ParseLine("codex", &st, []byte(l)); ok {
			got = append(got, ev)
		}
	}
	want := []Event{
		{At: ms("2026-03-01T10:00:01Z"), Model: "gpt-5-codex", T: Tokens{Input: 90, Output: 5, CacheRead: 10}},
		{At: ms("2026-03-01T10:00:02Z"), Model: "gpt-5-codex", T: Tokens{Input: 50, Output: 3, CacheRead: 100}},
	}
	if len(got) != len(want) {
		t.Fatalf("codex events = %+v, want %+v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("codex event %d = %+v, want %+v", i, got[i], want[i])
		}
	}
}

func TestMogziTotals(t *testing.T) {
	doc := `{"id":"x","usageMetrics":{"inputTokens":10,"outputTokens":20,"cacheReadTokens":3,"cacheWriteTokens":4,"requestCount":2,"lastUpdated":"2026-03-01T10:00:00.1234567"}}`
	tok, at, ok := MogziTotals([]byte(doc))
	if !ok || tok != (Tokens{10, 20, 4, 3}) || at != ms("2026-03-01T10:00:00.123Z") {
		t.Errorf("MogziTotals = %+v, %d, %v", tok, at, ok)
	}
	if _, _, ok := MogziTotals([]byte(`{"id":"x"}`)); ok {
		t.Errorf("MogziTotals without usageMetrics: ok")
	}
}

// feed counts the lines of one unit and returns its account.
func feed(layout string, lines ...string) *account {
	a := &account{}
	var st ParseState
	for _, l := range lines {
		if ev, ok := ParseLine(layout, &st, []byte(l)); ok {
			a.add(ev, func(s string) string { return s }, nil)
		}
	}
	return a
}

func TestClaudeDedupe(t *testing.T) {
	const day1, day2 = "2026-03-01T23:59:59.000Z", "2026-03-02T00:00:01.000Z"
	tests := []struct {
		name  string
		lines []string
		want  []Bucket
	}{
		{"streamed copies count once, the largest", []string{
			claudeLine(day1, "m1", "r1", "opus", 10, 1, 0, 5, ""),
			claudeLine(day1, "m1", "r1", "opus", 10, 1, 0, 5, ""),
			claudeLine(day1, "m1", "r1", "opus", 10, 30, 0, 5, ""),
		}, []Bucket{{Quarter(ms(day1)), "opus", Tokens{10, 30, 0, 5}}}},
		{"the larger copy after midnight moves the message", []string{
			claudeLine(day1, "m1", "r1", "opus", 10, 1, 0, 0, ""),
			claudeLine(day2, "m1", "r1", "opus", 10, 9, 0, 0, ""),
		}, []Bucket{{Quarter(ms(day2)), "opus", Tokens{10, 9, 0, 0}}}},
		{"no message id: every line counts", []string{
			claudeLine(day1, "", "r1", "opus", 1, 1, 0, 0, ""),
			claudeLine(day1, "", "r1", "opus", 1, 1, 0, 0, ""),
		}, []Bucket{{Quarter(ms(day1)), "opus", Tokens{2, 2, 0, 0}}}},
		{"no request id: every line counts (as ccusage 20.0.24)", []string{
			claudeLine(day1, "m1", "", "opus", 1, 1, 0, 0, ""),
			claudeLine(day1, "m1", "", "opus", 1, 1, 0, 0, ""),
		}, []Bucket{{Quarter(ms(day1)), "opus", Tokens{2, 2, 0, 0}}}},
		{"another request id is another call", []string{
			claudeLine(day1, "m1", "r1", "opus", 1, 1, 0, 0, ""),
			claudeLine(day1, "m1", "r2", "opus", 1, 1, 0, 0, ""),
		}, []Bucket{{Quarter(ms(day1)), "opus", Tokens{2, 2, 0, 0}}}},
		{"a sidechain replay with a new request id is the parent's message", []string{
			claudeLine(day1, "m1", "r1", "opus", 1, 1, 0, 0, ""),
			claudeLine(day1, "m1", "r9", "opus", 7, 7, 0, 0, `,"isSidechain":true`),
		}, []Bucket{{Quarter(ms(day1)), "opus", Tokens{1, 1, 0, 0}}}},
		{"a main copy replaces a sidechain one", []string{
			claudeLine(day1, "m1", "r9", "opus", 7, 7, 0, 0, `,"isSidechain":true`),
			claudeLine(day1, "m1", "r1", "sonnet", 1, 1, 0, 0, ""),
		}, []Bucket{{Quarter(ms(day1)), "sonnet", Tokens{1, 1, 0, 0}}}},
		{"several models", []string{
			claudeLine(day1, "m1", "r1", "opus", 1, 1, 0, 0, ""),
			claudeLine(day1, "m2", "r2", "haiku", 2, 2, 0, 0, ""),
		}, []Bucket{{Quarter(ms(day1)), "haiku", Tokens{2, 2, 0, 0}}, {Quarter(ms(day1)), "opus", Tokens{1, 1, 0, 0}}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			a := feed("claude", tc.lines...)
			if len(a.Buckets) != len(tc.want) {
				t.Fatalf("buckets = %+v, want %+v", a.Buckets, tc.want)
			}
			for i := range tc.want {
				if a.Buckets[i] != tc.want[i] {
					t.Errorf("bucket %d = %+v, want %+v", i, a.Buckets[i], tc.want[i])
				}
			}
		})
	}
}

func TestQuarter(t *testing.T) {
	for _, tc := range []struct {
		at   int64
		want int32
	}{{0, 0}, {QuarterMillis - 1, 0}, {QuarterMillis, 1}, {-1, -1}, {-QuarterMillis, -1}, {-QuarterMillis - 1, -2}} {
		if got := Quarter(tc.at); got != tc.want {
			t.Errorf("Quarter(%d) = %d, want %d", tc.at, got, tc.want)
		}
	}
}
