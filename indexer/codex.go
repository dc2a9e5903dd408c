package indexer

import (
	"strings"
)

// Codex CLI (SPEC §3.3): <root>/YYYY/MM/DD/rollout-<YYYY-MM-DDThh-mm-ss>-<uuid>.jsonl,
// every line {"timestamp","type","payload"}. No project directories and no native
// index: the catalog groups the sessions by the cwd of their session_meta.

func init() { register(codexLayout{}) }

type codexLayout struct{}

var codexFileRE = lazyRE(`^rollout-\d{4}-\d{2}-\d{2}T\d{2}-\d{2}-\d{2}-([0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12})\.jsonl$`)

// codexDirDigits is the length of the date directories YYYY, MM and DD.
var codexDirDigits = [3]int{4, 2, 2}

func (codexLayout) Name() string { return "codex" }

func (codexLayout) Classify(rel string) (string, UnitKind) {
	parts := strings.Split(rel, "/")
	if len(parts) != 4 || !codexDateDirs(parts[:3]) || !codexFileName(parts[3]) {
		return "", UnitNone
	}
	return rel, UnitLines
}

// codexDateDirs reports whether dirs are date directories YYYY, MM, DD (a prefix of
// them is fine).
func codexDateDirs(dirs []string) bool {
	for i, d := range dirs {
		if i >= len(codexDirDigits) || len(d) != codexDirDigits[i] {
			return false
		}
		for j := 0; j < len(d); j++ {
			if d[j] < '0' || d[j] > '9' {
				return false
			}
		}
	}
	return true
}

// SkipDir keeps only the date tree YYYY/MM/DD; nothing deeper holds rollouts.
func (codexLayout) SkipDir(rel string) bool {
	return !codexDateDirs(strings.Split(rel, "/"))
}

// ProjectDir is "": Codex has no project directories.
func (codexLayout) ProjectDir(string) string { return "" }

func (codexLayout) NewAccumulator(unit string) Accumulator { return &codexAcc{unit: unit} }

// codexAcc is the incremental state of one Codex rollout.
type codexAcc struct {
	unit string // unit path (not stored: the indexer passes it again on restore)

	Meta      bool   `json:"meta,omitempty"`      // the first session_meta was folded
	SessionID string `json:"sessionId,omitempty"` // its id, kept only when it differs from the file name's
	Cwd       string `json:"cwd,omitempty"`
	Provider  string `json:"provider,omitempty"`
	GitBranch string `json:"gitBranch,omitempty"`
	Subagent  bool   `json:"subagent,omitempty"`
	Parent    string `json:"parentId,omitempty"`
	// Created is session_meta's timestamp, else the first line timestamp.
	Created     string `json:"created,omitempty"`
	LastTS      string `json:"lastTs,omitempty"`
	Messages    int    `json:"messages,omitempty"` // user_message + agent_message events
	FirstPrompt string `json:"firstPrompt,omitempty"`
	Model       string `json:"model,omitempty"`
}

// codexLine is what one rollout line contributes; payload stays raw (it aliases the
// line) and is read only for the line types the summary uses, so the huge
// payloads of compacted and response_item lines are validated once and never
// decoded or kept.
type codexLine struct {
	timestamp, typ string
	payload        []byte
}

// codexMetaPayload is what session_meta's payload contributes.
type codexMetaPayload struct {
	id, sessionID, timestamp, cwd, provider, forkedFrom string
	source, git                                         []byte
}

// codexMembers calls fn with every top-level member of a raw JSON object; a value that
// is no object (or absent) has none. Its lines were validated already.
func codexMembers(obj []byte, fn func(key string, val []byte)) {
	codexMembersOf(nil, obj, func(k, v []byte) { fn(string(k), v) })
}

// codexMembersOf is codexMembers with the members from m when obj is a part of
// its line (Members.ObjectFields), the key as bytes.
func codexMembersOf(m *Members, obj []byte, fn func(key, val []byte)) {
	if len(obj) == 0 || obj[0] != '{' {
		return
	}
	m.ObjectFields(obj, fn)
}

// codexStr decodes a raw JSON string value; "" for any other value.
func codexStr(raw []byte) string {
	s, _ := JSONString(raw)
	return s
}

// Line folds one rollout line. Unknown line types are valid and ignored.
func (a *codexAcc) Line(line []byte) error { return a.line(line, nil) }

// LineMembers implements MembersLiner.
func (a *codexAcc) LineMembers(m *Members) error { return a.line(m.Line(), m) }

