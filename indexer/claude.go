package indexer

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"unicode/utf16"
)

// Claude Code (SPEC §3.2): <root>/<sanitized cwd>/<uuid>.jsonl, sub-agents in
// <uuid>/subagents/[workflows/<runId>/]agent-<agentId>.jsonl and, from older
// builds, agent-<agentId>.jsonl beside the sessions.

func init() { register(claudeLayout{}) }

type claudeLayout struct{}

// MaxClaudeDirLen is the longest project directory name Claude Code writes without a
// hash suffix; longer sanitized paths are cut to it and get "-<hash>" appended.
const MaxClaudeDirLen = 200

// claudeNoPrompt is what Claude Code's index shows for a session without a prompt.
const claudeNoPrompt = "No prompt"

// claudeSynthetic is the model Claude Code records on messages it made up itself
// (API errors, interruptions); it names no model.
const claudeSynthetic = "<synthetic>"

func (claudeLayout) Name() string { return "claude" }

// claudeUnit is what a unit's path says about its session.
type claudeUnit struct {
	stem    string // <uuid> of a top-level <uuid>.jsonl
	agentID string // <agentId> of an agent-<agentId>.jsonl
	parent  string // <uuid> directory holding a subagents/ file
}

// parseClaudeUnit splits a unit path; ok is false if it is no transcript.
func parseClaudeUnit(rel string) (u claudeUnit, ok bool) {
	parts := strings.Split(rel, "/")
	for _, p := range parts {
		if p == "" {
			return u, false
		}
	}
	switch len(parts) {
	case 2:
		name := parts[1]
		if stem, found := strings.CutSuffix(name, ".jsonl"); found && claudeIsUUID(stem) {
			return claudeUnit{stem: stem}, true
		}
		if id, found := claudeAgentFile(name); found {
			return claudeUnit{agentID: id}, true
		}
	case 4, 6:
		if !claudeIsUUID(parts[1]) || parts[2] != "subagents" || len(parts) == 6 && parts[3] != "workflows" {
			return u, false
		}
		if id, found := claudeAgentFile(parts[len(parts)-1]); found {
			return claudeUnit{agentID: id, parent: parts[1]}, true
		}
	}
	return u, false
}

// claudeAgentFile extracts <agentId> from "agent-<agentId>.jsonl".
func claudeAgentFile(name string) (string, bool) {
	rest, ok := strings.CutPrefix(name, "agent-")
	if !ok {
		return "", false
	}
	id, ok := strings.CutSuffix(rest, ".jsonl")
	return id, ok && id != ""
}

// claudeIsUUID reports whether s is a UUID in its 36-character form (any case), as
// Claude Code's validateUuid accepts it.
func claudeIsUUID(s string) bool {
	if len(s) != 36 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch i {
		case 8, 13, 18, 23:
			if c != '-' {
				return false
			}
		default:
			if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F') {
				return false
			}
		}
	}
	return true
}

func (claudeLayout) Classify(rel string) (string, UnitKind) {
	if _, ok := parseClaudeUnit(rel); ok {
		return rel, UnitLines
	}
	return "", UnitNone
}

// SkipDir keeps only the directories that can hold transcripts: project dirs, the
// <uuid>/ session dirs, their subagents/ and subagents/workflows/<runId>/. A
// session's tool-results/, remote-agents/ and anything else are neither walked nor
// watched.
func (claudeLayout) SkipDir(rel string) bool {
	parts := strings.Split(rel, "/")
	switch len(parts) {
	case 1:
		return false
	case 2:
		return !claudeIsUUID(parts[1])
	case 3:
		return parts[2] != "subagents"
	case 4:
		return parts[3] != "workflows"
	case 5:
		return false // a workflow run
	}
	return true
}

// onlyChild: in a <uuid>/ session directory only subagents/ holds transcripts
// (SkipDir skips every other directory there, and no file there is a unit).
func (claudeLayout) onlyChild(dir string) (string, bool) {
	proj, id, ok := strings.Cut(dir, "/")
	if !ok || proj == "" || !claudeIsUUID(id) {
		return "", false
	}
	return "subagents", true
}

// ProjectDir is the project directory: the first path component.
func (claudeLayout) ProjectDir(unit string) string {
	dir, _, _ := strings.Cut(unit, "/")
	return dir
}

func (claudeLayout) NewAccumulator(unit string) Accumulator {
	return &claudeAcc{unit: unit, V: claudeAccVersion}
}

// claudeAccVersion is the version of claudeAcc's stored form; a stored state of
// another version does not decode, so its file is read again from the start.
const claudeAccVersion = 2

