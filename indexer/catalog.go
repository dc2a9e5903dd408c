package indexer

import (
	"bytes"
	"encoding/json"
	"path/filepath"
	"slices"
	"strings"
)

// CatalogName is the file name of every catalog and of the agents' native indexes.
const CatalogName = "sessions-index.json"

// CatalogVersion is the schema version written into every catalog.
const CatalogVersion = 1

// Session types.
const (
	TypeMain     = "main"
	TypeSubagent = "subagent"
)

// Catalog is sessionwatch's own index of one (source, project): SPEC §4.
type Catalog struct {
	Version   int        `json:"version"`
	Generator string     `json:"generator"`
	Source    string     `json:"source"`
	Layout    string     `json:"layout"`
	Project   string     `json:"project"`
	UpdatedAt string     `json:"updatedAt"`
	Sessions  []*Session `json:"sessions"`
}

// Session is one conversation as the catalog records it.
type Session struct {
	ID           string `json:"id"`
	Type         string `json:"type"`
	ParentID     string `json:"parentId,omitempty"`
	File         string `json:"file"`
	Title        string `json:"title,omitempty"`
	FirstPrompt  string `json:"firstPrompt"`
	CreatedAt    string `json:"createdAt"`
	LastActiveAt string `json:"lastActiveAt"`
	MessageCount int    `json:"messageCount"`
	SizeBytes    int64  `json:"sizeBytes"`
	Provider     string `json:"provider,omitempty"`
	Model        string `json:"model,omitempty"`
	GitBranch    string `json:"gitBranch,omitempty"`
	Invalid      bool   `json:"invalid,omitempty"`
	Corrupt      bool   `json:"corrupt,omitempty"`
	// Hidden marks a session the agent's own picker leaves out (nothing to resume
	// or title it by); it is indexed and retired as usual but listed only on request.
	Hidden       bool  `json:"hidden,omitempty"`
	SkippedLines int   `json:"skippedLines,omitempty"`
	Tail         *Tail `json:"tail,omitempty"`

	// Project is the effective project (the catalog it is filed under). It is not
	// serialized per session: the catalog's top-level project holds it.
	Project string `json:"-"`
	// Dir is the project directory relative to the source root that holds the
	// session (where its native index lives); "" for layouts without one.
	Dir string `json:"-"`

	acc Accumulator // layout state behind a line unit, for native projections
}

// Tail is the internal resume state of a session's file: identity, how far it has
// been consumed, and the layout's accumulator (flattened into the same object).
type Tail struct {
	Dev    uint64 `json:"dev"`
	Ino    uint64 `json:"ino"`
	Offset int64  `json:"offset"`
	Mtime  int64  `json:"mtime"` // unix nanoseconds
	Size   int64  `json:"size"`
	// LongLine is set while the bytes from Offset on belong to a line longer than
	// MaxLineBytes that is being skipped.
	LongLine bool `json:"longLine,omitempty"`
	// Fp fingerprints the bytes just before Offset, so a file truncated and regrown
	// past Offset (same inode, no shrink seen) is detected and re-read.
	Fp string `json:"fp,omitempty"`
	// Hfp fingerprints the file's first bytes (up to headWindow, never past
	// Offset), so growth whose head was rewritten is detected and re-read.
	Hfp string `json:"hfp,omitempty"`
	// Dep is the DependencyStamper stamp of the unit's other files.
	Dep string `json:"dep,omitempty"`
	// OwnProject is the project the session's own data names ("" if it names none).
	OwnProject string `json:"ownProject,omitempty"`
	// State is the layout accumulator, a JSON object merged into the tail object.
	// It is always compact (encoding/json's output, or compacted when a catalog is
	// read), so appendSession can copy it as is.
	State json.RawMessage `json:"-"`
}

type tailFixed struct {
	Dev        uint64 `json:"dev"`
	Ino        uint64 `json:"ino"`
	Offset     int64  `json:"offset"`
	Mtime      int64  `json:"mtime"`
	Size       int64  `json:"size"`
	LongLine   bool   `json:"longLine,omitempty"`
	Fp         string `json:"fp,omitempty"`
	Hfp        string `json:"hfp,omitempty"`
	Dep        string `json:"dep,omitempty"`
	OwnProject string `json:"ownProject,omitempty"`
}

// tailKeys are the fixed keys of a tail object; a layout accumulator must not use them.
var tailKeys = map[string]bool{"dev": true, "ino": true, "offset": true, "mtime": true, "size": true, "longLine": true, "fp": true, "hfp": true, "dep": true, "ownProject": true}

// MarshalJSON writes the fixed fields followed by the accumulator's keys.
func (t Tail) MarshalJSON() ([]byte, error) {
	fixed, err := marshalNoEscape(tailFixed{t.Dev, t.Ino, t.Offset, t.Mtime, t.Size, t.LongLine, t.Fp, t.Hfp, t.Dep, t.OwnProject})
	if err != nil {
		return nil, err
	}
	st := bytes.TrimSpace(t.State)
	if len(st) < 2 || st[0] != '{' || string(st) == "{}" {
		return fixed, nil
	}
	out := make([]byte, 0, len(fixed)+len(st))
	out = append(out, fixed[:len(fixed)-1]...)
	out = append(out, ',')
	out = append(out, st[1:]...)
	return out, nil
}

