// Package usage keeps a ledger of the tokens the agents spent — per quarter hour,
// source, project, session and model — fed by the indexer's tail reads (it is an
// indexer.Consumer), and reports it by day, week, month, session or project with
// prices from an embedded dated table. docs/usage.md describes the ledger and what
// each layout counts.
package usage

import (
	"bytes"
	"strings"
	"time"

	"github.com/sessionwatch/sessionwatch/indexer"
)

// Tokens are the four token counts the ledger keeps.
type Tokens struct {
	Input      int64 // uncached input
	Output     int64 // output, reasoning included
	CacheWrite int64 // input written to a prompt cache
	CacheRead  int64 // input read from a prompt cache
}

// Total is the sum of the four counts.
func (t Tokens) Total() int64 { return t.Input + t.Output + t.CacheWrite + t.CacheRead }

// Add adds u to t.
func (t *Tokens) Add(u Tokens) {
	t.Input += u.Input
	t.Output += u.Output
	t.CacheWrite += u.CacheWrite
	t.CacheRead += u.CacheRead
}

// Sub subtracts u from t.
func (t *Tokens) Sub(u Tokens) {
	t.Input -= u.Input
	t.Output -= u.Output
	t.CacheWrite -= u.CacheWrite
	t.CacheRead -= u.CacheRead
}

// IsZero reports whether every count is zero.
func (t Tokens) IsZero() bool { return t == Tokens{} }

// Dedupe says how an event is matched against earlier events of the same unit.
type Dedupe uint8

const (
	// DedupeNone counts the event as it is.
	DedupeNone Dedupe = iota
	// DedupeClaude matches message.id + requestId the way ccusage does: a repeat
	// keeps the copy with the larger total (a main-chain copy over a sidechain one).
	DedupeClaude
	// DedupeLast: a repeated key replaces the earlier event (Gemini message ids).
	DedupeLast
)

// Event is the usage of one line.
type Event struct {
	At        int64 // unix milliseconds
	Model     string
	T         Tokens
	Dedupe    Dedupe
	ID        string // dedupe key: Claude message.id, Gemini message id
	Req       string // Claude requestId
	HasReq    bool
	Sidechain bool
}

// ParseState is what a layout's line parser carries from line to line; it is kept
// in the ledger with the unit's position so a restart goes on where it stopped.
type ParseState struct {
	Model string    `json:"model,omitempty"` // current model (Codex turn_context, llxprt session_start)
	Prev  *[5]int64 `json:"prev,omitempty"`  // Codex: the last total_token_usage (input, cached, output, reasoning, total)
}

// ParseLine extracts the usage of one line of a unit of the given layout. ok is
// false for a line that carries no usage (or is not valid); st is updated with
// what later lines need (the current model, Codex's running totals).
func ParseLine(layout string, st *ParseState, line []byte) (ev Event, ok bool) {
	return parseLine(layout, st, line, nil)
}

// ParseLineMembers is ParseLine of m.Line(), its members taken from m.
func ParseLineMembers(layout string, st *ParseState, m *indexer.Members) (ev Event, ok bool) {
	return parseLine(layout, st, m.Line(), m)
}

func parseLine(layout string, st *ParseState, line []byte, m *indexer.Members) (ev Event, ok bool) {
	sc := scanners.Get().(*scanner)
	sc.mem = m
	defer func() {
		sc.reset()
		scanners.Put(sc)
	}()
	switch layout {
	case "claude":
		return parseClaude(sc, line)
	case "codex":
		return parseCodex(sc, st, line)
	case "gemini":
		return parseGemini(sc, line)
	case "llxprt":
		return parseLlxprt(sc, st, line)
	case "wave":
		return parseWave(sc, line)
	}
	return Event{}, false
}

// ---- Claude Code ----

var claudeUsageMarker = []byte(`"usage":{`)