// claudeAcc is the incremental state of one Claude Code transcript. It is stored in
// every catalog entry, so it keeps only what the summary needs.
type claudeAcc struct {
	unit   string     // unit path (not stored: the indexer passes it again on restore)
	parsed bool       // u is set
	u      claudeUnit // what unit's path says

	V           int    `json:"v"`                   // claudeAccVersion
	Seen        bool   `json:"seen,omitempty"`      // a line was folded
	Sidechain   bool   `json:"sidechain,omitempty"` // the first line has isSidechain:true
	Conv        bool   `json:"conv,omitempty"`      // a user or assistant line was folded
	SessionID   string `json:"sessionId,omitempty"` // first sessionId, kept only when it names another session
	Cwd         string `json:"cwd,omitempty"`
	FirstTS     string `json:"firstTs,omitempty"`
	LastTS      string `json:"lastTs,omitempty"`
	Messages    int    `json:"messages,omitempty"` // user + assistant lines, isMeta ones left out
	FirstPrompt string `json:"firstPrompt,omitempty"`
	Command     string `json:"command,omitempty"` // first slash command, the prompt when there is none
	Media       string `json:"media,omitempty"`   // "Image" or "Document": an attachment-only prompt
	CustomTitle string `json:"customTitle,omitempty"`
	AITitle     string `json:"aiTitle,omitempty"`
	LastPrompt  string `json:"lastPrompt,omitempty"`
	Summary     string `json:"summary,omitempty"`
	GitBranch   string `json:"gitBranch,omitempty"`
	Model       string `json:"model,omitempty"`
}

// UnmarshalJSON restores a stored state; one of another version is an error.
func (a *claudeAcc) UnmarshalJSON(data []byte) error {
	type stored claudeAcc
	st := stored{unit: a.unit}
	if err := json.Unmarshal(data, &st); err != nil {
		return err
	}
	if st.V != claudeAccVersion {
		return fmt.Errorf("claude state version %d, want %d", st.V, claudeAccVersion)
	}
	*a = claudeAcc(st)
	return nil
}

// claudeLine is what one transcript line contributes; fields of an unexpected type
// are ignored. message stays raw (it aliases the line): it is read only when needed.
type claudeLine struct {
	typ, timestamp, sessionID, cwd, gitBranch, summary, customTitle, aiTitle, lastPrompt string
	isSidechain, isMeta, isCompactSummary                                                bool
	message                                                                              []byte
}

type claudeBlock struct {
	Type string `json:"type"`
	Text string `json:"text"`
}

// errNotObject rejects a document that is valid JSON but not an object.
var errNotObject = errors.New("not a JSON object")

// unmarshalTolerant decodes a JSON object into v. A value of an unexpected type
// leaves its field zero instead of rejecting the document: agents change field
// types between versions.
func unmarshalTolerant(data []byte, v any) error {
	data = bytes.TrimSpace(data)
	if len(data) == 0 || data[0] != '{' {
		return errNotObject
	}
	return decodeTolerant(data, v)
}

// decodeTolerant is json.Unmarshal minus the type errors: fields whose value has an
// unexpected type are left zero.
func decodeTolerant(data []byte, v any) error {
	err := json.Unmarshal(data, v)
	var te *json.UnmarshalTypeError
	if err != nil && !errors.As(err, &te) {
		return err
	}
	return nil
}

// Line folds one transcript line. It validates the whole line first (ObjectFields)
// and only then changes the state; message content is decoded only until the first
// prompt is found.
func (a *claudeAcc) Line(line []byte) error { return a.line(line, nil) }

// LineMembers implements MembersLiner.
func (a *claudeAcc) LineMembers(m *Members) error { return a.line(m.Line(), m) }

