package indexer

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// claude-mermaid-collab terminal sessions (SPEC §3.8): under a configured projects
// folder, <project>/.collab/<session>/terminal-sessions.json (old) and
// <project>/.collab/sessions/<session>/terminal-sessions.json (new), with .collab
// at most CollabMaxDepth levels below the root. Every record is a session (a tmux
// terminal); the project is the directory holding .collab. The tool writes the
// file in place (not atomically), so a half-written file is an error that keeps
// the sessions indexed before.

func init() { register(collabLayout{}) }

type collabLayout struct{}

const (
	// CollabFileName is the name of claude-mermaid-collab's terminal session file.
	CollabFileName = "terminal-sessions.json"
	// CollabMaxDepth is how many levels below the root a .collab directory may sit
	// (root/.collab is level 1, root/a/b/.collab level 3).
	CollabMaxDepth = 3

	collabDir         = ".collab"
	collabSessionsDir = "sessions"
)

func (collabLayout) Name() string { return "collab-terminals" }

// Classify: a terminal-sessions.json in one of the two places is a unit.
func (collabLayout) Classify(rel string) (string, UnitKind) {
	if _, _, ok := collabSplit(rel); ok {
		return rel, UnitDocument
	}
	return "", UnitNone
}

// SkipDir keeps the watch count small: above .collab only directories that can
// still reach a .collab within CollabMaxDepth levels, never hidden ones or
// node_modules; inside .collab only .collab/<session>, .collab/sessions and
// .collab/sessions/<session> — the only directories that can hold the file.
func (collabLayout) SkipDir(rel string) bool {
	parts := strings.Split(rel, "/")
	i := collabIndex(parts)
	if i < 0 {
		for _, p := range parts {
			if !collabWalkable(p) {
				return true
			}
		}
		return len(parts) >= CollabMaxDepth
	}
	rest := parts[i+1:]
	for _, p := range rest {
		if !collabWalkable(p) {
			return true
		}
	}
	switch len(rest) {
	case 0, 1:
		return false
	case 2:
		return rest[0] != collabSessionsDir
	}
	return true
}

// ProjectDir is the project directory (relative to the root) holding .collab.
func (collabLayout) ProjectDir(unit string) string {
	p, _, _ := collabSplit(unit)
	return p
}

// collabSplit splits the path of a terminal-sessions.json into its project
// directory ("" for the root itself) and collab session name.
func collabSplit(rel string) (project, session string, ok bool) {
	parts := strings.Split(rel, "/")
	i := collabIndex(parts)
	if i < 0 {
		return "", "", false
	}
	rest := parts[i+1:]
	switch {
	case len(rest) == 2 && rest[1] == CollabFileName:
		session = rest[0]
	case len(rest) == 3 && rest[0] == collabSessionsDir && rest[2] == CollabFileName:
		session = rest[1]
	default:
		return "", "", false
	}
	if !collabWalkable(session) {
		return "", "", false
	}
	return strings.Join(parts[:i], "/"), session, true
}

// collabIndex is the index of the .collab component of a path, or -1 when there is
// none within CollabMaxDepth levels behind walkable directories.
func collabIndex(parts []string) int {
	for i, p := range parts {
		if p == collabDir {
			if i >= CollabMaxDepth {
				return -1
			}
			return i
		}
		if !collabWalkable(p) {
			return -1
		}
	}
	return -1
}

// collabWalkable: hidden directories and node_modules never hold projects.
func collabWalkable(name string) bool {
	return name != "" && name != "." && name != ".." && !strings.HasPrefix(name, ".") && name != "node_modules"
}

// collabDetails is what a session's tail carries (and `show --json` prints).
type collabDetails struct {
	CollabSession string `json:"collabSession"`
	TmuxSession   string `json:"tmuxSession,omitempty"`
	Order         *int   `json:"order,omitempty"`
}

