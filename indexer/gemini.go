package indexer

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"unicode"
)

// Gemini CLI (SPEC §3.4): <root>/<slug-or-sha256>/chats/session-<...>.jsonl, subagents
// in chats/<parentId>/<id>.jsonl, legacy single-document chats/session-<...>.json.

func init() { register(geminiLayout{}) }

type geminiLayout struct{}

// geminiMainName matches a main chat file, session-<id>.jsonl or .json (the
// regexp ^session-[A-Za-z0-9_-]+\.jsonl?$; Gemini sanitizes ids to
// [A-Za-z0-9_-]). Written out, as every walk and every Load classifies every file.
func geminiMainName(name string) bool {
	stem, ok := strings.CutPrefix(name, "session-")
	if !ok {
		return false
	}
	if s, ok := strings.CutSuffix(stem, ".jsonl"); ok {
		return geminiID(s)
	}
	s, ok := strings.CutSuffix(stem, ".json")
	return ok && geminiID(s)
}

// geminiID matches a sanitized session id (a subagent file stem or parent dir):
// ^[A-Za-z0-9_-]+$.
func geminiID(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '_' || c == '-') {
			return false
		}
	}
	return s != ""
}

// geminiProjectRootFile is the ownership marker Gemini writes into a project dir.
const geminiProjectRootFile = ".project_root"

// Bounds on the project files DirProject reads.
const (
	maxProjectRootBytes = 64 << 10
	maxRegistryBytes    = 16 << 20
)

func (geminiLayout) Name() string { return "gemini" }

func (geminiLayout) Classify(rel string) (string, UnitKind) {
	parts := strings.Split(rel, "/")
	if len(parts) < 3 || parts[0] == "" || parts[1] != "chats" {
		return "", UnitNone
	}
	switch name := parts[len(parts)-1]; len(parts) {
	case 3:
		if !geminiMainName(name) {
			return "", UnitNone
		}
		if strings.HasSuffix(name, ".json") {
			return rel, UnitDocument
		}
		return rel, UnitLines
	case 4:
		stem, ok := strings.CutSuffix(name, ".jsonl")
		if ok && geminiID(stem) && geminiID(parts[2]) {
			return rel, UnitLines
		}
	}
	return "", UnitNone
}

// SkipDir keeps the project dirs, their chats/ and the per-parent subagent dirs
// chats/<parentId>/; logs/, tool-outputs/, plans and the rest hold no chats.
func (geminiLayout) SkipDir(rel string) bool {
	parts := strings.Split(rel, "/")
	switch len(parts) {
	case 1:
		return false
	case 2:
		return parts[1] != "chats"
	case 3:
		return parts[1] != "chats" || !geminiID(parts[2])
	}
	return true
}

// onlyChild: in a project directory only chats/ holds sessions (SkipDir skips
// every other directory there, and no file there is a unit).
func (geminiLayout) onlyChild(dir string) (string, bool) {
	if dir == "" || strings.Contains(dir, "/") {
		return "", false
	}
	return "chats", true
}

func (geminiLayout) ProjectDir(unit string) string {
	dir, _, _ := strings.Cut(unit, "/")
	return dir
}

// Related: a legacy session-X.json is listed only while no session-X.jsonl sits
// beside it, so the .json is re-read whenever the .jsonl changes, appears or goes.
// The reverse is not needed: a .jsonl's summary never depends on its .json.
func (geminiLayout) Related(unit string) []string {
	if strings.Count(unit, "/") == 2 && strings.HasSuffix(unit, ".jsonl") && geminiMainName(pathBase(unit)) {
		return []string{strings.TrimSuffix(unit, "l")}
	}
	return nil
}

// DirProject maps a Gemini project dir to its project path: the path that
// <root>/../projects.json maps to this slug (or, for a legacy dir named by
// sha256(path), the registered path with that hash), else the content of
// <root>/<dir>/.project_root, else "".
func (geminiLayout) DirProject(root, dir string) string {
	if p := geminiRegistryPath(filepath.Join(filepath.Dir(root), "projects.json"), dir); p != "" {
		return p
	}
	data, err := readCappedRegular(filepath.Join(root, filepath.FromSlash(dir), geminiProjectRootFile), maxProjectRootBytes)
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(data))
}

// geminiRegistryPath finds dir in Gemini's projects.json ({"projects":{path:slug}}).
// Of several matching paths the smallest wins, so the answer is deterministic.
// The file is parsed once per version (gemini_registry.go): every project dir
// asks, and each answer looks at every project.
func geminiRegistryPath(file, dir string) string {
	return geminiRegistries.lookup(file, dir)
}