// parseClaude reads the usage of a Claude Code line. The rules are ccusage's (so
// the totals agree): a line counts when it holds the exact text "usage":{, names
// none of a few fields as null, has a timestamp and message.usage with integer
// input_tokens and output_tokens, and its version (if any) is a semver and its
// sessionId, requestId, message.id and message.model (if any) are not empty. The
// line's type is not looked at. Old "progress" lines carry a sub-agent's message
// under data.message and count too.
func parseClaude(sc *scanner, line []byte) (Event, bool) {
	if !claudeMarked(sc, line) || hasNullField(line) {
		return Event{}, false
	}
	top := sc.fields(line)
	if top == nil {
		return Event{}, false
	}
	if ev, ok := claudeEntry(sc, top, true); ok {
		return ev, true
	}
	// {"data":{"message":{"timestamp","message":{…},"requestId","isSidechain"}}}
	if d := sc.fields(top.get("data")); d != nil {
		if m := sc.fields(d.get("message")); m != nil {
			return claudeEntry(sc, m, false)
		}
	}
	return Event{}, false
}

// claudeMarked reports whether line holds claudeUsageMarker: told by the line's
// scan when it can, else (no scan, an invalid line, …) read from the line.
func claudeMarked(sc *scanner, line []byte) bool {
	if found, known := sc.mem.KeyText(line, "usage", ":{"); known {
		return found
	}
	return bytes.Contains(line, claudeUsageMarker)
}

func claudeEntry(sc *scanner, e object, direct bool) (Event, bool) {
	var ev Event
	at, ok := parseTime(e.get("timestamp"))
	if !ok {
		return ev, false
	}
	msg := sc.fields(e.get("message"))
	if msg == nil {
		return ev, false
	}
	u := sc.fields(msg.get("usage"))
	if u == nil {
		return ev, false
	}
	in, ok1 := count(u.get("input_tokens"))
	out, ok2 := count(u.get("output_tokens"))
	cw, ok3 := optCount(u, "cache_creation_input_tokens")
	cr, ok4 := optCount(u, "cache_read_input_tokens")
	if !ok1 || !ok2 || !ok3 || !ok4 {
		return ev, false
	}
	if raw, ok := u.lookup("cache_creation"); ok {
		// The split by cache lifetime, when present, is what ccusage sums.
		cc := sc.fields(raw)
		if cc == nil {
			return ev, false
		}
		m5, ok5 := optCount(cc, "ephemeral_5m_input_tokens")
		h1, ok6 := optCount(cc, "ephemeral_1h_input_tokens")
		if !ok5 || !ok6 {
			return ev, false
		}
		cw = m5 + h1
	}
	fast := false
	if raw, ok := u.lookup("speed"); ok {
		s, _ := str(raw)
		switch s {
		case "fast":
			fast = true
		case "standard":
		default:
			return ev, false
		}
	}
	if direct {
		if raw, ok := e.lookup("version"); ok {
			v, isStr := str(raw)
			if !isStr || !semverPrefix(v) {
				return ev, false
			}
		}
		if !nonEmptyIfPresent(e, "sessionId") {
			return ev, false
		}
	}
	if !nonEmptyIfPresent(e, "requestId") || !nonEmptyIfPresent(msg, "id") || !nonEmptyIfPresent(msg, "model") {
		return ev, false
	}
	if raw, ok := e.lookup("isSidechain"); ok {
		if string(raw) != "true" && string(raw) != "false" {
			return ev, false
		}
		ev.Sidechain = string(raw) == "true"
	}
	ev.At = at
	ev.T = Tokens{Input: in, Output: out, CacheWrite: cw, CacheRead: cr}
	ev.Model, _ = str(msg.get("model"))
	if fast && ev.Model != "" && ev.Model != "<synthetic>" {
		ev.Model += "-fast"
	}
	// ccusage 20.0.24 (the released build) matches only lines that carry both
	// ids; a line missing either is always counted.
	id, hasID := str(msg.get("id"))
	req, hasReq := str(e.get("requestId"))
	if hasID && hasReq {
		ev.Dedupe, ev.ID, ev.Req, ev.HasReq = DedupeClaude, id, req, true
	}
	return ev, true
}

