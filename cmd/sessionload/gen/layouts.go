package gen

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"github.com/sessionwatch/sessionwatch/indexer"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"unicode"
)

// layout writes one agent's format (shared/research/formats.md).
type layout interface {
	// subagents reports whether the layout has subagent sessions.
	subagents() bool
	// place sets s.Rel (and, where the layout names sessions otherwise, s.ID).
	place(st *Store, s *Session, rng *rand.Rand)
	// projectFiles writes files that map project dirs to projects (Gemini).
	projectFiles(st *Store) error
	// header returns the lines a session file starts with ("" if none).
	header(st *Store, s *Session) []byte
	// line renders message m of s; counted says whether the layout's messageCount
	// counts it.
	line(st *Store, s *Session, m *msg) (line []byte, counted bool)
}

var layouts = map[string]layout{
	"wave":   waveGen{},
	"claude": claudeGen{},
	"codex":  codexGen{},
	"gemini": geminiGen{},
	"llxprt": llxprtGen{},
}

// DefaultRoot is where a layout's store lives under home (SPEC §3).
func DefaultRoot(layout, home string) string {
	switch layout {
	case "claude":
		return filepath.Join(home, ".claude", "projects")
	case "codex":
		return filepath.Join(home, ".codex", "sessions")
	case "gemini":
		return filepath.Join(home, ".gemini", "tmp")
	case "llxprt":
		return filepath.Join(home, ".local", "state", "llxprt-code", "tmp")
	}
	return filepath.Join(home, ".wave", "projects")
}

// obj is a JSON object that keeps its keys in the order given, as the agents'
// JSON.stringify and serde do.
type obj []kv

type kv struct {
	k string
	v any
}

func (o obj) MarshalJSON() ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	b.WriteByte('{')
	for i, e := range o {
		if i > 0 {
			b.WriteByte(',')
		}
		enc.Encode(e.k)
		b.Truncate(b.Len() - 1)
		b.WriteByte(':')
		if err := enc.Encode(e.v); err != nil {
			return nil, err
		}
		b.Truncate(b.Len() - 1)
	}
	b.WriteByte('}')
	return b.Bytes(), nil
}

// lineRand is a deterministic source for line k of s that other lines can
// recompute (e.g. a tool call's id, which the tool result quotes).
func lineRand(s *Session, label string, k int) *rand.Rand {
	return newRand(int64(s.seed) ^ mix(0, label, k))
}

func lineUUID(s *Session, k int) string { return uuid(lineRand(s, "uuid", k)) }

func tokens(m *msg) (in, out, cached int) {
	return 2000 + m.k*700 + m.rng.IntN(500), 50 + m.rng.IntN(800), 1000 + m.k*600
}

// ---- Wave (formats.md §2) ----

type waveGen struct{}

func (waveGen) subagents() bool { return true }

func (waveGen) place(st *Store, s *Session, _ *rand.Rand) {
	s.slug = indexer.EncodeResolved(s.Project)
	name := s.ID + ".jsonl"
	if s.Subagent {
		name = "subagent-" + name
	}
	s.Rel = s.slug + "/" + name
}

func (waveGen) projectFiles(*Store) error { return nil }

func (waveGen) header(st *Store, s *Session) []byte {
	return marshal(obj{{"type", "metadata"}, {"workdir", s.Project}, {"createdAt", stamp(s.Created)}, {"gitBranch", "main"}})
}

