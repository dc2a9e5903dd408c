package usage

import (
	"bytes"
	"reflect"
	"testing"
	"time"

	"github.com/sessionwatch/sessionwatch/indexer"
)

// The Codex, Gemini and Wave line parsers and parseTime as they were before the
// line's members answered their marker tests (b8cbf71): the oracle the ledger's
// reading of any line is held to (FuzzLineOracle).

func oldParseTime(raw []byte) (int64, bool) {
	s, ok := str(raw)
	if !ok {
		return 0, false
	}
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return 0, false
	}
	return t.UnixMilli(), true
}

func oldParseCodex(sc *scanner, st *ParseState, line []byte) (Event, bool) {
	if !bytes.Contains(line, []byte(`"turn_context"`)) && !bytes.Contains(line, []byte(`"token_count"`)) {
		return Event{}, false
	}
	top := sc.fields(line)
	if top == nil {
		return Event{}, false
	}
	typ, _ := str(top.get("type"))
	p := sc.fields(top.get("payload"))
	if p == nil {
		return Event{}, false
	}
	switch typ {
	case "turn_context":
		if m := codexModel(sc, p); m != "" {
			st.Model = m
		}
		return Event{}, false
	case "event_msg":
	default:
		return Event{}, false
	}
	if pt, _ := str(p.get("type")); pt != "token_count" {
		return Event{}, false
	}
	at, ok := oldParseTime(top.get("timestamp"))
	if !ok {
		return Event{}, false
	}
	info := sc.fields(p.get("info"))
	if info == nil {
		return Event{}, false
	}
	total, hasTotal := codexUsage(sc, info.get("total_token_usage"))
	last, hasLast := codexUsage(sc, info.get("last_token_usage"))
	raw := last
	if !hasLast {
		if !hasTotal {
			return Event{}, false
		}
		raw = total
		if st.Prev != nil {
			for i := range raw {
				raw[i] = max(raw[i]-st.Prev[i], 0)
			}
		}
	}
	if hasTotal {
		t := total
		st.Prev = &t
	}
	if raw[0] == 0 && raw[1] == 0 && raw[2] == 0 && raw[3] == 0 {
		return Event{}, false
	}
	model := codexModel(sc, p)
	if model != "" {
		st.Model = model
	} else if model = st.Model; model == "" {
		model = CodexFallbackModel
	}
	cached := min(raw[1], raw[0])
	return Event{At: at, Model: model, T: Tokens{Input: raw[0] - cached, Output: raw[2], CacheRead: cached}}, true
}

func oldParseGemini(sc *scanner, line []byte) (Event, bool) {
	if !bytes.Contains(line, []byte(`"tokens"`)) {
		return Event{}, false
	}
	top := sc.fields(line)
	if top == nil {
		return Event{}, false
	}
	tok := sc.fields(top.get("tokens"))
	if tok == nil {
		return Event{}, false
	}
	at, ok := oldParseTime(top.get("timestamp"))
	if !ok {
		return Event{}, false
	}
	in, out := looseCount(tok, "input"), looseCount(tok, "output")
	cached, thoughts, tool := looseCount(tok, "cached"), looseCount(tok, "thoughts"), looseCount(tok, "tool")
	cached = min(cached, in)
	ev := Event{At: at, T: Tokens{Input: in - cached + tool, Output: out + thoughts, CacheRead: cached}}
	if ev.T.IsZero() {
		return Event{}, false
	}
	ev.Model, _ = str(top.get("model"))
	if id, ok := str(top.get("id")); ok && id != "" {
		ev.Dedupe, ev.ID = DedupeLast, id
	}
	return ev, true
}

func oldParseWave(sc *scanner, line []byte) (Event, bool) {
	if !bytes.Contains(line, []byte(`"usage"`)) {
		return Event{}, false
	}
	top := sc.fields(line)
	if top == nil {
		return Event{}, false
	}
	if role, _ := str(top.get("role")); role != "assistant" {
		return Event{}, false
	}
	u := sc.fields(top.get("usage"))
	if u == nil {
		return Event{}, false
	}
	at, ok := oldParseTime(top.get("timestamp"))
	if !ok {
		return Event{}, false
	}
	ev := Event{At: at, T: promptTokens(u, "prompt_tokens", "completion_tokens", "cache_read_input_tokens", "cache_creation_input_tokens")}
	if ev.T.IsZero() {
		return Event{}, false
	}
	ev.Model, _ = str(u.get("model"))
	return ev, true
}

func oldParseLine(layout string, st *ParseState, line []byte) (Event, bool) {
	sc := new(scanner)
	switch layout {
	case "codex":
		return oldParseCodex(sc, st, line)
	case "gemini":
		return oldParseGemini(sc, line)
	case "wave":
		return oldParseWave(sc, line)
	}
	return Event{}, false
}