// nonEmptyIfPresent: an absent field passes; a present one must be a non-empty string.
func nonEmptyIfPresent(m object, key string) bool {
	raw, ok := m.lookup(key)
	if !ok {
		return true
	}
	// raw is a valid JSON value (its object was scanned whole): a string, and one
	// that is not empty (an escape decodes to at least one character), when it is
	// more than its quotes. Nothing is decoded.
	return len(raw) > 2 && raw[0] == '"'
}

// semverPrefix reports whether v starts with digits.digits.digit.
func semverPrefix(v string) bool {
	i := 0
	for part := 0; part < 2; part++ {
		start := i
		for i < len(v) && v[i] >= '0' && v[i] <= '9' {
			i++
		}
		if i == start || i >= len(v) || v[i] != '.' {
			return false
		}
		i++
	}
	return i < len(v) && v[i] >= '0' && v[i] <= '9'
}

// nullFields are the keys whose literal null makes ccusage skip a line, wherever
// in the line they appear.
var nullFields = map[string]bool{
	"id": true, "cwd": true, "model": true, "speed": true, "costUSD": true, "version": true,
	"sessionId": true, "requestId": true, "isApiErrorMessage": true,
	"cache_read_input_tokens": true, "cache_creation_input_tokens": true,
}

// hasNullField reports whether the line holds "<key>":null for one of nullFields
// (a textual test, as ccusage's).
func hasNullField(line []byte) bool {
	off := 0
	for {
		i := bytes.Index(line[off:], []byte(":null"))
		if i < 0 {
			return false
		}
		at := off + i
		end := at - 1
		for end > 0 && line[end] != '"' {
			end--
		}
		if end >= 0 && end < len(line) && line[end] == '"' {
			start := end - 1
			for start > 0 && line[start] != '"' {
				start--
			}
			if start >= 0 && start < end && line[start] == '"' && nullFields[string(line[start+1:end])] {
				return true
			}
		}
		off = at + len(":null")
	}
}

// ---- Codex ----

// parseCodex reads token_count events: the turn's last_token_usage, else the
// increase of total_token_usage over the previous event; the model is the event's
// own, else the last turn_context's. An event of all zeros counts nothing.
//
// Only a line that holds the text "turn_context" or "token_count" (quotes
// included) is read. With the line's members at hand (sc.mem), that test comes
// last and is mostly answered by the members: a line whose type or payload type
// is spelled so holds the text.
func parseCodex(sc *scanner, st *ParseState, line []byte) (Event, bool) {
	if sc.mem == nil && !codexMarked(line) {
		return Event{}, false // most lines: no scan
	}
	top := sc.fields(line)
	if top == nil {
		return Event{}, false
	}
	rawTyp := top.get("type")
	typ, _ := str(rawTyp)
	if typ != "turn_context" && typ != "event_msg" {
		return Event{}, false
	}
	p := sc.fields(top.get("payload"))
	if p == nil {
		return Event{}, false
	}
	if typ == "turn_context" {
		if sc.mem != nil && string(rawTyp) != `"turn_context"` && !codexMarked(line) {
			return Event{}, false
		}
		if m := codexModel(sc, p); m != "" {
			st.Model = m
		}
		return Event{}, false
	}
	rawPT := p.get("type")
	if pt, _ := str(rawPT); pt != "token_count" {
		return Event{}, false
	}
	if sc.mem != nil && string(rawPT) != `"token_count"` && !codexMarked(line) {
		return Event{}, false
	}
	at, ok := parseTime(top.get("timestamp"))
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
	// A model named by the event holds for the events after it too (as in ccusage).
	model := codexModel(sc, p)
	if model != "" {
		st.Model = model
	} else if model = st.Model; model == "" {
		model = CodexFallbackModel
	}
	cached := min(raw[1], raw[0])
	return Event{At: at, Model: model, T: Tokens{Input: raw[0] - cached, Output: raw[2], CacheRead: cached}}, true
}