func (a *claudeAcc) line(line []byte, m *Members) error {
	var l claudeLine
	err := m.ObjectFields(line, func(k, v []byte) {
		str := func(dst *string) { *dst, _ = JSONString(v) }
		switch string(k) {
		case "type":
			str(&l.typ)
		case "timestamp":
			str(&l.timestamp)
		case "sessionId":
			str(&l.sessionID)
		case "cwd":
			str(&l.cwd)
		case "gitBranch":
			str(&l.gitBranch)
		case "summary":
			str(&l.summary)
		case "customTitle":
			str(&l.customTitle)
		case "aiTitle":
			str(&l.aiTitle)
		case "lastPrompt":
			str(&l.lastPrompt)
		case "isSidechain":
			l.isSidechain = JSONTrue(v)
		case "isMeta":
			l.isMeta = JSONTrue(v)
		case "isCompactSummary":
			l.isCompactSummary = JSONTrue(v)
		case "message":
			l.message = v
		}
	})
	if err != nil {
		return err
	}
	if !a.Seen {
		a.Seen = true
		a.Sidechain = l.isSidechain
	}
	if ts := NormTime(l.timestamp); ts != "" {
		if a.FirstTS == "" {
			a.FirstTS = ts
		}
		a.LastTS = ts
	}
	if a.Cwd == "" {
		a.Cwd = l.cwd
	}
	if l.gitBranch != "" {
		a.GitBranch = l.gitBranch
	}
	if a.SessionID == "" && l.sessionID != "" && a.keepsSessionID(l.sessionID) {
		a.SessionID = l.sessionID
	}
	switch l.typ {
	case "user":
		a.Conv = true
		if l.isMeta {
			break
		}
		a.Messages++
		if a.FirstPrompt == "" && !l.isCompactSummary && !bytes.Contains(line, []byte(`"tool_result"`)) {
			a.userPrompt(line, l.message, m)
		}
	case "assistant":
		a.Conv = true
		if !l.isMeta {
			a.Messages++
		}
		if raw, ok := jsonMember(l.message, "model"); ok {
			if m, _ := JSONString(raw); m != "" && m != claudeSynthetic {
				a.Model = m
			}
		}
	case "summary":
		if l.summary != "" {
			a.Summary = l.summary
		}
	case "last-prompt":
		if l.lastPrompt != "" {
			a.LastPrompt = l.lastPrompt
		}
	case "custom-title":
		if l.customTitle != "" {
			a.CustomTitle = l.customTitle
		}
	case "ai-title":
		if l.aiTitle != "" {
			a.AITitle = l.aiTitle
		}
	}
	return nil
}

// userPrompt folds an eligible user line into the prompt candidates.
func (a *claudeAcc) userPrompt(line, message []byte, m *Members) {
	if a.Media == "" {
		a.Media = claudeMedia(line, m)
	}
	content, ok := jsonMember(message, "content")
	if !ok {
		return
	}
	p, cmd, ok := claudeUserPrompt(content)
	if a.Command == "" {
		a.Command = cmd
	}
	if ok {
		a.FirstPrompt = p
	}
}

// hidden reports whether Claude Code's pickers leave the session out: the SDK's
// listSessions when it has nothing to title it by, Claude Code 2.1's when it holds
// no conversation line.
func (a *claudeAcc) hidden() bool {
	if !a.Conv {
		return true
	}
	return a.FirstPrompt == "" && a.Command == "" && a.Media == "" && a.title() == ""
}

// title is the SDK's title precedence short of the prompt.
func (a *claudeAcc) title() string {
	return firstNonEmpty(a.CustomTitle, a.AITitle, a.LastPrompt, a.Summary)
}

// keepsSessionID reports whether a line's sessionId is worth storing: only when it
// can name a parent (a legacy agent file, or a top-level file whose lines belong
// to another session). Lines of a main transcript carry its own id.
func (a *claudeAcc) keepsSessionID(id string) bool {
	if !a.parsed {
		a.u, _ = parseClaudeUnit(a.unit)
		a.parsed = true
	}
	u := a.u
	if u.parent != "" {
		return false
	}
	return u.stem == "" || !strings.EqualFold(id, u.stem)
}

// Summarize fills the session from the state (SPEC §3.2).
func (a *claudeAcc) Summarize(s *Session, f FileFacts) {
	u, _ := parseClaudeUnit(f.Unit)
	switch {
	case u.stem != "":
		s.ID = u.stem
		s.Type = TypeMain
		if a.Sidechain {
			s.Type = TypeSubagent
			s.ParentID = a.SessionID
		}
	default:
		s.ID = u.agentID
		s.Type = TypeSubagent
		s.ParentID = firstNonEmpty(u.parent, a.SessionID)
	}
	s.Tail.OwnProject = a.Cwd
	mtime := FormatTime(f.Mtime)
	s.CreatedAt = firstNonEmpty(a.FirstTS, mtime)
	s.LastActiveAt = firstNonEmpty(a.LastTS, mtime)
	s.FirstPrompt = firstNonEmpty(a.FirstPrompt, a.Command, a.Media, claudeNoPrompt)
	s.Title = a.title()
	s.Hidden = s.Type == TypeMain && a.hidden()
	s.MessageCount = a.Messages
	s.GitBranch = a.GitBranch
	s.Model = a.Model
}

