package usage

import (
	"reflect"
	"testing"

	"github.com/sessionwatch/sessionwatch/indexer"
)

// fuzzLine checks what must hold for any line of a layout: no panic, no negative
// count, a line counted twice in a row changes nothing when it carries an id,
// and the line read from its scan (ParseLineMembers, as a cold pass reads it)
// gives what ParseLine gives.
func fuzzLine(f *testing.F, layout string, seeds ...string) {
	for _, s := range seeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, line []byte) {
		prev := [5]int64{1, 2, 3, 4, 5}
		st := ParseState{Model: "before", Prev: &prev}
		ev, ok := ParseLine(layout, &st, line)
		var m indexer.Members
		m.Scan(line)
		prev2 := prev
		st2 := ParseState{Model: "before", Prev: &prev2}
		ev2, ok2 := ParseLineMembers(layout, &st2, &m)
		if ok2 != ok || !reflect.DeepEqual(ev2, ev) || !reflect.DeepEqual(st2, st) {
			t.Fatalf("ParseLineMembers(%s, %q) = %+v, %v, state %+v; ParseLine %+v, %v, state %+v", layout, line, ev2, ok2, st2, ev, ok, st)
		}
		if !ok {
			return
		}
		if ev.T.Input < 0 || ev.T.Output < 0 || ev.T.CacheWrite < 0 || ev.T.CacheRead < 0 {
			t.Fatalf("ParseLine(%s, %q) = %+v: a negative count", layout, line, ev)
		}
		a := &account{}
		id := func(s string) string { return s }
		a.add(ev, id, nil)
		once := append([]Bucket(nil), a.Buckets...)
		if ev.Dedupe != DedupeNone {
			a.add(ev, id, nil)
			if len(a.Buckets) != len(once) || (len(once) > 0 && a.Buckets[0] != once[0]) {
				t.Fatalf("the same line twice counted %+v, once %+v", a.Buckets, once)
			}
		}
		if got := a.total(); got != ev.T {
			t.Fatalf("account total %+v, want the event's %+v", got, ev.T)
		}
	})
}

func FuzzClaudeLine(f *testing.F) {
	fuzzLine(f, "claude",
		claudeLine("2026-03-01T10:00:00.000Z", "msg_1", "req_1", "claude-sonnet-4-5", 10, 20, 30, 40, ""),
		claudeLine("2026-03-01T10:00:00Z", "", "", "m", 1, 2, 0, 0, `,"isSidechain":true`),
		`{"type":"progress","data":{"message":{"timestamp":"2026-03-01T10:00:00Z","requestId":"r9","message":{"id":"m9","model":"m","usage":{"input_tokens":5,"output_tokens":6}}}}}`,
		`{"timestamp":"2026-03-01T10:00:00Z","message":{"usage":{"input_tokens":1,"output_tokens":2,"cache_creation":{"ephemeral_5m_input_tokens":3}}},"x":":null"}`)
}

func FuzzCodexLine(f *testing.F) {
	fuzzLine(f, "codex",
		`{"timestamp":"2026-03-01T10:00:00.000Z","type":"event_msg","payload":{"type":"token_count","info":{"total_token_usage":{"input_tokens":100,"cached_input_tokens":40,"output_tokens":7,"total_tokens":107},"last_token_usage":{"input_tokens":100,"cached_input_tokens":400,"output_tokens":7}}}}`,
		`{"timestamp":"2026-03-01T10:00:00Z","type":"turn_context","payload":{"model":"gpt-5"}}`,
		`{"timestamp":"2026-03-01T10:00:00Z","type":"event_msg","payload":{"type":"token_count","info":{"total_token_usage":{"input_tokens":-5}}}}`,
		// The type spelled with an escape: read only when the text is elsewhere.
		`{"timestamp":"2026-03-01T10:00:00Z","type":"turn\u005fcontext","payload":{"model":"gpt-5"}}`,
		`{"timestamp":"2026-03-01T10:00:00Z","type":"turn\u005fcontext","payload":{"model":"gpt-5","x":"turn_context"}}`,
		`{"timestamp":"2026-03-01T10:00:00Z","type":"turn\u005fcontext","payload":{"model":"gpt-5","x":["turn_context"]}}`,
		`{"timestamp":"2026-03-01T10:00:00Z","type":"event_msg","payload":{"type":"token\u005fcount","info":{"last_token_usage":{"input_tokens":5}}}}`,
		`{"timestamp":"2026-03-01T10:00:00Z","type":"event_msg","payload":{"type":"token\u005fcount","info":{"last_token_usage":{"input_tokens":5}},"k":"token_count"}}`)
}

