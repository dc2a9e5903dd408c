package indexer

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"
)

// HyperYOLO (SPEC §3.6): the root is one file, ~/.config/hyperyolo/sessions.json,
// holding a JSON object that maps hyper_<8 hex> to a record; every record is a
// session. HyperYOLO rewrites it under a lock directory (sessions.json.lock) via
// sessions.json.tmp, fsync and rename.

func init() { register(hyperyoloLayout{}) }

type hyperyoloLayout struct{}

// hyperyoloKeyRE matches a record key: "hyper_" and 4 random bytes in hex.
var hyperyoloKeyRE = lazyRE(`^hyper_[0-9a-fA-F]{8}$`)

func (hyperyoloLayout) Name() string { return "hyperyolo" }

// RootIsFile: the source root is the store file itself.
func (hyperyoloLayout) RootIsFile() bool { return true }

// Classify: the store file (the only path the indexer hands over for a file root)
// is the one unit. Its lock directory and temp file are not.
func (hyperyoloLayout) Classify(rel string) (string, UnitKind) {
	if rel == "" || rel == "." || rel == ".." || strings.Contains(rel, "/") ||
		strings.HasSuffix(rel, ".tmp") || strings.HasSuffix(rel, ".lock") {
		return "", UnitNone
	}
	return rel, UnitDocument
}

// SkipDir: a file root is never walked.
func (hyperyoloLayout) SkipDir(string) bool { return true }

// ProjectDir: HyperYOLO records name no project.
func (hyperyoloLayout) ProjectDir(string) string { return "" }

// HyperyoloRecord is one record of the HyperYOLO store, as the tool writes it.
type HyperyoloRecord struct {
	Backend    string `json:"backend"`              // "claude", "codex" or "gemini"
	NativeID   string `json:"nativeId"`             // the backend's own session id
	CreatedAt  string `json:"createdAt"`            // ISO 8601
	LastSeenAt string `json:"lastSeenAt,omitempty"` // ISO 8601, absent until resumed
	LastPrompt string `json:"lastPrompt,omitempty"`
	// Invalid is the tool's own flag for a session its backend CLI rejected.
	Invalid bool `json:"invalid,omitempty"`
	// LastResumeStatus is kept verbatim ("ok", "rejected", "unknown" in the tool's
	// design notes; any JSON value is accepted).
	LastResumeStatus json.RawMessage `json:"lastResumeStatus,omitempty"`
}

// DecodeHyperyoloRecord reads one record's JSON value. A field of an unexpected
// type is left zero rather than rejecting the record; only a value that is not a
// JSON object is an error.
func DecodeHyperyoloRecord(raw json.RawMessage) (HyperyoloRecord, error) {
	var r HyperyoloRecord
	fields, err := decodeObjectFields(raw)
	if err != nil {
		return r, fmt.Errorf("decode hyperyolo record: %w", err)
	}
	looseString(fields["backend"], &r.Backend)
	looseString(fields["nativeId"], &r.NativeID)
	looseString(fields["createdAt"], &r.CreatedAt)
	looseString(fields["lastSeenAt"], &r.LastSeenAt)
	looseString(fields["lastPrompt"], &r.LastPrompt)
	looseBool(fields["invalid"], &r.Invalid)
	if v := bytes.TrimSpace(fields["lastResumeStatus"]); len(v) > 0 && string(v) != "null" {
		r.LastResumeStatus = v
	}
	return r, nil
}

// ErrNotObject is returned when a JSON document or value that must be an object
// is something else.
var ErrNotObject = errors.New("not a JSON object")

// DecodeHyperyoloStore parses the bytes of a HyperYOLO store: every entry's value,
// verbatim, and the keys in file order. Like HyperYOLO itself it reads an empty (or
// all-whitespace) file as an empty store. A repeated key keeps its last value, as
// JSON.parse does. Anything but one JSON object is an error.
func DecodeHyperyoloStore(data []byte) (map[string]json.RawMessage, []string, error) {
	recs := map[string]json.RawMessage{}
	if len(bytes.TrimSpace(data)) == 0 {
		return recs, nil, nil
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	tok, err := dec.Token()
	if err != nil {
		return nil, nil, fmt.Errorf("decode hyperyolo store: %w", err)
	}
	if d, ok := tok.(json.Delim); !ok || d != '{' {
		return nil, nil, fmt.Errorf("decode hyperyolo store: %w", ErrNotObject)
	}
	var keys []string
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, nil, fmt.Errorf("decode hyperyolo store: %w", err)
		}
		key, _ := tok.(string)
		var val json.RawMessage
		if err := dec.Decode(&val); err != nil {
			return nil, nil, fmt.Errorf("decode hyperyolo store: record %q: %w", key, err)
		}
		if _, dup := recs[key]; !dup {
			keys = append(keys, key)
		}
		recs[key] = val
	}
	if _, err := dec.Token(); err != nil { // '}'
		return nil, nil, fmt.Errorf("decode hyperyolo store: %w", err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, nil, errors.New("decode hyperyolo store: data after the top-level object")
	}
	return recs, keys, nil
}