func (waveGen) line(st *Store, s *Session, m *msg) ([]byte, bool) {
	head := func(role string, blocks []any, usage any) obj {
		o := obj{{"timestamp", stamp(m.ts)}, {"id", lineUUID(s, m.k)}, {"role", role}, {"blocks", blocks}}
		if usage != nil {
			o = append(o, kv{"usage", usage})
		}
		return o
	}
	in, out, _ := tokens(m)
	usage := obj{{"prompt_tokens", in}, {"completion_tokens", out}, {"total_tokens", in + out}, {"model", "glm-5"}, {"operation_type", "agent"}}
	name, file := m.tool()
	switch m.kind {
	case kindPrompt:
		return m.fit(true, func(t string) []byte {
			m.shown = t
			return marshal(head("user", []any{obj{{"type", "text"}, {"content", t}}}, nil))
		}), true
	case kindToolCall, kindToolResult:
		id := m.id("call_", 24)
		return m.fit(false, func(t string) []byte {
			var blocks []any
			if m.kind == kindToolResult {
				blocks = append(blocks, obj{{"type", "reasoning"}, {"content", "Checking the callers of " + file}, {"stage", "end"}})
			} else {
				blocks = append(blocks, obj{{"type", "text"}, {"content", "Let me look at " + file + "."}})
			}
			params, _ := json.Marshal(map[string]string{"file_path": s.Project + "/" + file})
			blocks = append(blocks, obj{{"type", "tool"}, {"name", name}, {"id", id}, {"parameters", string(params)},
				{"result", t}, {"shortResult", fmt.Sprintf("Read %d lines", 40+m.k)}, {"stage", "end"}, {"success", true}})
			return marshal(head("assistant", blocks, usage))
		}), true
	default:
		return m.fit(false, func(t string) []byte {
			return marshal(head("assistant", []any{obj{{"type", "text"}, {"content", t}}}, usage))
		}), true
	}
}

// ---- Claude Code (formats.md §1) ----

type claudeGen struct{}

func (claudeGen) subagents() bool { return true }

// claudeSanitize is Claude Code's project directory name: every character outside
// [A-Za-z0-9] becomes "-" (paths here are short, so no hash suffix).
func claudeSanitize(p string) string {
	var b strings.Builder
	for _, r := range p {
		if r < 128 && (unicode.IsLetter(r) || unicode.IsDigit(r)) {
			b.WriteRune(r)
		} else {
			b.WriteByte('-')
		}
	}
	return b.String()
}

func (claudeGen) place(st *Store, s *Session, rng *rand.Rand) {
	s.slug = claudeSanitize(s.Project)
	if !s.Subagent {
		s.Rel = s.slug + "/" + s.ID + ".jsonl"
		return
	}
	// A subagent is keyed by its agentId; its lines carry the parent's sessionId.
	s.agentID = "a" + hexID(rng, 16)
	s.Rel = s.slug + "/" + s.ParentID + "/subagents/agent-" + s.agentID + ".jsonl"
	s.ID = s.agentID
}

func (claudeGen) projectFiles(*Store) error { return nil }

func (claudeGen) header(*Store, *Session) []byte { return nil }

func (claudeGen) line(st *Store, s *Session, m *msg) ([]byte, bool) {
	sessionID := s.ID
	if s.Subagent {
		sessionID = s.ParentID
	}
	var parent any
	if m.k > 0 {
		parent = lineUUID(s, m.k-1)
	}
	base := func(typ string, message any, extra ...kv) obj {
		o := obj{{"parentUuid", parent}, {"isSidechain", s.Subagent}, {"userType", "external"}, {"cwd", s.Project},
			{"sessionId", sessionID}, {"version", "2.1.90"}, {"gitBranch", "main"}}
		if s.Subagent {
			o = append(o, kv{"agentId", s.agentID})
		}
		o = append(o, kv{"type", typ}, kv{"message", message})
		o = append(o, extra...)
		return append(o, kv{"uuid", lineUUID(s, m.k)}, kv{"timestamp", stamp(m.ts)})
	}
	in, out, cached := tokens(m)
	usage := obj{{"input_tokens", in - cached}, {"cache_creation_input_tokens", 0}, {"cache_read_input_tokens", cached}, {"output_tokens", out}, {"service_tier", "standard"}}
	assistant := func(content []any, stop string) obj {
		return obj{{"id", m.id("msg_01", 22)}, {"type", "message"}, {"role", "assistant"}, {"model", "claude-opus-4-5"},
			{"content", content}, {"stop_reason", stop}, {"stop_sequence", nil}, {"usage", usage}}
	}
	toolID := func(k int) string { return "toolu_01" + hexID(lineRand(s, "tool", k), 22) }
	switch m.kind {
	case kindPrompt:
		return m.fit(true, func(t string) []byte {
			m.shown = t
			return marshal(base("user", obj{{"role", "user"}, {"content", t}}))
		}), true
	case kindToolCall:
		name, file := m.tool()
		return m.fit(false, func(t string) []byte {
			content := []any{
				obj{{"type", "thinking"}, {"thinking", t}, {"signature", hexID(m.rng, 32)}},
				obj{{"type", "tool_use"}, {"id", toolID(m.k)}, {"name", name}, {"input", obj{{"file_path", s.Project + "/" + file}}}},
			}
			return marshal(base("assistant", assistant(content, "tool_use"), kv{"requestId", m.id("req_011", 21)}))
		}), true
	case kindToolResult:
		return m.fit(false, func(t string) []byte {
			content := []any{obj{{"type", "tool_result"}, {"tool_use_id", toolID(m.k - 1)}, {"content", t}, {"is_error", false}}}
			return marshal(base("user", obj{{"role", "user"}, {"content", content}},
				kv{"toolUseResult", obj{{"type", "text"}, {"file", obj{{"numLines", 40 + m.k}}}}}))
		}), true
	default:
		line := m.fit(false, func(t string) []byte {
			content := []any{obj{{"type", "text"}, {"text", t}}}
			return marshal(base("assistant", assistant(content, "end_turn"), kv{"requestId", m.id("req_011", 21)}))
		})
		if m.k == 3 {
			// Claude Code titles a session after its first exchange.
			title := "Work on " + pick(lineRand(s, "title", 0), pkgWords)
			s.Title = title
			line = append(line, marshal(obj{{"type", "ai-title"}, {"aiTitle", title}, {"sessionId", sessionID}})...)
		}
		return line, true
	}
}