func FuzzGeminiLine(f *testing.F) {
	fuzzLine(f, "gemini",
		`{"id":"g1","timestamp":"2026-03-01T10:00:00Z","type":"gemini","content":"x","tokens":{"input":100,"output":10,"cached":300,"thoughts":5,"tool":2},"model":"gemini-2.5-pro"}`,
		`{"$set":{"lastUpdated":"2026-03-01T10:00:00Z"}}`,
		// The key spelled with an escape: read only when the text is elsewhere.
		`{"id":"g1","timestamp":"2026-03-01T10:00:00Z","type":"gemini","t\u006fkens":{"input":100,"output":10}}`,
		`{"id":"g1","timestamp":"2026-03-01T10:00:00Z","type":"gemini","t\u006fkens":{"input":100,"output":10},"x":"tokens"}`,
		`{"id":"g1","timestamp":"2026-03-01T10:00:00Z","type":"gemini","t\u006fkens":{"input":100,"output":10},"x":["tokens"]}`)
}

func FuzzLlxprtLine(f *testing.F) {
	fuzzLine(f, "llxprt",
		`{"v":1,"seq":3,"ts":"2026-03-01T10:00:00Z","type":"content","payload":{"content":{"speaker":"ai","blocks":[],"metadata":{"model":"m","usage":{"promptTokens":100,"completionTokens":9,"cachedTokens":200,"cacheCreationTokens":50}}}}}`,
		`{"v":1,"seq":1,"ts":"2026-03-01T10:00:00Z","type":"session_start","payload":{"model":"m"}}`)
}

func FuzzWaveLine(f *testing.F) {
	fuzzLine(f, "wave",
		`{"timestamp":"2026-03-01T10:00:00Z","id":"w1","role":"assistant","blocks":[],"usage":{"prompt_tokens":100,"completion_tokens":8,"model":"glm-5","cache_read_input_tokens":500,"cache_creation_input_tokens":10}}`,
		`{"timestamp":"2026-03-01T10:00:00Z","id":"w1","role":"assistant","us\u0061ge":{"prompt_tokens":100,"completion_tokens":8}}`,
		`{"timestamp":"2026-03-01T10:00:00Z","id":"w1","role":"assistant","us\u0061ge":{"prompt_tokens":100,"completion_tokens":8},"b":["usage"]}`,
		`{"timestamp":"2026-03-01T10:00:00Z","id":"w1","role":"assistant","usage":{"prompt_tokens":1,"completion_tokens":2},"us\u0061ge":{"prompt_tokens":100,"completion_tokens":8}}`)
}

func FuzzMogziDocument(f *testing.F) {
	f.Add([]byte(`{"id":"x","usageMetrics":{"inputTokens":10,"outputTokens":20,"cacheReadTokens":3,"cacheWriteTokens":4,"lastUpdated":"2026-03-01T10:00:00"}}`))
	f.Add([]byte(`{"usageMetrics":{"inputTokens":-1},"lastModifiedAt":"2026-03-01T10:00:00Z"}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		tok, _, ok := MogziTotals(data)
		if ok && (tok.Input < 0 || tok.Output < 0 || tok.CacheRead < 0 || tok.CacheWrite < 0) {
			t.Fatalf("MogziTotals(%q) = %+v: a negative count", data, tok)
		}
	})
}
