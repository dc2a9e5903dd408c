package indexer

import (
	"encoding/json"
	"fmt"
	"math"
	"path/filepath"
	"strings"
	"time"
)

// llxprt-code (SPEC §3.5): <root>/<sha256>/chats/session-<...>.jsonl, one event
// envelope {"v","seq","ts","type","payload"} per line; <chats>/<sessionId>.lock.

func init() { register(llxprtLayout{}) }

type llxprtLayout struct{}

var llxprtFileRE = lazyRE(`^session-[A-Za-z0-9_-]+\.jsonl$`)

// llxprtSafeID is llxprt's safe session id grammar, ^[A-Za-z0-9_-]{1,256}$; only
// such ids name a lock file. (Written out: the regexp's {1,256} took 2 ms to
// compile at every start of every command.)
func llxprtSafeID(s string) bool {
	if len(s) == 0 || len(s) > 256 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-') {
			return false
		}
	}
	return true
}

func (llxprtLayout) Name() string { return "llxprt" }

func (llxprtLayout) Classify(rel string) (string, UnitKind) {
	parts := strings.Split(rel, "/")
	if len(parts) != 3 || parts[0] == "" || parts[1] != "chats" || !llxprtFileName(parts[2]) {
		return "", UnitNone
	}
	return rel, UnitLines
}

// SkipDir keeps the project-hash dirs and their chats/; chats/archive/ (gzipped
// recordings) and everything else deeper is never read.
func (llxprtLayout) SkipDir(rel string) bool {
	parts := strings.Split(rel, "/")
	switch len(parts) {
	case 1:
		return false
	case 2:
		return parts[1] != "chats"
	}
	return true
}

// onlyChild: in a project directory only chats/ holds sessions (SkipDir skips
// every other directory there, and no file there is a unit).
func (llxprtLayout) onlyChild(dir string) (string, bool) {
	if dir == "" || strings.Contains(dir, "/") {
		return "", false
	}
	return "chats", true
}

func (llxprtLayout) ProjectDir(unit string) string {
	dir, _, _ := strings.Cut(unit, "/")
	return dir
}

// LockFiles returns llxprt's advisory lock <chats>/<sessionId>.lock (only for an id
// of llxprt's safe grammar, so a hostile id cannot name another file) and the
// generic sidecar <session file>.lock.
func (llxprtLayout) LockFiles(s *Session) []string {
	if s == nil || s.File == "" {
		return nil
	}
	var out []string
	if llxprtSafeID(s.ID) {
		out = append(out, filepath.Join(filepath.Dir(s.File), s.ID+".lock"))
	}
	return append(out, s.File+".lock")
}

// Lock is the content of an llxprt session lock file.
type Lock struct {
	PID        int       // owner pid; 0 when missing or not a positive integer
	Timestamp  time.Time // acquisition time; zero when missing or unparseable
	SessionID  string
	OwnerToken string
}

// maxLockBytes bounds how much of a lock file is read; real ones are ~150 bytes.
const maxLockBytes = 64 << 10

// ReadLock reads a lock file {"pid","timestamp","sessionId","ownerToken"}. An error
// means the lock is unreadable (missing, too large, not a JSON object); fields of
// the wrong type are left zero, which LockHeld judges like an unreadable lock.
func ReadLock(path string) (Lock, error) {
	data, err := readCappedRegular(path, maxLockBytes)
	if err != nil {
		return Lock{}, fmt.Errorf("read lock: %w", err)
	}
	rec, err := jsObject(data)
	if err != nil {
		return Lock{}, fmt.Errorf("read lock %s: %w", path, err)
	}
	l := Lock{SessionID: jsStr(rec["sessionId"]), OwnerToken: jsStr(rec["ownerToken"])}
	var pid float64
	if json.Unmarshal(rec["pid"], &pid) == nil && pid > 0 && pid <= math.MaxInt32 && pid == math.Trunc(pid) {
		l.PID = int(pid)
	}
	if ts, err := time.Parse(time.RFC3339Nano, jsStr(rec["timestamp"])); err == nil {
		l.Timestamp = ts
	}
	return l, nil
}

// LockHeld is llxprt's staleness rule (SPEC §3.5), as a pure function: a lock whose
// pid is alive is held until its timestamp is older than staleAfter; a dead pid
// means stale. When the lock could not be read (readErr != nil), or names no valid
// pid, or (pid alive) no valid timestamp, the file's mtime is judged against
// staleAfter instead: recent means held. alive reports whether a pid runs (EPERM
// counts as alive).
func LockHeld(l Lock, readErr error, mtime, now time.Time, staleAfter time.Duration, alive func(pid int) bool) bool {
	byMtime := now.Sub(mtime) <= staleAfter
	if readErr != nil || l.PID <= 0 {
		return byMtime
	}
	if !alive(l.PID) {
		return false
	}
	if l.Timestamp.IsZero() {
		return byMtime
	}
	return now.Sub(l.Timestamp) <= staleAfter
}

func (llxprtLayout) NewAccumulator(string) Accumulator { return &llxprtAcc{} }

// llxprtAcc is the incremental state of one llxprt recording.
type llxprtAcc struct {
	Started   bool   `json:"started,omitempty"` // session_start folded
	SessionID string `json:"sessionId,omitempty"`
	Cwd       string `json:"cwd,omitempty"`
	Provider  string `json:"provider,omitempty"`
	Model     string `json:"model,omitempty"`
	Start     string `json:"startTime,omitempty"` // normalized
	FirstTS   string `json:"firstTs,omitempty"`
	LastTS    string `json:"lastTs,omitempty"`
	Contents  int    `json:"contents,omitempty"` // content lines
	Prompt    string `json:"firstPrompt,omitempty"`
	Title     string `json:"title,omitempty"`
}