// codexMarked reports whether line holds the text "turn_context" or
// "token_count", quotes included (ccusage's test before it parses a line).
func codexMarked(line []byte) bool {
	return bytes.Contains(line, []byte(`"turn_context"`)) || bytes.Contains(line, []byte(`"token_count"`))
}

// codexModel is the model a Codex payload names, looked for where ccusage looks:
// info.model, info.model_name, info.metadata.model, then model, metadata.model
// ("" if none; blanks trimmed).
func codexModel(sc *scanner, p object) string {
	pick := func(m object, keys ...string) string {
		for _, k := range keys {
			if v, ok := str(m.get(k)); ok && strings.TrimSpace(v) != "" {
				return strings.TrimSpace(v)
			}
		}
		if md := sc.fields(m.get("metadata")); md != nil {
			if v, ok := str(md.get("model")); ok && strings.TrimSpace(v) != "" {
				return strings.TrimSpace(v)
			}
		}
		return ""
	}
	if info := sc.fields(p.get("info")); info != nil {
		if m := pick(info, "model", "model_name"); m != "" {
			return m
		}
	}
	return pick(p, "model")
}

// CodexFallbackModel is the model of Codex usage recorded before any turn_context
// named one (as ccusage assumes).
const CodexFallbackModel = "gpt-5"

func codexUsage(sc *scanner, raw []byte) ([5]int64, bool) {
	var v [5]int64
	m := sc.fields(raw)
	if m == nil {
		return v, false
	}
	v[0] = looseCount(m, "input_tokens")
	if _, ok := m.lookup("cached_input_tokens"); ok && string(m.get("cached_input_tokens")) != "null" {
		v[1] = looseCount(m, "cached_input_tokens")
	} else {
		v[1] = looseCount(m, "cache_read_input_tokens")
	}
	v[2] = looseCount(m, "output_tokens")
	v[3] = looseCount(m, "reasoning_output_tokens")
	v[4] = looseCount(m, "total_tokens")
	return v, true
}

// ---- Gemini CLI ----

// parseGemini reads a message's tokens {input, output, cached, thoughts, tool}:
// input counts what was not cached plus tool-use prompt tokens, output includes
// the thoughts (billed as output). A repeated message id replaces the message.
//
// Only a line that holds the text "tokens" (quotes included) is read; with the
// line's members at hand, a tokens member spelled so answers that.
func parseGemini(sc *scanner, line []byte) (Event, bool) {
	if sc.mem == nil && !bytes.Contains(line, geminiMarker) {
		return Event{}, false // most lines: no scan
	}
	top := sc.fields(line)
	if top == nil || top.get("tokens") == nil || !marked(sc, line, top, "tokens", geminiMarker) {
		return Event{}, false
	}
	return geminiMessage(sc, top)
}

var geminiMarker, waveMarker = []byte(`"tokens"`), []byte(`"usage"`)

// marked reports whether line, whose members top are, holds text, which is key
// in quotes: a member key that is that text in the line itself (not unescaped
// into a copy) answers without a search. Without the line's scan (sc.mem), it
// was searched before the line was scanned.
func marked(sc *scanner, line []byte, top object, key string, text []byte) bool {
	if sc.mem == nil {
		return true
	}
	for _, f := range top {
		if string(f.k) == key && len(f.k) > 0 {
			if off := cap(line) - cap(f.k); off > 0 && off < len(line) && &line[off] == &f.k[0] {
				return true
			}
		}
	}
	return bytes.Contains(line, text)
}

