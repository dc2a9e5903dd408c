package indexer

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"unicode"
)

// Wave (SPEC §3.1): <root>/<encoded workdir>/<uuid>.jsonl and subagent-<uuid>.jsonl.

func init() { register(waveLayout{}) }

type waveLayout struct{}

var waveFileRE = lazyRE(`^(subagent-)?([0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12})\.jsonl$`)

func (waveLayout) Name() string { return "wave" }

func (waveLayout) Classify(rel string) (string, UnitKind) {
	dir, name, ok := strings.Cut(rel, "/")
	if !ok || dir == "" || strings.Contains(name, "/") || !waveFileName(name) {
		return "", UnitNone
	}
	return rel, UnitLines
}

// SkipDir: only the project directories directly under the root hold sessions;
// memory/ and anything deeper are never read.
func (waveLayout) SkipDir(rel string) bool { return strings.Contains(rel, "/") }

func (waveLayout) ProjectDir(unit string) string { return pathDir(unit) }

func (waveLayout) NewAccumulator(string) Accumulator { return &waveAcc{} }

// waveAcc is the incremental state of one Wave transcript.
type waveAcc struct {
	Lines         int    `json:"lines,omitempty"` // JSON objects folded
	Workdir       string `json:"workdir,omitempty"`
	HeaderCreated string `json:"headerCreatedAt,omitempty"`
	GitBranch     string `json:"gitBranch,omitempty"`
	RootSession   string `json:"rootSessionId,omitempty"`
	ParentSession string `json:"parentSessionId,omitempty"`
	FirstTS       string `json:"firstTs,omitempty"`
	LastTS        string `json:"lastTs,omitempty"`
	Messages      int    `json:"messages,omitempty"`
	Tokens        int64  `json:"tokens,omitempty"`
	Model         string `json:"model,omitempty"`
	FirstMessage  string `json:"firstMessage,omitempty"`
	FirstSeen     bool   `json:"firstSeen,omitempty"` // the first non-meta message was seen
}

// waveLine is what one line contributes; fields of an unexpected type are ignored.
type waveLine struct {
	typ, workdir, createdAt, gitBranch, rootSession, parentSession, timestamp string
	usage, blocks                                                             []byte
	isMeta                                                                    bool
}

type waveBlock struct {
	Type    string          `json:"type"`
	Content json.RawMessage `json:"content"`
}

// Line folds one line. It validates the whole line first (ObjectFields) and only
// then changes the state, decoding the blocks only for the first message.
func (a *waveAcc) Line(line []byte) error { return a.line(line, nil) }

// LineMembers implements MembersLiner.
func (a *waveAcc) LineMembers(m *Members) error { return a.line(m.Line(), m) }

func (a *waveAcc) line(line []byte, m *Members) error {
	var l waveLine
	err := m.ObjectFields(line, func(k, v []byte) {
		str := func(dst *string) {
			if s, ok := JSONString(v); ok {
				*dst = s
			}
		}
		switch string(k) {
		case "type":
			str(&l.typ)
		case "workdir":
			str(&l.workdir)
		case "createdAt":
			str(&l.createdAt)
		case "gitBranch":
			str(&l.gitBranch)
		case "rootSessionId":
			str(&l.rootSession)
		case "parentSessionId":
			str(&l.parentSession)
		case "timestamp":
			str(&l.timestamp)
		case "isMeta":
			l.isMeta = JSONTrue(v)
		case "usage":
			l.usage = v
		case "blocks":
			l.blocks = v
		}
	})
	if err != nil {
		return err
	}
	first := a.Lines == 0
	a.Lines++
	if l.typ == "metadata" {
		if first {
			a.Workdir = l.workdir
			a.HeaderCreated = NormTime(l.createdAt)
			a.GitBranch = l.gitBranch
			a.RootSession = l.rootSession
			a.ParentSession = l.parentSession
		}
		return nil // a later metadata line is not a message
	}
	if ts := NormTime(l.timestamp); ts != "" {
		if a.FirstTS == "" {
			a.FirstTS = ts
		}
		a.LastTS = ts
	}
	if len(l.usage) > 0 && l.usage[0] == '{' {
		// Already validated: only pick the two members.
		a.Tokens = 0
		m.ObjectFields(l.usage, func(k, v []byte) {
			switch string(k) {
			case "total_tokens":
				a.Tokens = JSONInt(v)
			case "model":
				if m, ok := JSONString(v); ok && m != "" {
					a.Model = m
				}
			}
		})
	}
	if l.isMeta {
		return nil
	}
	a.Messages++
	if !a.FirstSeen {
		a.FirstSeen = true
		var blocks []waveBlock
		if json.Unmarshal(l.blocks, &blocks) == nil {
			for _, b := range blocks {
				if b.Type != "text" && b.Type != "compact" {
					continue
				}
				if text, ok := JSONString(b.Content); ok {
					a.FirstMessage = Prompt(text)
					break
				}
			}
		}
	}
	return nil
}