// ParseDocument lists one session per record. Records that are not objects, have
// no id, or repeat an earlier id are skipped; their number is the skippedLines of
// the first session in catalog order. A file that is not a JSON object with a
// "sessions" array is an error, so a half-written file keeps the sessions it had.
func (collabLayout) ParseDocument(f FileFacts, data []byte) ([]*Session, error) {
	project, session, ok := collabSplit(f.Unit)
	if !ok {
		return nil, fmt.Errorf("not a collab terminal file: %s", f.Unit)
	}
	top, err := decodeObjectFields(data)
	if err != nil {
		return nil, fmt.Errorf("decode collab file: %w", err)
	}
	var records []json.RawMessage
	if raw := bytes.TrimSpace(top["sessions"]); len(raw) > 0 && string(raw) != "null" {
		if raw[0] != '[' {
			return nil, errors.New("decode collab file: sessions is not an array")
		}
		if err := json.Unmarshal(raw, &records); err != nil {
			return nil, fmt.Errorf("decode collab file: %w", err)
		}
	}
	var lastModified string
	looseString(top["lastModified"], &lastModified)
	lastModified = normLooseTime(lastModified)
	ownProject := filepath.Join(f.Root, filepath.FromSlash(project))
	mtime := FormatTime(f.Mtime)

	var ss []*Session
	seen := map[string]bool{}
	skipped := 0
	for _, raw := range records {
		var r CollabRecord
		if err := r.UnmarshalJSON(raw); err != nil || strings.TrimSpace(r.ID) == "" || seen[r.ID] {
			skipped++
			continue
		}
		seen[r.ID] = true
		created := normLooseTime(r.Created)
		s := &Session{
			ID:           r.ID,
			Type:         TypeMain,
			Title:        r.Name,
			CreatedAt:    firstNonEmpty(created, mtime),
			LastActiveAt: firstNonEmpty(lastModified, created, mtime),
			SizeBytes:    int64(len(raw)),
			Tail:         &Tail{OwnProject: ownProject},
		}
		det := collabDetails{CollabSession: session, TmuxSession: r.TmuxSession}
		if r.hasOrder {
			o := r.Order
			det.Order = &o
		}
		if st, err := marshalNoEscape(det); err == nil {
			s.Tail.State = st
		}
		ss = append(ss, s)
	}
	SortSessions(ss)
	if len(ss) > 0 {
		ss[0].SkippedLines = skipped
	}
	return ss, nil
}

// CollabFile is one claude-mermaid-collab terminal-sessions.json. Unknown fields,
// at the top and in each record, are kept with their original key order, so a
// rewrite (records removed, order renumbered) loses nothing else.
type CollabFile struct {
	Sessions     []CollabRecord // in file order
	LastModified string         // ISO 8601; omitted on encode when empty
	// Extra holds every other top-level field (and a known one of an unexpected
	// type), verbatim.
	Extra map[string]json.RawMessage

	keys []string // key order as read
}

// CollabRecord is one terminal session record.
type CollabRecord struct {
	ID          string // UUID
	Name        string // display name, e.g. "Terminal 1"
	TmuxSession string // tmux session name, e.g. "mc-openboldmeadow-a1b2"
	Created     string // ISO 8601
	Order       int    // tab order, 0-based
	// Extra holds every other field (and a known one of an unexpected type),
	// verbatim. A known field found here is written from here, not from the typed
	// field: delete it from Extra to write, say, a renumbered Order.
	Extra map[string]json.RawMessage

	keys     []string // key order as read
	hasOrder bool
}

// collabRecordKeys are the record fields in the order the tool writes them.
var collabRecordKeys = []string{"id", "name", "tmuxSession", "created", "order"}

// UnmarshalJSON reads a record: a JSON object; fields of an unexpected type go to
// Extra unchanged.
func (r *CollabRecord) UnmarshalJSON(data []byte) error {
	fields, keys, err := decodeOrderedObject(data)
	if err != nil {
		return fmt.Errorf("decode collab record: %w", err)
	}
	*r = CollabRecord{keys: keys}
	for k, v := range fields {
		ok := false
		switch k {
		case "id":
			ok = looseString(v, &r.ID)
		case "name":
			ok = looseString(v, &r.Name)
		case "tmuxSession":
			ok = looseString(v, &r.TmuxSession)
		case "created":
			ok = looseString(v, &r.Created)
		case "order":
			var o int
			if len(v) > 0 && v[0] != 'n' && json.Unmarshal(v, &o) == nil {
				r.Order, r.hasOrder, ok = o, true, true
			}
		}
		if !ok {
			if r.Extra == nil {
				r.Extra = map[string]json.RawMessage{}
			}
			r.Extra[k] = v
		}
	}
	return nil
}

// MarshalJSON writes the record with its fields in the order they were read; new
// fields follow in the tool's order, then Extra's sorted. Order is always written;
// an empty string field only if the record had it.
func (r CollabRecord) MarshalJSON() ([]byte, error) {
	fields := map[string]json.RawMessage{}
	for k, v := range r.Extra {
		fields[k] = v
	}
	had := map[string]bool{}
	for _, k := range r.keys {
		had[k] = true
	}
	str := func(k, v string) {
		if _, wrong := r.Extra[k]; wrong || (v == "" && !had[k]) {
			return
		}
		b, _ := marshalNoEscape(v)
		fields[k] = b
	}
	str("id", r.ID)
	str("name", r.Name)
	str("tmuxSession", r.TmuxSession)
	str("created", r.Created)
	if _, wrong := r.Extra["order"]; !wrong {
		b, _ := marshalNoEscape(r.Order)
		fields["order"] = b
	}
	return encodeOrderedObject(fields, r.keys, collabRecordKeys)
}