func sha256Hex(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:])
}

func (geminiLayout) NewAccumulator(string) Accumulator { return &geminiAcc{V: geminiAccVersion} }

// geminiAccVersion is the version of geminiAcc's stored form; a stored state of
// another version does not decode, so its file is read again from the start.
const geminiAccVersion = 2

// geminiAcc is the folded state of one Gemini chat: the conversation metadata and,
// per message still in the history after replacements and rewinds, its id in order.
// For eligible user messages (see geminiPrompt) it also keeps the prompt as Prompt
// renders it, because a replacement or rewind can make any of them the first one.
// Its size is bounded by len(id)+3 bytes per folded message plus at most
// MaxPromptChars characters (+ "…") per eligible user message.
type geminiAcc struct {
	V         int            `json:"v"` // geminiAccVersion
	SessionID string         `json:"sessionId,omitempty"`
	Kind      string         `json:"kind,omitempty"`
	Start     string         `json:"startTime,omitempty"`   // normalized
	Updated   string         `json:"lastUpdated,omitempty"` // normalized, header or last $set
	Summary   string         `json:"summary,omitempty"`
	FirstTS   string         `json:"firstTs,omitempty"` // first message timestamp
	LastTS    string         `json:"lastTs,omitempty"`  // timestamp of the last message record
	Model     string         `json:"model,omitempty"`   // of the last gemini record naming one
	IDs       []string       `json:"ids,omitempty"`
	Prompts   map[int]string `json:"prompts,omitempty"` // position in IDs → prompt
	// Res is 1 + the position of the first resumable message (Gemini's
	// isResumableMessageRecord), 0 if none: a session without one is hidden.
	// A resumable message replaced in place by one that is not keeps it set.
	Res int `json:"res,omitempty"`

	index map[string]int // id → position in IDs; rebuilt after decoding
}

var errJSNotObject = errors.New("not a JSON object")

// UnmarshalJSON restores a stored state; one of another version is an error.
func (a *geminiAcc) UnmarshalJSON(data []byte) error {
	type stored geminiAcc
	var st stored
	if err := json.Unmarshal(data, &st); err != nil {
		return err
	}
	if st.V != geminiAccVersion {
		return fmt.Errorf("gemini state version %d, want %d", st.V, geminiAccVersion)
	}
	*a = geminiAcc(st)
	return nil
}

// Line folds one record: a $rewindTo, a message (string id; a known id is replaced
// in place), a $set update, or a header/partial metadata record (string sessionId
// and projectHash), tested in that order as Gemini's own loader does. Other objects
// are ignored; only invalid JSON is rejected.
func (a *geminiAcc) Line(line []byte) error { return a.line(line, nil) }

// LineMembers implements MembersLiner.
func (a *geminiAcc) LineMembers(m *Members) error { return a.line(m.Line(), m) }

func (a *geminiAcc) line(line []byte, m *Members) error {
	var rec geminiRec
	if err := rec.read(line, m); err != nil {
		return err
	}
	a.fold(&rec, m)
	return nil
}

// geminiRec is the members of a Gemini record (a line, a $set, a document or
// one of its messages) that the fold reads: the last of a key, as a map of the
// members holds; nil if absent. It is read without making that map.
type geminiRec struct {
	rewindTo, id, set, sessionID, projectHash, timestamp, typ, model, content, toolCalls, thoughts,
	kind, summary, startTime, lastUpdated, messages json.RawMessage
}

// read reads the object raw's members (jsObjectOf's error if it is none).
func (r *geminiRec) read(raw []byte, m *Members) error {
	return jsFieldsOf(raw, m, func(k, v []byte) {
		switch string(k) {
		case "$rewindTo":
			r.rewindTo = v
		case "id":
			r.id = v
		case "$set":
			r.set = v
		case "sessionId":
			r.sessionID = v
		case "projectHash":
			r.projectHash = v
		case "timestamp":
			r.timestamp = v
		case "type":
			r.typ = v
		case "model":
			r.model = v
		case "content":
			r.content = v
		case "toolCalls":
			r.toolCalls = v
		case "thoughts":
			r.thoughts = v
		case "kind":
			r.kind = v
		case "summary":
			r.summary = v
		case "startTime":
			r.startTime = v
		case "lastUpdated":
			r.lastUpdated = v
		case "messages":
			r.messages = v
		}
	})
}