// ---- Codex (formats.md §5) ----

type codexGen struct{}

func (codexGen) subagents() bool { return true }

func (codexGen) place(st *Store, s *Session, _ *rand.Rand) {
	c := s.Created.UTC()
	s.Rel = fmt.Sprintf("%s/rollout-%s-%s.jsonl", c.Format("2006/01/02"), c.Format("2006-01-02T15-04-05"), s.ID)
}

func (codexGen) projectFiles(*Store) error { return nil }

func (codexGen) header(st *Store, s *Session) []byte {
	ts := stamp(s.Created)
	rng := lineRand(s, "meta", 0)
	var source any = "cli"
	meta := obj{{"id", s.ID}, {"timestamp", ts}, {"cwd", s.Project}, {"originator", "codex_cli_rs"}, {"cli_version", "0.63.0"}, {"instructions", nil}}
	if s.Subagent {
		source = obj{{"subagent", "review"}}
		meta = append(meta, kv{"source", source}, kv{"forked_from_id", s.ParentID})
	} else {
		meta = append(meta, kv{"source", source})
	}
	meta = append(meta, kv{"model_provider", "openai"},
		kv{"git", obj{{"commit_hash", hexID(rng, 40)}, {"branch", "main"}, {"repository_url", "git@github.com:acme/" + filepath.Base(s.Project) + ".git"}}})
	b := marshal(obj{{"timestamp", ts}, {"type", "session_meta"}, {"payload", meta}})
	return append(b, marshal(obj{{"timestamp", ts}, {"type", "turn_context"}, {"payload", obj{{"cwd", s.Project}, {"approval_policy", "on-request"},
		{"sandbox_policy", obj{{"mode", "workspace-write"}, {"network_access", false}}}, {"model", "gpt-5-codex"}, {"effort", "medium"}, {"summary", "auto"}}}})...)
}

func (codexGen) line(st *Store, s *Session, m *msg) ([]byte, bool) {
	ts := stamp(m.ts)
	wrap := func(typ string, payload obj) []byte {
		return marshal(obj{{"timestamp", ts}, {"type", typ}, {"payload", payload}})
	}
	callID := func(k int) string { return "call_" + hexID(lineRand(s, "tool", k), 24) }
	switch m.kind {
	case kindPrompt:
		return m.fit(true, func(t string) []byte {
			m.shown = t
			return wrap("event_msg", obj{{"type", "user_message"}, {"message", t}, {"images", []any{}}})
		}), true
	case kindToolCall:
		_, file := m.tool()
		return m.fit(false, func(t string) []byte {
			args, _ := json.Marshal(obj{{"command", []string{"bash", "-lc", "sed -n '1,200p' " + file + " # " + t}}, {"workdir", s.Project}, {"timeout_ms", 120000}})
			return wrap("response_item", obj{{"type", "function_call"}, {"name", "shell"}, {"arguments", string(args)}, {"call_id", callID(m.k)}})
		}), false
	case kindToolResult:
		return m.fit(false, func(t string) []byte {
			out, _ := json.Marshal(obj{{"output", t}, {"metadata", obj{{"exit_code", 0}, {"duration_seconds", 0.1}}}})
			return wrap("response_item", obj{{"type", "function_call_output"}, {"call_id", callID(m.k - 1)}, {"output", string(out)}})
		}), false
	default:
		in, out, cached := tokens(m)
		line := m.fit(false, func(t string) []byte {
			return wrap("event_msg", obj{{"type", "agent_message"}, {"message", t}})
		})
		usage := obj{{"input_tokens", in}, {"cached_input_tokens", cached}, {"output_tokens", out}, {"reasoning_output_tokens", out / 2}, {"total_tokens", in + out}}
		line = append(line, wrap("event_msg", obj{{"type", "token_count"}, {"info", obj{{"total_token_usage", usage}, {"last_token_usage", usage}, {"model_context_window", 272000}}}, {"rate_limits", nil}})...)
		return line, true
	}
}