// ReadHyperyoloStore reads the store file at path and returns every entry's value
// verbatim, keyed as in the file, so a rewrite can keep every record it does not
// retire exactly as it was (see EncodeHyperyoloStore). A missing file is an error
// wrapping fs.ErrNotExist; an empty file is an empty store.
func ReadHyperyoloStore(path string) (map[string]json.RawMessage, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read hyperyolo store: %w", err)
	}
	recs, _, err := DecodeHyperyoloStore(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return recs, nil
}

// EncodeHyperyoloStore renders records the way HyperYOLO writes its store
// (JSON.stringify(data, null, 2): two-space indent, no trailing newline). Keys
// listed in order come first, in that order; the rest follow sorted. Values are
// re-indented only: their content, string bytes and number literals are unchanged.
func EncodeHyperyoloStore(records map[string]json.RawMessage, order []string) ([]byte, error) {
	keys := make([]string, 0, len(records))
	done := map[string]bool{}
	for _, k := range order {
		if _, ok := records[k]; ok && !done[k] {
			done[k] = true
			keys = append(keys, k)
		}
	}
	var rest []string
	for k := range records {
		if !done[k] {
			rest = append(rest, k)
		}
	}
	sort.Strings(rest)
	keys = append(keys, rest...)
	if len(keys) == 0 {
		return []byte("{}"), nil
	}
	var b bytes.Buffer
	b.WriteString("{")
	for i, k := range keys {
		if i > 0 {
			b.WriteByte(',')
		}
		kb, err := marshalNoEscape(k)
		if err != nil {
			return nil, err
		}
		b.WriteString("\n  ")
		b.Write(kb)
		b.WriteString(": ")
		if err := json.Indent(&b, records[k], "  ", "  "); err != nil {
			return nil, fmt.Errorf("encode hyperyolo record %q: %w", k, err)
		}
	}
	b.WriteString("\n}")
	return b.Bytes(), nil
}

// hyperyoloDetails is what a session's tail carries (and `show --json` prints).
type hyperyoloDetails struct {
	Backend          string          `json:"backend,omitempty"`
	NativeID         string          `json:"nativeId,omitempty"`
	LastResumeStatus json.RawMessage `json:"lastResumeStatus,omitempty"`
	LastSeenAt       string          `json:"lastSeenAt,omitempty"`
}

// ParseDocument lists one session per record. Entries whose key is not
// hyper_<8 hex> or whose value is not an object are skipped; their number is the
// skippedLines of the first session in catalog order (the newest), so summing
// skippedLines over the catalog counts them once. A file that does not parse is an
// error: the indexer then keeps the sessions it had.
func (hyperyoloLayout) ParseDocument(f FileFacts, data []byte) ([]*Session, error) {
	recs, keys, err := DecodeHyperyoloStore(data)
	if err != nil {
		return nil, err
	}
	mtime := FormatTime(f.Mtime)
	var ss []*Session
	skipped := 0
	for _, k := range keys {
		raw := recs[k]
		if !hyperyoloKeyRE().MatchString(k) {
			skipped++
			continue
		}
		r, err := DecodeHyperyoloRecord(raw)
		if err != nil {
			skipped++
			continue
		}
		ss = append(ss, hyperyoloSession(k, r, raw, mtime))
	}
	SortSessions(ss)
	if len(ss) > 0 {
		ss[0].SkippedLines = skipped
	}
	return ss, nil
}

// hyperyoloSession summarizes one record (SPEC §3.6).
func hyperyoloSession(key string, r HyperyoloRecord, raw json.RawMessage, mtime string) *Session {
	created := normLooseTime(r.CreatedAt)
	s := &Session{
		ID:           key,
		Type:         TypeMain,
		FirstPrompt:  Prompt(r.LastPrompt),
		CreatedAt:    firstNonEmpty(created, mtime),
		LastActiveAt: firstNonEmpty(normLooseTime(r.LastSeenAt), created, mtime),
		SizeBytes:    int64(len(raw)),
		Provider:     r.Backend,
		Invalid:      r.Invalid,
		Tail:         &Tail{},
	}
	st, err := marshalNoEscape(hyperyoloDetails{Backend: r.Backend, NativeID: r.NativeID, LastResumeStatus: r.LastResumeStatus, LastSeenAt: r.LastSeenAt})
	if err == nil && string(st) != "{}" {
		s.Tail.State = st
	}
	return s
}

// decodeObjectFields splits a JSON object into its fields (a repeated key keeps its
// last value); anything else is ErrNotObject or a syntax error.
func decodeObjectFields(raw []byte) (map[string]json.RawMessage, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || raw[0] != '{' {
		return nil, ErrNotObject
	}
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(raw, &fields); err != nil {
		return nil, err
	}
	return fields, nil
}

// looseString sets *dst when raw is a JSON string; otherwise it leaves *dst alone.
func looseString(raw json.RawMessage, dst *string) bool {
	var s string
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || raw[0] != '"' || json.Unmarshal(raw, &s) != nil {
		return false
	}
	*dst = s
	return true
}

// looseBool sets *dst when raw is a JSON boolean.
func looseBool(raw json.RawMessage, dst *bool) bool {
	switch string(bytes.TrimSpace(raw)) {
	case "true":
		*dst = true
	case "false":
		*dst = false
	default:
		return false
	}
	return true
}