// fold folds a record; m, if not nil, is the scan of the line that holds it.
func (a *geminiAcc) fold(rec *geminiRec, m *Members) {
	if id, ok := jsString(rec.rewindTo); ok {
		a.rewind(id)
		return
	}
	if id, ok := jsString(rec.id); ok {
		a.message(id, rec, m)
		return
	}
	var set geminiRec
	if err := set.read(rec.set, m); err == nil {
		a.meta(&set)
		return
	}
	_, sid := jsString(rec.sessionID)
	_, ph := jsString(rec.projectHash)
	if sid && ph {
		a.meta(rec)
	}
}

func (a *geminiAcc) lookup(id string) (int, bool) {
	if a.index == nil {
		a.index = make(map[string]int, len(a.IDs))
		for i, x := range a.IDs {
			a.index[x] = i
		}
	}
	i, ok := a.index[id]
	return i, ok
}

func (a *geminiAcc) message(id string, rec *geminiRec, m *Members) {
	if ts := NormTime(jsStr(rec.timestamp)); ts != "" {
		if a.FirstTS == "" {
			a.FirstTS = ts
		}
		a.LastTS = ts
	}
	typ := jsStr(rec.typ)
	if m := jsStr(rec.model); typ == "gemini" && m != "" {
		a.Model = m
	}
	p := ""
	if typ == "user" {
		p = geminiPrompt(rec.content, m)
	}
	i, ok := a.lookup(id)
	if !ok {
		i = len(a.IDs)
		a.IDs = append(a.IDs, id)
		a.index[id] = i
	}
	if (a.Res == 0 || i+1 < a.Res) && geminiResumable(typ, rec, m) {
		a.Res = i + 1
	}
	if p != "" {
		if a.Prompts == nil {
			a.Prompts = map[int]string{}
		}
		a.Prompts[i] = p
	} else {
		delete(a.Prompts, i)
	}
}

// rewind drops the message id and everything after it; an unknown id empties the
// history, as Gemini's loader does.
func (a *geminiAcc) rewind(id string) {
	cut, ok := a.lookup(id)
	if !ok {
		cut = 0
	}
	for _, x := range a.IDs[cut:] {
		delete(a.index, x)
	}
	for i := range a.Prompts {
		if i >= cut {
			delete(a.Prompts, i)
		}
	}
	a.IDs = a.IDs[:cut:cut]
	if a.Res > cut {
		a.Res = 0 // every message from cut on is gone
	}
	if len(a.IDs) == 0 {
		a.IDs, a.Prompts = nil, nil
	}
	if len(a.Prompts) == 0 {
		a.Prompts = nil
	}
}

// meta merges metadata fields: a string sets a field, null clears it, other values
// (and unparseable times) are ignored. messages replaces the whole history.
func (a *geminiAcc) meta(m *geminiRec) {
	setStr := func(raw json.RawMessage, dst *string, norm func(string) string) {
		if raw == nil {
			return
		}
		if jsNull(raw) {
			*dst = ""
			return
		}
		if s, ok := jsString(raw); ok {
			if norm != nil {
				if s = norm(s); s == "" {
					return
				}
			}
			*dst = s
		}
	}
	setStr(m.sessionID, &a.SessionID, nil)
	setStr(m.kind, &a.Kind, nil)
	setStr(m.summary, &a.Summary, nil)
	setStr(m.startTime, &a.Start, NormTime)
	setStr(m.lastUpdated, &a.Updated, NormTime)
	if raw := m.messages; raw != nil {
		var msgs []json.RawMessage
		if json.Unmarshal(raw, &msgs) == nil && msgs != nil {
			a.IDs, a.Prompts, a.index, a.Res = nil, nil, nil, 0
			for _, mr := range msgs {
				var rec geminiRec
				if rec.read(mr, nil) != nil {
					continue
				}
				if id, ok := jsString(rec.id); ok {
					a.message(id, &rec, nil)
				}
			}
		}
	}
}

// firstPrompt is the prompt of the first eligible user message still in the history.
func (a *geminiAcc) firstPrompt() string {
	first := -1
	for i := range a.Prompts {
		if first < 0 || i < first {
			first = i
		}
	}
	if first < 0 {
		return ""
	}
	return a.Prompts[first]
}

func (a *geminiAcc) Summarize(s *Session, f FileFacts) {
	parts := strings.Split(f.Unit, "/")
	name := parts[len(parts)-1]
	stem := strings.TrimSuffix(strings.TrimSuffix(name, ".jsonl"), ".json")
	s.ID = firstNonEmpty(a.SessionID, stem)
	s.Type = TypeMain
	if len(parts) == 4 {
		s.Type = TypeSubagent
		s.ParentID = parts[2]
	} else if a.Kind == TypeSubagent {
		s.Type = TypeSubagent
	}
	mtime := FormatTime(f.Mtime)
	s.Title = a.Summary
	s.FirstPrompt = a.firstPrompt()
	s.CreatedAt = firstNonEmpty(a.Start, a.FirstTS, mtime)
	s.LastActiveAt = firstNonEmpty(a.Updated, a.LastTS, mtime)
	s.MessageCount = len(a.IDs)
	s.Model = a.Model
	s.Hidden = s.Type == TypeMain && a.Res == 0
}

