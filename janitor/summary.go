package janitor

import (
	"unicode/utf8"

	"github.com/sessionwatch/sessionwatch/indexer"
)

// ArchiveSummary is what `list` shows of a session, kept in its archive's
// metadata so `list --archived` can show the same columns.
type ArchiveSummary struct {
	Title        string `json:"title,omitempty"`
	FirstPrompt  string `json:"firstPrompt,omitempty"`
	CreatedAt    string `json:"createdAt,omitempty"`
	LastActiveAt string `json:"lastActiveAt,omitempty"`
	MessageCount int    `json:"messageCount,omitempty"`
	SizeBytes    int64  `json:"sizeBytes,omitempty"`
	Provider     string `json:"provider,omitempty"`
	Model        string `json:"model,omitempty"`
	GitBranch    string `json:"gitBranch,omitempty"`
}

// maxSummaryText bounds the title and first prompt kept in an archive's
// metadata, which a gzip header holds in at most 64 KiB.
const maxSummaryText = 1000

// summarize is the catalog's summary of s.
func summarize(s *indexer.Session) *ArchiveSummary {
	return &ArchiveSummary{Title: cutText(s.Title, maxSummaryText), FirstPrompt: cutText(s.FirstPrompt, maxSummaryText),
		CreatedAt: s.CreatedAt, LastActiveAt: s.LastActiveAt, MessageCount: s.MessageCount, SizeBytes: s.SizeBytes,
		Provider: s.Provider, Model: s.Model, GitBranch: s.GitBranch}
}

// cutText is s cut to at most n bytes on a character boundary.
func cutText(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}
