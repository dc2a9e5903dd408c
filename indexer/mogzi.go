package indexer

import (
	"bytes"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"io/fs"
	"path/filepath"
	"strings"
	"time"
)

// Mogzi (SPEC §3.7): one directory per session, <root>/<uuid>/session.json plus
// <uuid>/attachments/. Mogzi writes session.tmp and moves it over session.json.
// The session is the directory: its File is <root>/<uuid>, its size counts the
// attachments, and the janitor archives the whole directory.

func init() { register(mogziLayout{}) }

type mogziLayout struct{}

const (
	mogziSessionFile    = "session.json"
	mogziAttachmentsDir = "attachments"
)

// mogziDirRE matches a session directory: Mogzi names it after its Guid ("D" format).
var mogziDirRE = lazyRE(`^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$`)

func (mogziLayout) Name() string { return "mogzi" }

// Classify maps the session directory itself, its session.json and anything under
// its attachments/ to the unit <uuid>/session.json, so a changed attachment makes
// the indexer re-read the session, and a catalog File (the directory) maps back to
// its unit. session.tmp and everything else is no unit.
func (mogziLayout) Classify(rel string) (string, UnitKind) {
	parts := strings.Split(rel, "/")
	if !mogziDirRE().MatchString(parts[0]) {
		return "", UnitNone
	}
	unit := parts[0] + "/" + mogziSessionFile
	switch {
	case len(parts) == 1,
		len(parts) == 2 && parts[1] == mogziSessionFile,
		len(parts) >= 2 && parts[1] == mogziAttachmentsDir:
		return unit, UnitDocument
	}
	return "", UnitNone
}

// SkipDir keeps the session directories and their attachments/ trees; other
// directories (anything not named like a session, or other subdirectories of one)
// are neither watched nor walked.
func (mogziLayout) SkipDir(rel string) bool {
	parts := strings.Split(rel, "/")
	if !mogziDirRE().MatchString(parts[0]) {
		return true
	}
	return len(parts) > 1 && parts[1] != mogziAttachmentsDir
}

// ProjectDir: Mogzi sessions name no project.
func (mogziLayout) ProjectDir(string) string { return "" }

// mogziSession is the part of Mogzi's session.json the summary needs. Decoding is
// strict (a field of the wrong type is a parse error) because Mogzi's own
// System.Text.Json reader rejects such a file too.
type mogziSession struct {
	ID             string         `json:"id"`
	Name           string         `json:"name"`
	CreatedAt      string         `json:"createdAt"`
	LastModifiedAt string         `json:"lastModifiedAt"`
	History        []mogziMessage `json:"history"`
	InitialPrompt  string         `json:"initialPrompt"`
	UsageMetrics   *mogziUsage    `json:"usageMetrics"`
	// Not written by Mogzi today; read when present.
	Model    string `json:"model"`
	Provider string `json:"provider"`
}

type mogziMessage struct {
	Role    string `json:"role"`
	Content string `json:"content"`
}

type mogziUsage struct {
	InputTokens      int64 `json:"inputTokens"`
	OutputTokens     int64 `json:"outputTokens"`
	CacheReadTokens  int64 `json:"cacheReadTokens"`
	CacheWriteTokens int64 `json:"cacheWriteTokens"`
	RequestCount     int64 `json:"requestCount"`
}

// mogziDetails is what a session's tail carries (and `show --json` prints).
type mogziDetails struct {
	Attachments      int    `json:"attachments,omitempty"`
	AttachmentBytes  int64  `json:"attachmentBytes,omitempty"`
	InputTokens      int64  `json:"inputTokens,omitempty"`
	OutputTokens     int64  `json:"outputTokens,omitempty"`
	CacheReadTokens  int64  `json:"cacheReadTokens,omitempty"`
	CacheWriteTokens int64  `json:"cacheWriteTokens,omitempty"`
	RequestCount     int64  `json:"requestCount,omitempty"`
	ParseError       string `json:"parseError,omitempty"`
}