// NativeIndex renders Claude Code's sessions-index.json for one project directory:
// its main sessions in the order given (newest first), pretty-printed with two
// spaces. originalPath is the project of the first main session (by file name) whose
// path sanitizes to the directory's name, else the first project any session names,
// so it does not change as sessions are appended to.
// Companions are what Claude Code keeps beside a main transcript: the <uuid>/
// directory (subagents, tool results) and the <uuid>.cast recording; they are
// retired and restored with the session.
func (claudeLayout) Companions(s *Session) []string {
	if s.Type != TypeMain || !strings.HasSuffix(s.File, ".jsonl") {
		return nil
	}
	base := strings.TrimSuffix(s.File, ".jsonl")
	return []string{base, base + ".cast"}
}

func (claudeLayout) NativeIndex(dst []byte, root, dir string, sessions []*Session) ([]byte, error) {
	size := 128
	for _, s := range sessions {
		size += 320 + len(s.ID) + len(s.File) + 2*len(s.Project) + len(s.FirstPrompt) + len(s.Title)
	}
	top := indentObject{b: append(slices.Grow(dst, size), '{')}
	top.int("version", 1)
	top.str("originalPath", claudeOriginalPath(dir, sessions))
	top.key("entries")
	arr := indentObject{b: append(top.b, '['), depth: 1, array: true}
	for _, s := range sessions {
		if s.Type != TypeMain || s.Hidden {
			continue
		}
		var mtime int64
		if s.Tail != nil {
			mtime = NodeMtimeMs(s.Tail.Mtime)
		}
		arr.elem()
		e := indentObject{b: append(arr.b, '{'), depth: 2}
		e.str("sessionId", s.ID)
		e.str("fullPath", s.File)
		e.int("fileMtime", mtime)
		e.str("firstPrompt", s.FirstPrompt)
		if s.Title != "" {
			e.str("summary", s.Title)
		}
		e.int("messageCount", int64(s.MessageCount))
		e.str("created", s.CreatedAt)
		e.str("modified", s.LastActiveAt)
		e.str("gitBranch", s.GitBranch)
		e.str("projectPath", s.Project)
		e.bool("isSidechain", false)
		e.end()
		arr.b = e.b
	}
	arr.end()
	top.b = arr.b
	top.end()
	return append(top.b, '\n'), nil
}

// NodeMtimeMs is a file's mtime (unix nanoseconds) in epoch milliseconds as Node
// reads it: fs.Stats computes mtimeMs = sec*1e3 + nsec/1e6 in float64 and its
// mtime Date rounds that to the nearest millisecond (Math.round). Claude Code
// takes an index entry as stale when stat.mtime.getTime() > fileMtime, so a
// truncated value would make it re-parse about half the sessions.
func NodeMtimeMs(ns int64) int64 {
	sec, nsec := ns/1e9, ns%1e9
	if nsec < 0 {
		sec, nsec = sec-1, nsec+1e9
	}
	ms := float64(sec)*1e3 + float64(nsec)/1e6
	return int64(math.Floor(ms + 0.5)) // Math.round: halves go up
}

func claudeOriginalPath(dir string, sessions []*Session) string {
	byFile := append([]*Session(nil), sessions...)
	sort.Slice(byFile, func(i, j int) bool { return byFile[i].File < byFile[j].File })
	var mainAny, anyAny string
	for _, s := range byFile {
		if s.Project == "" {
			continue
		}
		if s.Type == TypeMain {
			if claudeDirMatches(dir, s.Project) {
				return s.Project
			}
			if mainAny == "" {
				mainAny = s.Project
			}
		}
		if anyAny == "" {
			anyAny = s.Project
		}
	}
	return firstNonEmpty(mainAny, anyAny)
}

// DirProject names the project of a directory none of whose sessions carries a cwd.
// The directory name is never decoded (the sanitizing is lossy); the only evidence
// taken is the originalPath (else an entry's projectPath) of the directory's
// sessions-index.json, and only when that path sanitizes to the directory's name.
func (claudeLayout) DirProject(root, dir string) string {
	data, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(dir), CatalogName))
	if err != nil {
		return ""
	}
	var idx struct {
		OriginalPath string `json:"originalPath"`
		Entries      []struct {
			ProjectPath string `json:"projectPath"`
		} `json:"entries"`
	}
	if unmarshalTolerant(data, &idx) != nil {
		return ""
	}
	cands := []string{idx.OriginalPath}
	for _, e := range idx.Entries {
		cands = append(cands, e.ProjectPath)
	}
	for _, p := range cands {
		if p != "" && claudeDirMatches(dir, p) {
			return p
		}
	}
	return ""
}