// FuzzLineOracle: the Codex, Gemini and Wave lines read as a cold pass reads
// them (ParseLineMembers on the read worker's scan, in a buffer the reader then
// reuses) and as a live tail reads them (ParseLine) give what the old parsers
// gave, state included, for any line.
func FuzzLineOracle(f *testing.F) {
	for _, s := range []string{
		`{"timestamp":"2026-03-01T10:00:00.000Z","type":"event_msg","payload":{"type":"token_count","info":{"total_token_usage":{"input_tokens":100,"cached_input_tokens":40,"output_tokens":7,"total_tokens":107},"last_token_usage":{"input_tokens":100,"cached_input_tokens":400,"output_tokens":7}}}}`,
		`{"timestamp":"2026-03-01T10:00:00+02:00","type":"turn_context","payload":{"model":"gpt-5"}}`,
		`{"timestamp":"2026-03-01T10:00:00Z","type":"turn\u005fcontext","payload":{"model":"gpt-5","x":"turn_context"}}`,
		`{"timestamp":"2026-03-01T10:00:00Z","type":"event_msg","type":"turn_context","payload":{"model":"m"},"payload":{"type":"token_count","info":{"last_token_usage":{"input_tokens":5}}}}`,
		`{"timestamp":"2026-03-01T10:00:00Z","Type":"turn_context","payload":{"model":"gpt-5"}}`,
		`{"id":"g1","timestamp":"2026-03-01t10:00:00.5z","type":"gemini","tokens":{"input":100,"output":10,"cached":300,"thoughts":5,"tool":2},"model":"gemini-2.5-pro"}`,
		`{"timestamp":"2026-03-01T10:00:00Z","type":"turn\u005fcontext","payload":{"model":"gpt-5"}}`,
		`{"timestamp":"2026-03-01T10:00:00Z","type":"event_msg","payload":{"type":"token\u005fcount","info":{"last_token_usage":{"input_tokens":5}}}}`,
		`{"id":"g1","timestamp":"2026-03-01T10:00:00Z","type":"gemini","t\u006fkens":{"input":100,"output":10}}`,
		`{"timestamp":"2026-03-01T10:00:00Z","role":"assistant","us\u0061ge":{"prompt_tokens":100,"completion_tokens":8}}`,
		`{"id":"g1","timestamp":"2026-12-31T23:59:60.000Z","t\u006fkens":{"input":100,"output":10},"x":["tokens"]}`,
		`{"id":"g1","timestamp":"0999-01-01T00:00:00.000Z","Tokens":{"input":1},"tokens":{"output":2}}`,
		`{"timestamp":"2026-03-01T10:00:00.000Z","role":"assistant","usage":{"prompt_tokens":1,"completion_tokens":2},"us\u0061ge":{"prompt_tokens":100,"completion_tokens":8}}`,
		`{"timestamp":"2026-03-01T10:00:00.000-00:00","role":"assistant","usage":{"prompt_tokens":1e2,"completion_tokens":2,"model":"g\u00e9"}} x`,
		"{\"timestamp\":\"2026-03-01T10:00:00.000Z\",\"role\":\"assistant\",\"usage\":{\"prompt_tokens\":1,\"model\":\"\xff\x00\"}}",
	} {
		for _, l := range []string{"codex", "gemini", "wave"} {
			f.Add(l, []byte(s))
		}
	}
	f.Fuzz(func(t *testing.T, layout string, line []byte) {
		switch layout {
		case "codex", "gemini", "wave":
		default:
			return
		}
		for _, start := range []ParseState{{}, {Model: "before", Prev: &[5]int64{1, 2, 3, 4, 5}}} {
			clone := func() ParseState {
				s := start
				if s.Prev != nil {
					p := *s.Prev
					s.Prev = &p
				}
				return s
			}
			wst := clone()
			want, wantOK := oldParseLine(layout, &wst, line)
			st := clone()
			got, ok := ParseLine(layout, &st, line)
			if ok != wantOK || !reflect.DeepEqual(got, want) || !reflect.DeepEqual(st, wst) {
				t.Fatalf("ParseLine(%s, %q) = %+v, %v, %+v; old %+v, %v, %+v", layout, line, got, ok, st, want, wantOK, wst)
			}
			buf := append(make([]byte, 0, len(line)+8), line...)
			var m indexer.Members
			m.Scan(buf)
			st = clone()
			got, ok = ParseLineMembers(layout, &st, &m)
			for i := range buf {
				buf[i] = 'Q' // the reader's next line: nothing read may alias it
			}
			if ok != wantOK || !reflect.DeepEqual(got, want) || !reflect.DeepEqual(st, wst) {
				t.Fatalf("ParseLineMembers(%s, %q) = %+v, %v, %+v; old %+v, %v, %+v", layout, line, got, ok, st, want, wantOK, wst)
			}
		}
	})
}