type llxprtLine struct {
	Type    string          `json:"type"`
	TS      string          `json:"ts"`
	Payload json.RawMessage `json:"payload"`
}

// llxprtPayload is the members of an event's payload the fold reads.
type llxprtPayload struct {
	sessionID, cwd, workspaceDirs, provider, model, startTime, content, name, title json.RawMessage
}

func (p *llxprtPayload) member(k, v []byte) {
	switch string(k) {
	case "sessionId":
		p.sessionID = v
	case "cwd":
		p.cwd = v
	case "workspaceDirs":
		p.workspaceDirs = v
	case "provider":
		p.provider = v
	case "model":
		p.model = v
	case "startTime":
		p.startTime = v
	case "content":
		p.content = v
	case "name":
		p.name = v
	case "title":
		p.title = v
	}
}

// Line folds one event. An envelope whose type or ts is not a string, or a known
// event whose payload is not an object, is rejected; unknown types only advance
// the activity time.
func (a *llxprtAcc) Line(line []byte) error { return a.line(line, nil) }

// LineMembers implements MembersLiner.
func (a *llxprtAcc) LineMembers(m *Members) error { return a.line(m.Line(), m) }

func (a *llxprtAcc) line(line []byte, m *Members) error {
	// The members a map of them would hold (the last of a key wins), read
	// without one.
	var typ, ts json.RawMessage
	var l llxprtLine
	if err := jsFieldsOf(line, m, func(k, v []byte) {
		switch string(k) {
		case "type":
			typ = v
		case "ts":
			ts = v
		case "payload":
			l.Payload = v
		}
	}); err != nil {
		return err
	}
	for _, f := range []struct {
		key string
		raw json.RawMessage
		dst *string
	}{{"type", typ, &l.Type}, {"ts", ts, &l.TS}} {
		if raw := f.raw; raw != nil && !jsNull(raw) {
			s, ok := jsString(raw)
			if !ok {
				return fmt.Errorf("envelope %s is not a string", f.key)
			}
			*f.dst = s
		}
	}
	var p llxprtPayload
	switch l.Type {
	case "session_start", "content", "provider_switch", "session_named", "session_metadata":
		if err := jsFieldsOf(l.Payload, m, p.member); err != nil {
			return fmt.Errorf("%s payload: %w", l.Type, err)
		}
	}
	if ts := NormTime(l.TS); ts != "" {
		if a.FirstTS == "" {
			a.FirstTS = ts
		}
		a.LastTS = ts
	}
	switch l.Type {
	case "session_start":
		if a.Started {
			return nil // only the first one describes the session
		}
		a.Started = true
		a.SessionID = jsStr(p.sessionID)
		a.Cwd = jsStr(p.cwd)
		if a.Cwd == "" {
			// Recordings before cwd was added: the first workspace dir is the root.
			var dirs []json.RawMessage
			if json.Unmarshal(p.workspaceDirs, &dirs) == nil && len(dirs) > 0 {
				a.Cwd = jsStr(dirs[0])
			}
		}
		a.Provider = jsStr(p.provider)
		a.Model = jsStr(p.model)
		a.Start = NormTime(jsStr(p.startTime))
	case "content":
		a.Contents++
		if a.Prompt == "" {
			a.Prompt = llxprtHumanText(p.content, m)
		}
	case "provider_switch":
		if s, ok := jsString(p.provider); ok {
			a.Provider = s
		}
		if s, ok := jsString(p.model); ok {
			a.Model = s
		}
	case "session_named":
		a.setTitle(p.name)
	case "session_metadata":
		a.setTitle(p.title)
	}
	return nil
}

// setTitle applies a tri-state title: absent keeps it, null clears it.
func (a *llxprtAcc) setTitle(raw json.RawMessage) {
	if jsNull(raw) {
		a.Title = ""
	} else if s, ok := jsString(raw); ok {
		a.Title = s
	}
}

// llxprtHumanText is the prompt of an IContent spoken by "human": its text blocks
// joined (as llxprt joins them), rendered by Prompt; "" for any other speaker or
// content without text, so the next human message is tried. m, if not nil, is
// the scan of the line that holds raw.
func llxprtHumanText(raw json.RawMessage, m *Members) string {
	c, err := jsObjectOf(raw, m)
	if err != nil || jsStr(c["speaker"]) != "human" {
		return ""
	}
	// The elements json.Unmarshal into []json.RawMessage gives, in place; not
	// an array (null included: no text) is no prompt.
	var b strings.Builder
	if !arrayElems(c["blocks"], func(br []byte) {
		blk, err := jsObjectOf(br, m)
		if err != nil || jsStr(blk["type"]) != "text" {
			return
		}
		b.WriteString(jsStr(blk["text"]))
	}) {
		return ""
	}
	return Prompt(b.String())
}

func (a *llxprtAcc) Summarize(s *Session, f FileFacts) {
	s.ID = firstNonEmpty(a.SessionID, strings.TrimSuffix(pathBase(f.Unit), ".jsonl"))
	s.Type = TypeMain
	s.Tail.OwnProject = a.Cwd
	mtime := FormatTime(f.Mtime)
	s.CreatedAt = firstNonEmpty(a.Start, a.FirstTS, mtime)
	s.LastActiveAt = firstNonEmpty(a.LastTS, mtime)
	s.FirstPrompt = a.Prompt
	s.MessageCount = a.Contents
	s.Title = a.Title
	s.Provider = a.Provider
	s.Model = a.Model
}