// claudeDirMatches reports whether Claude Code would store the sessions of project
// p in a directory named dir (long names by their 200-character prefix, as the hash
// after it differs between Claude builds).
func claudeDirMatches(dir, p string) bool {
	s := claudeSanitize(p)
	if len(s) <= MaxClaudeDirLen {
		return dir == s
	}
	return strings.HasPrefix(dir, s[:MaxClaudeDirLen]+"-")
}

// claudeSanitize replaces every UTF-16 code unit outside [A-Za-z0-9] with "-", as
// JavaScript's name.replace(/[^a-zA-Z0-9]/g, "-") does.
func claudeSanitize(p string) string {
	var b strings.Builder
	b.Grow(len(p))
	for _, r := range p {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9':
			b.WriteRune(r)
		case r > 0xFFFF:
			b.WriteString("--") // a surrogate pair is two code units
		default:
			b.WriteByte('-')
		}
	}
	return b.String()
}

// SanitizeClaudePath names the project directory Claude Code uses for a working
// directory: every character outside [A-Za-z0-9] becomes "-" (characters outside the
// Basic Multilingual Plane become "--", as JavaScript counts them as two); a result
// over 200 characters is cut to 200 and gets "-" plus a hash. The hash is the one
// Claude's Node SDK uses (djb2, base 36); the Bun-built CLI uses another, so look
// up long names with ClaudeProjectDir, which matches by prefix. Claude sanitizes
// the canonical path (symlinks resolved, Unicode NFC); pass it in that form.
func SanitizeClaudePath(p string) string {
	s := claudeSanitize(p)
	if len(s) <= MaxClaudeDirLen {
		return s
	}
	return s[:MaxClaudeDirLen] + "-" + claudeDJB2(p)
}

// claudeDJB2 is Math.abs(djb2Hash(s)).toString(36) over s's UTF-16 code units.
func claudeDJB2(s string) string {
	var h int32
	for _, c := range utf16.Encode([]rune(s)) {
		h = (h << 5) - h + int32(c)
	}
	v := int64(h)
	if v < 0 {
		v = -v
	}
	return strconv.FormatInt(v, 36)
}

// ClaudeProjectDir finds the existing project directory under root that Claude Code
// uses for cwd and returns its name (relative to root, like Layout.ProjectDir): the
// exact sanitized name, else, for names over 200 characters, the first directory
// (in name order) that starts with the 200-character prefix and "-". ok is false
// if there is none.
func ClaudeProjectDir(root, cwd string) (dir string, ok bool) {
	name := SanitizeClaudePath(cwd)
	if fi, err := os.Stat(filepath.Join(root, name)); err == nil && fi.IsDir() {
		return name, true
	}
	s := claudeSanitize(cwd)
	if len(s) <= MaxClaudeDirLen {
		return "", false
	}
	prefix := s[:MaxClaudeDirLen] + "-"
	ents, err := os.ReadDir(root)
	if err != nil {
		return "", false
	}
	for _, e := range ents {
		if e.IsDir() && strings.HasPrefix(e.Name(), prefix) {
			return e.Name(), true
		}
	}
	return "", false
}

// LiveSessions reads Claude Code's registry of running processes,
// <root>/../sessions/<pid>.json ({"pid","sessionId",...}), and maps each session id
// to the pid that claims it; when two files claim one session the later-started
// process wins. Unreadable or malformed files are skipped; a missing registry is
// an empty map.
func (claudeLayout) LiveSessions(root string) (map[string]int, error) {
	dir := filepath.Join(filepath.Dir(filepath.Clean(root)), "sessions")
	ents, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return map[string]int{}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read claude sessions registry: %w", err)
	}
	live := map[string]int{}
	started := map[string]float64{}
	for _, e := range ents {
		name := e.Name()
		if e.IsDir() || !strings.HasSuffix(name, ".json") {
			continue
		}
		data, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			continue
		}
		var rec struct {
			Pid       float64 `json:"pid"`
			SessionID string  `json:"sessionId"`
			StartedAt float64 `json:"startedAt"`
		}
		if unmarshalTolerant(data, &rec) != nil || rec.SessionID == "" {
			continue
		}
		pid := int(rec.Pid)
		if float64(pid) != rec.Pid || pid <= 0 {
			n, err := strconv.Atoi(strings.TrimSuffix(name, ".json"))
			if err != nil || n <= 0 {
				continue
			}
			pid = n
		}
		if old, dup := live[rec.SessionID]; dup && (rec.StartedAt < started[rec.SessionID] || rec.StartedAt == started[rec.SessionID] && pid < old) {
			continue
		}
		live[rec.SessionID] = pid
		started[rec.SessionID] = rec.StartedAt
	}
	return live, nil
}