// UnmarshalJSON reads the fixed fields and keeps the rest, in its original order and
// bytes, as the accumulator state (so an untouched session re-encodes identically).
func (t *Tail) UnmarshalJSON(data []byte) error {
	var f tailFixed
	if err := json.Unmarshal(data, &f); err != nil {
		return err
	}
	*t = Tail{Dev: f.Dev, Ino: f.Ino, Offset: f.Offset, Mtime: f.Mtime, Size: f.Size, LongLine: f.LongLine, Fp: f.Fp, Hfp: f.Hfp, Dep: f.Dep, OwnProject: f.OwnProject}
	dec := json.NewDecoder(bytes.NewReader(data))
	if _, err := dec.Token(); err != nil { // '{'
		return err
	}
	var st bytes.Buffer
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return err
		}
		key, _ := tok.(string)
		var val json.RawMessage
		if err := dec.Decode(&val); err != nil {
			return err
		}
		if tailKeys[key] {
			continue
		}
		if st.Len() == 0 {
			st.WriteByte('{')
		} else {
			st.WriteByte(',')
		}
		kb, _ := marshalNoEscape(key)
		st.Write(kb)
		st.WriteByte(':')
		st.Write(val)
	}
	if st.Len() > 0 {
		st.WriteByte('}')
		var compact bytes.Buffer
		compact.Grow(st.Len()) // kept for the session's life: no slack
		if err := json.Compact(&compact, st.Bytes()); err != nil {
			return err
		}
		t.State = compact.Bytes()
	}
	return nil
}

// SortSessions orders sessions newest first by lastActiveAt, then by id and file so
// the order is total.
func SortSessions(ss []*Session) {
	slices.SortStableFunc(ss, func(a, b *Session) int {
		if c := strings.Compare(b.LastActiveAt, a.LastActiveAt); c != 0 {
			return c
		}
		if c := strings.Compare(a.ID, b.ID); c != 0 {
			return c
		}
		return strings.Compare(a.File, b.File)
	})
}

// Encode renders the catalog deterministically: a header, then one session per line,
// without the sessions' resume state (EncodeWithResume renders that too). UpdatedAt
// is set to the newest lastActiveAt so a rebuild reproduces it exactly.
func (c *Catalog) Encode() ([]byte, error) {
	cat, _, err := c.encode(false)
	return cat, err
}

// EncodeWithResume renders the catalog (as Encode) and its resume file: the
// sessions' Tail, each tied to its catalog line by a checksum (ResumeName).
func (c *Catalog) EncodeWithResume() (catalog, resume []byte, err error) {
	return c.appendEncoded(nil, nil, true)
}

// AppendEncoded is EncodeWithResume appending to cat and res (the daemon's
// flushes render into buffers they reuse rather than allocate each time).
func (c *Catalog) AppendEncoded(cat, res []byte) (catalog, resume []byte, err error) {
	return c.appendEncoded(cat, res, true)
}

func (c *Catalog) encode(withResume bool) (catalog, resume []byte, err error) {
	return c.appendEncoded(nil, nil, withResume)
}

func (c *Catalog) appendEncoded(b, r []byte, withResume bool) (catalog, resume []byte, err error) {
	SortSessions(c.Sessions)
	c.UpdatedAt = ""
	if len(c.Sessions) > 0 {
		c.UpdatedAt = c.Sessions[0].LastActiveAt
	}
	head := *c
	head.Sessions = nil
	hb, err := marshalNoEscape(head)
	if err != nil {
		return nil, nil, err
	}
	hb = bytes.TrimSuffix(hb, []byte("null}"))
	size, rsize := len(hb)+8, len(hb)+32
	for _, s := range c.Sessions {
		size += 300 + len(s.File) + len(s.FirstPrompt) + len(s.Title)
		if withResume && s.Tail != nil {
			rsize += 260 + len(s.File) + len(s.ID) + len(s.Tail.State)
		}
	}
	b = slices.Grow(b, size)
	b = append(b, hb...)
	b = append(b, '[')
	if withResume {
		r = slices.Grow(r, rsize)
		r = append(r, resumeHeader(c)...)
	}
	n := 0 // resume entries
	for i, s := range c.Sessions {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, '\n')
		start := len(b)
		b = appendSessionSummary(b, s)
		b = append(b, '}')
		if withResume && s.Tail != nil {
			if n > 0 {
				r = append(r, ',')
			}
			r = append(r, '\n')
			r = appendResumeEntry(r, s, lineSum(b[start:]))
			n++
		}
	}
	if len(c.Sessions) > 0 {
		b = append(b, '\n')
	}
	if withResume {
		r = append(r, '\n')
		r = append(r, resumeStatesLine...)
		r = append(r, '\n')
		// The states follow every entry: a second pass appends them in place
		// rather than collecting them in a buffer of their own.
		k := 0
		for _, s := range c.Sessions {
			if s.Tail == nil {
				continue
			}
			if k > 0 {
				r = append(r, ",\n"...)
			}
			r = appendResumeState(r, s.Tail)
			k++
		}
		if n > 0 {
			r = append(r, '\n')
		}
		r = append(r, "]}\n"...)
	}
	return append(b, "]}\n"...), r, nil
}

// CatalogDir is where the catalogs of one source live.
func CatalogDir(stateDir, source string) string {
	return filepath.Join(stateDir, "index", source)
}

func marshalNoEscape(v any) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n")), nil
}