func (a *waveAcc) Summarize(s *Session, f FileFacts) {
	_, name, _ := strings.Cut(f.Unit, "/")
	m := waveFileRE().FindStringSubmatch(name)
	s.ID = strings.ToLower(m[2])
	s.Type = TypeMain
	if m[1] != "" {
		s.Type = TypeSubagent
	}
	s.ParentID = a.ParentSession
	s.Tail.OwnProject = a.Workdir
	mtime := FormatTime(f.Mtime)
	s.CreatedAt = firstNonEmpty(a.HeaderCreated, a.FirstTS, mtime)
	s.LastActiveAt = firstNonEmpty(a.LastTS, mtime)
	s.FirstPrompt = a.FirstMessage
	s.MessageCount = a.Messages
	s.GitBranch = a.GitBranch
	s.Model = a.Model
}

// DirProject decodes a Wave project directory name when no session in it names its
// workdir: "-" → "/", "_" → " ", leading "/", preferring a decoding that exists.
func (waveLayout) DirProject(root, dir string) string {
	return DecodeWaveDir(dir, func(p string) bool {
		fi, err := os.Stat(p)
		return err == nil && fi.IsDir()
	})
}

// NativeIndex renders Wave's index, pretty-printed with two spaces as Wave wrote it.
// lastUpdated is the newest lastActiveAt, so a rebuild reproduces the file exactly.
func (waveLayout) NativeIndex(dst []byte, root, dir string, sessions []*Session) ([]byte, error) {
	// Wave's sessions object is a map: keys in byte order, the last session of a
	// duplicate id winning, as encoding/json renders a map[string]waveIndexEntry.
	byID := make([]*Session, len(sessions))
	copy(byID, sessions)
	slices.SortStableFunc(byID, func(a, b *Session) int { return strings.Compare(a.ID, b.ID) })
	lastUpdated := ""
	size := 64
	for _, s := range sessions {
		lastUpdated = max(lastUpdated, s.LastActiveAt)
		size += 256 + len(s.ID)*2 + len(s.Project) + len(s.FirstPrompt)
	}
	top := indentObject{b: append(slices.Grow(dst, size), '{')}
	top.key("sessions")
	sess := indentObject{b: append(top.b, '{'), depth: 1}
	for i, s := range byID {
		if i+1 < len(byID) && byID[i+1].ID == s.ID {
			continue
		}
		var acc waveAcc
		if a, ok := s.acc.(*waveAcc); ok {
			acc = *a
		}
		sess.key(s.ID)
		e := indentObject{b: append(sess.b, '{'), depth: 2}
		e.str("sessionType", s.Type)
		e.str("workdir", s.Project)
		e.str("createdAt", s.CreatedAt)
		e.str("lastActiveAt", s.LastActiveAt)
		e.int("latestTotalTokens", acc.Tokens)
		e.str("firstMessage", s.FirstPrompt)
		e.str("rootSessionId", firstNonEmpty(acc.RootSession, s.ID))
		if acc.ParentSession != "" {
			e.str("parentSessionId", acc.ParentSession)
		}
		e.end()
		sess.b = e.b
	}
	sess.end()
	top.b = sess.b
	top.str("lastUpdated", lastUpdated)
	top.end()
	return append(top.b, '\n'), nil
}

// MaxEncodedLen is the longest Wave project directory name.
const MaxEncodedLen = 200