func (a *codexAcc) line(line []byte, m *Members) error {
	var l codexLine
	err := m.ObjectFields(line, func(k, v []byte) {
		switch string(k) {
		case "timestamp":
			l.timestamp = codexStr(v)
		case "type":
			l.typ = codexStr(v)
		case "payload":
			l.payload = v
		}
	})
	if err != nil {
		return err
	}
	switch l.typ {
	case "session_meta":
		if !a.Meta { // only the first is canonical
			a.Meta = true
			a.foldMeta(l.payload)
		}
	case "event_msg":
		var typ, kind string
		var message []byte
		codexMembersOf(m, l.payload, func(k, v []byte) {
			switch string(k) {
			case "type":
				typ = codexStr(v)
			case "kind":
				kind = codexStr(v)
			case "message":
				message = v
			}
		})
		switch typ {
		case "user_message":
			a.Messages++
			// Older builds also sent the user instructions and the environment context
			// as user_message events, marked by kind.
			if a.FirstPrompt == "" && (kind == "" || kind == "plain") {
				if text, ok := JSONString(message); ok {
					a.FirstPrompt = Prompt(text)
				}
			}
		case "agent_message":
			a.Messages++
		}
	case "turn_context":
		var model string
		codexMembersOf(m, l.payload, func(k, v []byte) {
			if string(k) == "model" {
				model = codexStr(v)
			}
		})
		if model != "" {
			a.Model = model
		}
	}
	if ts := NormTime(l.timestamp); ts != "" {
		if a.Created == "" {
			a.Created = ts
		}
		a.LastTS = ts
	}
	return nil
}

// foldMeta reads the canonical session_meta payload.
func (a *codexAcc) foldMeta(payload []byte) {
	var p codexMetaPayload
	codexMembers(payload, func(k string, v []byte) {
		switch k {
		case "id":
			p.id = codexStr(v)
		case "session_id":
			p.sessionID = codexStr(v)
		case "timestamp":
			p.timestamp = codexStr(v)
		case "cwd":
			p.cwd = codexStr(v)
		case "model_provider":
			p.provider = codexStr(v)
		case "forked_from_id":
			p.forkedFrom = codexStr(v)
		case "source":
			p.source = v
		case "git":
			p.git = v
		}
	})
	if id := firstNonEmpty(p.id, p.sessionID); id != a.fileID() {
		a.SessionID = id
	}
	a.Cwd = p.cwd
	a.Provider = p.provider
	a.GitBranch = ""
	codexMembers(p.git, func(k string, v []byte) {
		if k == "branch" {
			a.GitBranch = codexStr(v)
		}
	})
	a.Subagent, a.Parent = codexSource(p.source)
	if a.Subagent && p.forkedFrom != "" {
		a.Parent = p.forkedFrom
	}
	if ts := NormTime(p.timestamp); ts != "" {
		a.Created = ts
	}
}

// codexSource reads session_meta's source: a string ("cli", "vscode", "exec", …) or
// an object; {"subagent": …} marks a sub-agent, whose parent a thread_spawn names.
func codexSource(raw []byte) (subagent bool, parent string) {
	var sub, spawn []byte
	codexMembers(raw, func(k string, v []byte) {
		if k == "subagent" {
			sub = v
		}
	})
	if len(sub) == 0 || string(sub) == "null" {
		return false, ""
	}
	codexMembers(sub, func(k string, v []byte) {
		if k == "thread_spawn" {
			spawn = v
		}
	})
	codexMembers(spawn, func(k string, v []byte) {
		if k == "parent_thread_id" {
			parent = codexStr(v)
		}
	})
	return true, parent
}

// fileID is the uuid in the unit's file name ("" if it has none).
func (a *codexAcc) fileID() string {
	if m := codexFileRE().FindStringSubmatch(pathBase(a.unit)); m != nil {
		return m[1]
	}
	return ""
}

// Summarize fills the session from the state (SPEC §3.3).
func (a *codexAcc) Summarize(s *Session, f FileFacts) {
	s.ID = firstNonEmpty(a.SessionID, a.fileID())
	s.Type = TypeMain
	if a.Subagent {
		s.Type = TypeSubagent
		s.ParentID = a.Parent
	}
	s.Tail.OwnProject = a.Cwd
	mtime := FormatTime(f.Mtime)
	s.CreatedAt = firstNonEmpty(a.Created, mtime)
	s.LastActiveAt = firstNonEmpty(a.LastTS, mtime)
	s.FirstPrompt = a.FirstPrompt
	s.MessageCount = a.Messages
	s.Provider = a.Provider
	s.Model = a.Model
	s.GitBranch = a.GitBranch
}