// ---- Gemini CLI (formats.md §3) ----

type geminiGen struct{}

func (geminiGen) subagents() bool { return true }

// geminiSlug is the project slug Gemini derives from a path's base name.
func geminiSlug(p string) string {
	var b strings.Builder
	dash := false
	for _, r := range strings.ToLower(filepath.Base(p)) {
		if r >= 'a' && r <= 'z' || r >= '0' && r <= '9' {
			b.WriteRune(r)
			dash = false
		} else if !dash {
			b.WriteByte('-')
			dash = true
		}
	}
	s := strings.Trim(b.String(), "-")
	if s == "" {
		s = "project"
	}
	return s
}

func (geminiGen) place(st *Store, s *Session, _ *rand.Rand) {
	s.slug = geminiSlug(s.Project)
	if s.Subagent {
		s.Rel = fmt.Sprintf("%s/chats/%s/%s.jsonl", s.slug, s.ParentID, s.ID)
		return
	}
	s.Rel = fmt.Sprintf("%s/chats/session-%s-%s.jsonl", s.slug, s.Created.UTC().Format("2006-01-02T15-04"), s.ID[:8])
}

// projectFiles writes ~/.gemini/projects.json (the root's sibling) and each project
// dir's .project_root marker.
func (geminiGen) projectFiles(st *Store) error {
	projects := map[string]string{}
	for _, s := range st.Sessions {
		projects[s.Project] = s.slug
	}
	for p, slug := range projects {
		dir := filepath.Join(st.Root, slug)
		if err := os.MkdirAll(dir, 0o700); err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(dir, ".project_root"), []byte(p), 0o600); err != nil {
			return err
		}
	}
	reg := filepath.Join(filepath.Dir(st.Root), "projects.json")
	var old struct {
		Projects map[string]string `json:"projects"`
	}
	if data, err := os.ReadFile(reg); err == nil {
		json.Unmarshal(data, &old)
	}
	if old.Projects == nil {
		old.Projects = map[string]string{}
	}
	for p, slug := range projects {
		old.Projects[p] = slug
	}
	data, _ := json.MarshalIndent(old, "", "  ")
	return os.WriteFile(reg, data, 0o600)
}

func geminiHash(p string) string {
	sum := sha256.Sum256([]byte(p))
	return hex.EncodeToString(sum[:])
}

func (geminiGen) header(st *Store, s *Session) []byte {
	k := "main"
	if s.Subagent {
		k = "subagent"
	}
	ts := stamp(s.Created)
	return marshal(obj{{"sessionId", s.ID}, {"projectHash", geminiHash(s.Project)}, {"startTime", ts}, {"lastUpdated", ts}, {"kind", k}})
}