// EncodeProject encodes a working directory the way Wave names its project
// directories (SPEC §3.1); sessionwatch uses the same rule for catalog keys.
// Symlinks are resolved; if that fails the absolute path is used.
func EncodeProject(path string) string {
	resolved := path
	if r, err := filepath.EvalSymlinks(path); err == nil {
		resolved = r
	} else if abs, err := filepath.Abs(path); err == nil {
		resolved = abs
	}
	return EncodeResolved(resolved)
}

// EncodeResolved applies Wave's encoding to an already resolved path.
func EncodeResolved(resolved string) string {
	s := resolved
	if len(s) >= 2 && s[1] == ':' && (s[0] >= 'A' && s[0] <= 'Z' || s[0] >= 'a' && s[0] <= 'z') {
		s = s[2:]
	}
	if strings.HasPrefix(s, "/") || strings.HasPrefix(s, `\`) {
		s = s[1:]
	}
	var b strings.Builder
	space := false
	for _, r := range s {
		if unicode.IsSpace(r) {
			if !space {
				b.WriteByte('_')
			}
			space = true
			continue
		}
		space = false
		switch r {
		case '/', '\\':
			b.WriteByte('-')
		case 0:
			b.WriteByte('_')
		default:
			b.WriteRune(r)
		}
	}
	out := b.String()
	if rs := []rune(out); len(rs) > MaxEncodedLen {
		sum := sha256.Sum256([]byte(resolved))
		out = string(rs[:MaxEncodedLen-9]) + "-" + hex.EncodeToString(sum[:])[:8]
	}
	return out
}

var waveHashedRE = lazyRE(`-[0-9a-f]{8}$`)

// DecodeWaveDir decodes a Wave directory name to a path: each "-" is a "/" or a
// literal "-", each "_" a space or a literal "_". Of the candidates, the first one
// for which exists reports true wins (searching component by component); otherwise
// the plain decoding ("-" → "/", "_" → " ") is returned.
func DecodeWaveDir(name string, exists func(string) bool) string {
	plain := "/" + strings.ReplaceAll(strings.ReplaceAll(name, "-", "/"), "_", " ")
	if len([]rune(name)) == MaxEncodedLen && waveHashedRE().MatchString(name) {
		return plain // a hashed name cannot be decoded
	}
	budget := 4096
	var walk func(prefix, rest string) (string, bool)
	walk = func(prefix, rest string) (string, bool) {
		if rest == "" {
			return prefix, exists(prefix)
		}
		if budget--; budget < 0 {
			return "", false
		}
		// The next component runs to some "-"; try longest-first is arbitrary, so try
		// every split point in order and both readings of each "_".
		for end := 1; end <= len(rest); end++ {
			if end < len(rest) && rest[end] != '-' {
				continue
			}
			comp := rest[:end]
			next := ""
			if end < len(rest) {
				next = rest[end+1:]
			}
			for _, c := range underscoreReadings(comp, 8) {
				p := prefix + "/" + c
				if next != "" && !exists(p) {
					continue
				}
				if got, ok := walk(p, next); ok {
					return got, true
				}
			}
		}
		return "", false
	}
	if got, ok := walk("", name); ok {
		return got
	}
	return plain
}

// underscoreReadings lists a component with each "_" read as "_" or " " (at most
// limit variants; the all-space reading first).
func underscoreReadings(comp string, limit int) []string {
	out := []string{strings.ReplaceAll(comp, "_", " ")}
	if !strings.Contains(comp, "_") {
		return out
	}
	out = append(out, comp)
	idx := []int{}
	for i := 0; i < len(comp); i++ {
		if comp[i] == '_' {
			idx = append(idx, i)
		}
	}
	if len(idx) > 1 {
		for mask := 1; mask < (1<<len(idx))-1 && len(out) < limit; mask++ {
			b := []byte(comp)
			for k, i := range idx {
				if mask&(1<<k) != 0 {
					b[i] = ' '
				}
			}
			out = append(out, string(b))
		}
	}
	return out
}

func firstNonEmpty(ss ...string) string {
	for _, s := range ss {
		if s != "" {
			return s
		}
	}
	return ""
}