// geminiUserIgnored are the prefixes of Gemini's isIgnoredUserContent.
var geminiUserIgnored = []string{"/", "?", "<session_context>", "<hook_context>"}

// geminiResumable is Gemini's isResumableMessageRecord: a user message with
// content it does not ignore, or a model message with content, tool calls or
// thoughts. Content is rendered as Gemini renders it there (geminiVerboseText), so
// an image or a function response alone is content. m, if not nil, is the scan of
// the line that holds rec.
func geminiResumable(typ string, rec *geminiRec, m *Members) bool {
	switch typ {
	case "user":
		text := geminiVerboseText(rec.content, m)
		if text == "" {
			return false
		}
		for _, p := range geminiUserIgnored {
			if strings.HasPrefix(text, p) {
				return false
			}
		}
		return true
	case "gemini":
		return geminiVerboseText(rec.content, m) != "" || jsNonEmptyArray(rec.toolCalls) || jsNonEmptyArray(rec.thoughts)
	}
	return false
}

// geminiMarkedParts are the part fields Gemini's partToString (verbose) renders as
// a bracketed marker ("[Image: image/png, 1.2 KB]", "[Function Call: ls]", …),
// in its order of precedence.
var geminiMarkedParts = []string{"videoMetadata", "thought", "codeExecutionResult", "executableCode", "fileData", "functionCall", "functionResponse", "inlineData"}

// geminiMaxPartDepth bounds how deep geminiVerboseText looks into nested lists.
const geminiMaxPartDepth = 8

// geminiVerboseText is Gemini's partListUnionToString, trimmed: strings as they
// are, a part with a marked field as "[field]" (Gemini's marker says more; only
// whether the text is empty and how it starts matter here), any other part as its
// text, lists joined (Gemini joins them at any depth; this stops at
// geminiMaxPartDepth, which no chat reaches, so that a line costs O(its length)).
func geminiVerboseText(raw json.RawMessage, m *Members) string {
	var b strings.Builder
	var add func(raw json.RawMessage, depth int)
	add = func(raw json.RawMessage, depth int) {
		raw = bytes.TrimSpace(raw)
		if len(raw) == 0 || depth > geminiMaxPartDepth {
			return
		}
		switch raw[0] {
		case '"':
			s, _ := jsString(raw)
			b.WriteString(s)
		case '{':
			part, err := jsObjectOf(raw, m)
			if err != nil {
				return
			}
			for _, k := range geminiMarkedParts {
				if _, ok := part[k]; ok {
					b.WriteString("[" + k + "]")
					return
				}
			}
			b.WriteString(jsStr(part["text"]))
		case '[':
			// The elements json.Unmarshal into []json.RawMessage gives, in place.
			arrayElems(raw, func(p []byte) { add(p, depth+1) })
		}
	}
	add(raw, 0)
	return strings.TrimSpace(b.String())
}

// geminiIgnoredPrefixes mark user content that is not a person's prompt: slash
// commands, "?" help and injected context (Gemini's isIgnoredUserContent), plus the
// model-written <state_snapshot> that chat compression records as a user turn.
var geminiIgnoredPrefixes = []string{"/", "?", "<session_context>", "<hook_context>", "<state_snapshot>"}

// geminiPrompt renders a user message's content as a first-prompt candidate, or ""
// when it is not eligible. content is a string, a part {text}, or an array of both;
// the texts are joined as Gemini joins them.
//
// Only the start of a long text can matter (Prompt keeps MaxPromptChars
// characters, and the ignored prefixes are short): the text is first joined with
// its long strings clipped (geminiTextClip), and when Prompt cuts that text, the
// whole text gives the same prompt; else it is joined whole.
func geminiPrompt(raw json.RawMessage, m *Members) string {
	if text, clipped := geminiTextClip(raw, m, geminiPromptClip); clipped {
		if p, cut := promptCut(text); cut {
			if geminiIgnored(strings.TrimLeftFunc(text, unicode.IsSpace)) {
				return ""
			}
			return p
		}
	}
	text := geminiText(raw, m)
	if text == "" || geminiIgnored(text) {
		return ""
	}
	return Prompt(text)
}