// ParseDocument summarizes one session directory. It never fails: a session.json
// that does not parse is listed with Corrupt set (id = the directory name, times
// from the file's mtime), so it is neither dropped nor retired by age.
func (mogziLayout) ParseDocument(f FileFacts, data []byte) ([]*Session, error) {
	dir := pathDir(f.Unit)
	sessDir := filepath.Join(f.Root, filepath.FromSlash(dir))
	count, attBytes := mogziAttachments(filepath.Join(sessDir, mogziAttachmentsDir))
	mtime := FormatTime(f.Mtime)
	s := &Session{Type: TypeMain, File: sessDir, SizeBytes: int64(len(data)) + attBytes, Tail: &Tail{}}
	det := mogziDetails{Attachments: count, AttachmentBytes: attBytes}

	m, err := decodeMogziSession(data)
	if err != nil {
		s.ID = dir
		s.Corrupt = true
		s.CreatedAt, s.LastActiveAt = mtime, mtime
		det.ParseError = Prompt(err.Error()) // one line, at most MaxPromptChars
	} else {
		s.ID = firstNonEmpty(strings.TrimSpace(m.ID), dir)
		s.Title = m.Name
		s.FirstPrompt = Prompt(m.InitialPrompt)
		if s.FirstPrompt == "" {
			for _, h := range m.History {
				if strings.EqualFold(h.Role, "user") {
					if p := Prompt(h.Content); p != "" {
						s.FirstPrompt = p
						break
					}
				}
			}
		}
		s.MessageCount = len(m.History)
		created := normLooseTime(m.CreatedAt)
		s.CreatedAt = firstNonEmpty(created, mtime)
		s.LastActiveAt = firstNonEmpty(normLooseTime(m.LastModifiedAt), mtime)
		s.Model, s.Provider = m.Model, m.Provider
		if u := m.UsageMetrics; u != nil {
			det.InputTokens, det.OutputTokens = u.InputTokens, u.OutputTokens
			det.CacheReadTokens, det.CacheWriteTokens = u.CacheReadTokens, u.CacheWriteTokens
			det.RequestCount = u.RequestCount
		}
	}
	if st, err := marshalNoEscape(det); err == nil && string(st) != "{}" {
		s.Tail.State = st
	}
	return []*Session{s}, nil
}

// decodeMogziSession parses session.json: one JSON object, every known field of
// the expected type.
func decodeMogziSession(data []byte) (*mogziSession, error) {
	t := bytes.TrimSpace(data)
	if len(t) == 0 || t[0] != '{' {
		return nil, ErrNotObject
	}
	var m mogziSession
	if err := json.Unmarshal(t, &m); err != nil {
		return nil, err
	}
	return &m, nil
}

// DepStamp summarizes a session's attachments (name, size and mtime of each file)
// so a rescan notices an attachment that changed while session.json did not.
func (mogziLayout) DepStamp(root, unit string) string {
	dir := filepath.Join(root, filepath.FromSlash(pathDir(unit)), mogziAttachmentsDir)
	h := fnv.New64a()
	n := 0
	filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() {
			return nil
		}
		if fi, err := d.Info(); err == nil {
			n++
			rel, _ := filepath.Rel(dir, p)
			fmt.Fprintf(h, "%s\x00%d\x00%d\x00", rel, fi.Size(), fi.ModTime().UnixNano())
		}
		return nil
	})
	if n == 0 {
		return ""
	}
	return fmt.Sprintf("%d:%016x", n, h.Sum64())
}

// mogziAttachments counts the regular files under an attachments directory and
// their bytes. Symlinks are not followed; unreadable entries are left out.
func mogziAttachments(dir string) (int, int64) {
	n, total := 0, int64(0)
	filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			if d != nil && d.IsDir() && p != dir {
				return filepath.SkipDir
			}
			return nil
		}
		if !d.Type().IsRegular() {
			return nil
		}
		if fi, err := d.Info(); err == nil {
			n++
			total += fi.Size()
		}
		return nil
	})
	return n, total
}

// mogziLocalLayouts are the zone-less forms .NET writes for a DateTime whose Kind
// is not Utc; sessionwatch reads them as UTC.
var mogziLocalLayouts = []string{"2006-01-02T15:04:05.999999999", "2006-01-02 15:04:05.999999999"}

// normLooseTime is NormTime that also reads a timestamp without a zone (as UTC) and
// treats .NET's DateTime.MinValue (year 1), and years TimeLayout cannot hold, as no
// time.
func normLooseTime(s string) string {
	s = strings.TrimSpace(s)
	if s == "" {
		return ""
	}
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		for _, l := range mogziLocalLayouts {
			if t, err = time.ParseInLocation(l, s, time.UTC); err == nil {
				break
			}
		}
	}
	if err != nil || t.UTC().Year() <= 1 || t.UTC().Year() > 9999 {
		return ""
	}
	return FormatTime(t)
}