// UnmarshalJSON reads a terminal-sessions.json strictly: a JSON object whose
// "sessions" (if present) is an array of objects.
func (c *CollabFile) UnmarshalJSON(data []byte) error {
	fields, keys, err := decodeOrderedObject(data)
	if err != nil {
		return fmt.Errorf("decode collab file: %w", err)
	}
	*c = CollabFile{keys: keys}
	for k, v := range fields {
		switch k {
		case "sessions":
			if string(v) == "null" {
				continue
			}
			if len(v) == 0 || v[0] != '[' {
				return errors.New("decode collab file: sessions is not an array")
			}
			if err := json.Unmarshal(v, &c.Sessions); err != nil {
				return err
			}
			continue
		case "lastModified":
			if looseString(v, &c.LastModified) {
				continue
			}
		}
		if c.Extra == nil {
			c.Extra = map[string]json.RawMessage{}
		}
		c.Extra[k] = v
	}
	return nil
}

// MarshalJSON writes the file compactly with its fields in the order they were read.
func (c CollabFile) MarshalJSON() ([]byte, error) {
	fields := map[string]json.RawMessage{}
	for k, v := range c.Extra {
		fields[k] = v
	}
	sessions := c.Sessions
	if sessions == nil {
		sessions = []CollabRecord{}
	}
	b, err := marshalNoEscape(sessions)
	if err != nil {
		return nil, err
	}
	fields["sessions"] = b
	if _, wrong := c.Extra["lastModified"]; !wrong && c.LastModified != "" {
		b, _ := marshalNoEscape(c.LastModified)
		fields["lastModified"] = b
	}
	return encodeOrderedObject(fields, c.keys, []string{"sessions", "lastModified"})
}

// Encode renders the file the way the tool writes it (JSON.stringify(state, null,
// 2): two-space indent, no trailing newline).
func (c CollabFile) Encode() ([]byte, error) {
	compact, err := c.MarshalJSON()
	if err != nil {
		return nil, err
	}
	var b bytes.Buffer
	if err := json.Indent(&b, compact, "", "  "); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

// DecodeCollabFile parses the bytes of a terminal-sessions.json (see
// CollabFile.UnmarshalJSON).
func DecodeCollabFile(data []byte) (CollabFile, error) {
	var c CollabFile
	if err := c.UnmarshalJSON(bytes.TrimSpace(data)); err != nil {
		return CollabFile{}, err
	}
	return c, nil
}

// ReadCollabFile reads and parses a terminal-sessions.json, keeping unknown fields.
func ReadCollabFile(path string) (CollabFile, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return CollabFile{}, fmt.Errorf("read collab file: %w", err)
	}
	c, err := DecodeCollabFile(data)
	if err != nil {
		return CollabFile{}, fmt.Errorf("%s: %w", path, err)
	}
	return c, nil
}

// decodeOrderedObject splits a JSON object into its fields and its keys in order
// (a repeated key keeps its last value and its first position).
func decodeOrderedObject(data []byte) (map[string]json.RawMessage, []string, error) {
	data = bytes.TrimSpace(data)
	if len(data) == 0 || data[0] != '{' {
		return nil, nil, ErrNotObject
	}
	if !json.Valid(data) {
		var v any
		return nil, nil, json.Unmarshal(data, &v) // the syntax error, with its offset
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.Token() // '{'
	fields := map[string]json.RawMessage{}
	var keys []string
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, nil, err
		}
		k, _ := tok.(string)
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return nil, nil, err
		}
		if _, dup := fields[k]; !dup {
			keys = append(keys, k)
		}
		fields[k] = bytes.TrimSpace(v)
	}
	return fields, keys, nil
}

// encodeOrderedObject writes fields compactly: keys in order first, then those in
// known, then the rest sorted.
func encodeOrderedObject(fields map[string]json.RawMessage, order, known []string) ([]byte, error) {
	done := map[string]bool{}
	var keys []string
	add := func(k string) {
		if _, ok := fields[k]; ok && !done[k] {
			done[k] = true
			keys = append(keys, k)
		}
	}
	for _, k := range order {
		add(k)
	}
	for _, k := range known {
		add(k)
	}
	var rest []string
	for k := range fields {
		if !done[k] {
			rest = append(rest, k)
		}
	}
	sort.Strings(rest)
	keys = append(keys, rest...)
	var b bytes.Buffer
	b.WriteByte('{')
	for i, k := range keys {
		if i > 0 {
			b.WriteByte(',')
		}
		kb, err := marshalNoEscape(k)
		if err != nil {
			return nil, err
		}
		b.Write(kb)
		b.WriteByte(':')
		var v bytes.Buffer
		if err := json.Compact(&v, fields[k]); err != nil {
			return nil, fmt.Errorf("encode field %q: %w", k, err)
		}
		b.Write(v.Bytes())
	}
	b.WriteByte('}')
	return b.Bytes(), nil
}