// geminiIgnored reports whether trimmed user text starts with one of
// geminiIgnoredPrefixes.
func geminiIgnored(text string) bool {
	for _, p := range geminiIgnoredPrefixes {
		if strings.HasPrefix(text, p) {
			return true
		}
	}
	return false
}

// geminiPromptClip is how many bytes of a long string geminiPrompt decodes at
// first: MaxPromptChars characters of text are a few hundred bytes.
const geminiPromptClip = 2048

// geminiText joins a message's content parts as Gemini's partListUnionToString
// does, trimmed; m, if not nil, is the scan of the line that holds raw.
func geminiText(raw json.RawMessage, m *Members) string {
	text, _ := geminiTextClip(raw, m, 0)
	return strings.TrimSpace(text)
}

// geminiTextClip is geminiText untrimmed, except that with clip > 0 the first
// string whose text is longer than clip bytes (of JSON) is clipped: cut at a
// space byte in its first clip bytes (never within an escape or a character,
// the string being valid JSON), and nothing joined after it; clipped tells. The
// text is then a prefix of the whole one (geminiText's, untrimmed).
func geminiTextClip(raw json.RawMessage, m *Members, clip int) (text string, clipped bool) {
	var b strings.Builder
	str := func(raw []byte) {
		raw = bytes.TrimSpace(raw)
		if in := len(raw) - 2; clip > 0 && in > clip && raw[0] == '"' {
			// Every string handed here was validated with the object or
			// array it is a member of (ObjectFields, arrayElems).
			if sp := bytes.LastIndexByte(raw[1:1+clip], ' '); sp >= clip/2 {
				var q [geminiPromptClip + 2]byte
				buf := q[:0]
				if clip > geminiPromptClip {
					buf = make([]byte, 0, clip+2)
				}
				buf = append(append(append(buf, '"'), raw[1:1+sp]...), '"')
				s, _ := JSONString(buf)
				b.WriteString(s)
				clipped = true
				return
			}
		}
		s, _ := JSONString(raw)
		b.WriteString(s)
	}
	var add func(raw json.RawMessage, nested bool)
	add = func(raw json.RawMessage, nested bool) {
		raw = bytes.TrimSpace(raw)
		if len(raw) == 0 || clipped {
			return
		}
		switch raw[0] {
		case '"':
			str(raw)
		case '{':
			var text json.RawMessage // the last one, as a map of the members holds
			if jsFieldsOf(raw, m, func(k, v []byte) {
				if string(k) == "text" {
					text = v
				}
			}) == nil {
				str(text)
			}
		case '[':
			if !nested {
				arrayElems(raw, func(p []byte) { add(p, true) })
			}
		}
	}
	add(raw, false)
	return b.String(), clipped
}

// ParseDocument reads a legacy single-document chat (the header object plus
// "messages"). A .json with a session-X.jsonl beside it yields no session: Gemini
// migrated it on resume and the .jsonl is the live copy. A document that is not an
// object with a string sessionId is listed as corrupt under its file name.
func (geminiLayout) ParseDocument(f FileFacts, data []byte) ([]*Session, error) {
	if fi, err := os.Lstat(f.Path + "l"); err == nil && fi.Mode().IsRegular() {
		return nil, nil
	}
	s := &Session{}
	acc, ok := parseGeminiDocument(data)
	if !ok {
		acc = &geminiAcc{}
		s.Corrupt = true
	}
	acc.Summarize(s, f)
	if s.Corrupt {
		s.Hidden = false // unreadable: shown, flagged corrupt
	}
	return []*Session{s}, nil
}

// parseGeminiDocument folds a legacy document; ok is false when it is not a
// conversation record.
func parseGeminiDocument(data []byte) (*geminiAcc, bool) {
	var rec geminiRec
	if rec.read(data, nil) != nil {
		return nil, false
	}
	if _, ok := jsString(rec.sessionID); !ok {
		return nil, false
	}
	acc := &geminiAcc{V: geminiAccVersion}
	acc.meta(&rec)
	return acc, true
}

// readCappedRegular reads a small regular file without following a symlink or
// blocking on a FIFO; a file larger than limit bytes is an error.
func readCappedRegular(path string, limit int64) ([]byte, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("%s: not a regular file", path)
	}
	data, err := io.ReadAll(io.LimitReader(f, limit+1))
	if err != nil {
		return nil, err
	}
	if int64(len(data)) > limit {
		return nil, fmt.Errorf("%s: larger than %d bytes", path, limit)
	}
	return data, nil
}