func (geminiGen) line(st *Store, s *Session, m *msg) ([]byte, bool) {
	ts := stamp(m.ts)
	set := marshal(obj{{"$set", obj{{"lastUpdated", ts}}}})
	in, out, cached := tokens(m)
	tok := obj{{"input", in}, {"output", out}, {"cached", cached}, {"thoughts", out / 3}, {"tool", 0}, {"total", in + out + out/3}}
	id := lineUUID(s, m.k)
	var line []byte
	switch m.kind {
	case kindPrompt:
		line = m.fit(true, func(t string) []byte {
			m.shown = t
			return marshal(obj{{"id", id}, {"timestamp", ts}, {"type", "user"}, {"content", []any{obj{{"text", t}}}}})
		})
	case kindToolCall:
		_, file := m.tool()
		line = m.fit(false, func(t string) []byte {
			call := obj{{"id", fmt.Sprintf("read_file-%d-%s", m.ts.UnixMilli(), hexID(lineRand(s, "tool", m.k), 12))}, {"name", "read_file"},
				{"args", obj{{"absolute_path", s.Project + "/" + file}}},
				{"result", []any{obj{{"functionResponse", obj{{"id", "read_file"}, {"name", "read_file"}, {"response", obj{{"output", t}}}}}}}},
				{"status", "success"}, {"timestamp", ts}, {"displayName", "ReadFile"}, {"description", file}, {"renderOutputAsMarkdown", true}}
			return marshal(obj{{"id", id}, {"timestamp", ts}, {"type", "gemini"}, {"content", ""},
				{"thoughts", []any{obj{{"subject", "Reading the code"}, {"description", "I need to read " + file}, {"timestamp", ts}}}},
				{"tokens", tok}, {"model", "gemini-2.5-pro"}, {"toolCalls", []any{call}}})
		})
	default:
		line = m.fit(false, func(t string) []byte {
			return marshal(obj{{"id", id}, {"timestamp", ts}, {"type", "gemini"}, {"content", t}, {"tokens", tok}, {"model", "gemini-2.5-pro"}})
		})
	}
	return append(line, set...), true
}

// ---- llxprt-code (formats.md §4) ----

type llxprtGen struct{}

func (llxprtGen) subagents() bool { return false }

func (llxprtGen) place(st *Store, s *Session, _ *rand.Rand) {
	s.slug = geminiHash(s.Project)
	s.Rel = fmt.Sprintf("%s/chats/session-%s-%s.jsonl", s.slug, s.Created.UTC().Format("2006-01-02T15-04-05"), s.ID[:12])
}

func (llxprtGen) projectFiles(*Store) error { return nil }

func (llxprtGen) header(st *Store, s *Session) []byte {
	ts := stamp(s.Created)
	return marshal(obj{{"v", 1}, {"seq", 1}, {"ts", ts}, {"type", "session_start"}, {"payload", obj{{"sessionId", s.ID},
		{"projectHash", s.slug}, {"workspaceDirs", []string{s.Project}}, {"cwd", s.Project}, {"provider", "anthropic"},
		{"model", "claude-sonnet-4-5"}, {"startTime", ts}}}})
}

func (llxprtGen) line(st *Store, s *Session, m *msg) ([]byte, bool) {
	env := func(content obj) []byte {
		return marshal(obj{{"v", 1}, {"seq", m.k + 2}, {"ts", stamp(m.ts)}, {"type", "content"}, {"payload", obj{{"content", content}}}})
	}
	in, out, _ := tokens(m)
	meta := obj{{"model", "claude-sonnet-4-5"}, {"usage", obj{{"promptTokens", in}, {"completionTokens", out}, {"totalTokens", in + out}}}}
	callID := func(k int) string { return "hist_tool_" + hexID(lineRand(s, "tool", k), 16) }
	switch m.kind {
	case kindPrompt:
		return m.fit(true, func(t string) []byte {
			m.shown = t
			return env(obj{{"speaker", "human"}, {"blocks", []any{obj{{"type", "text"}, {"text", t}}}}})
		}), true
	case kindToolCall:
		_, file := m.tool()
		return m.fit(false, func(t string) []byte {
			return env(obj{{"speaker", "ai"}, {"blocks", []any{obj{{"type", "thinking"}, {"thought", t}},
				obj{{"type", "tool_call"}, {"id", callID(m.k)}, {"name", "read_file"}, {"parameters", obj{{"absolute_path", s.Project + "/" + file}}}}}},
				{"metadata", meta}})
		}), true
	case kindToolResult:
		return m.fit(false, func(t string) []byte {
			return env(obj{{"speaker", "tool"}, {"blocks", []any{obj{{"type", "tool_response"}, {"callId", callID(m.k - 1)}, {"toolName", "read_file"},
				{"result", obj{{"output", t}}}}}}})
		}), true
	default:
		return m.fit(false, func(t string) []byte {
			return env(obj{{"speaker", "ai"}, {"blocks", []any{obj{{"type", "text"}, {"text", t}}}}, {"metadata", meta}})
		}), true
	}
}