func geminiMessage(sc *scanner, top object) (Event, bool) {
	tok := sc.fields(top.get("tokens"))
	if tok == nil {
		return Event{}, false
	}
	at, ok := parseTime(top.get("timestamp"))
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

// ---- llxprt ----

// parseLlxprt reads the usage in the metadata of "content" lines
// ({promptTokens, completionTokens, cachedTokens?, cacheCreationTokens?}); the
// model is the metadata's, else the one session_start or provider_switch named.
func parseLlxprt(sc *scanner, st *ParseState, line []byte) (Event, bool) {
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
	case "session_start", "provider_switch":
		if m, ok := str(p.get("model")); ok && m != "" {
			st.Model = m
		}
		return Event{}, false
	case "content":
	default:
		return Event{}, false
	}
	c := sc.fields(p.get("content"))
	if c == nil {
		return Event{}, false
	}
	meta := sc.fields(c.get("metadata"))
	if meta == nil {
		return Event{}, false
	}
	u := sc.fields(meta.get("usage"))
	if u == nil {
		return Event{}, false
	}
	at, ok := parseTime(top.get("ts"))
	if !ok {
		return Event{}, false
	}
	ev := Event{At: at, T: promptTokens(u, "promptTokens", "completionTokens", "cachedTokens", "cacheCreationTokens")}
	if ev.T.IsZero() {
		return Event{}, false
	}
	ev.Model, _ = str(meta.get("model"))
	if ev.Model == "" {
		ev.Model = st.Model
	}
	return ev, true
}

// promptTokens reads usage counted OpenAI style, where the prompt count includes
// its cached part: the cache reads and writes are taken out of it (never below
// zero) so Input is the uncached rest.
func promptTokens(u object, promptKey, outKey, readKey, writeKey string) Tokens {
	prompt, out := looseCount(u, promptKey), looseCount(u, outKey)
	cr, cw := looseCount(u, readKey), looseCount(u, writeKey)
	cr = min(cr, prompt)
	cw = min(cw, prompt-cr)
	return Tokens{Input: prompt - cr - cw, Output: out, CacheRead: cr, CacheWrite: cw}
}

// ---- Wave ----

// parseWave reads the usage of assistant messages: prompt_tokens (which includes
// the cached part, OpenAI style), completion_tokens, cache_read_input_tokens,
// cache_creation_input_tokens and the usage's model.
func parseWave(sc *scanner, line []byte) (Event, bool) {
	if sc.mem == nil && !bytes.Contains(line, waveMarker) {
		return Event{}, false
	}
	top := sc.fields(line)
	if top == nil || top.get("usage") == nil || !marked(sc, line, top, "usage", waveMarker) {
		return Event{}, false
	}
	if role, _ := str(top.get("role")); role != "assistant" {
		return Event{}, false
	}
	u := sc.fields(top.get("usage"))
	if u == nil {
		return Event{}, false
	}
	at, ok := parseTime(top.get("timestamp"))
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

// ---- Mogzi ----

// MogziTotals reads the running usage total of a Mogzi session.json
// (usageMetrics{inputTokens, outputTokens, cacheReadTokens, cacheWriteTokens,
// lastUpdated}). inputTokens is taken as uncached input. at is lastUpdated, else
// lastModifiedAt (unix ms; 0 if neither parses). ok is false without usageMetrics.
func MogziTotals(data []byte) (t Tokens, at int64, ok bool) {
	sc := new(scanner)
	top := sc.fields(bytes.TrimSpace(data))
	if top == nil {
		return t, 0, false
	}
	u := sc.fields(top.get("usageMetrics"))
	if u == nil {
		return t, 0, false
	}
	t = Tokens{Input: looseCount(u, "inputTokens"), Output: looseCount(u, "outputTokens"),
		CacheRead: looseCount(u, "cacheReadTokens"), CacheWrite: looseCount(u, "cacheWriteTokens")}
	if a, ok := parseLooseTime(u.get("lastUpdated")); ok {
		at = a
	} else if a, ok := parseLooseTime(top.get("lastModifiedAt")); ok {
		at = a
	}
	return t, at, true
}

// parseLooseTime accepts RFC 3339 with or without a zone (.NET writes both).
func parseLooseTime(raw []byte) (int64, bool) {
	s, ok := str(raw)
	if !ok {
		return 0, false
	}
	if t := indexer.ParseTime(s); !t.IsZero() {
		return t.UnixMilli(), true
	}
	for _, layout := range []string{"2006-01-02T15:04:05.9999999", "2006-01-02T15:04:05"} {
		if t, err := time.Parse(layout, s); err == nil {
			return t.UnixMilli(), true
		}
	}
	return 0, false
}
