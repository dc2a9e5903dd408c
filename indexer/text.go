package indexer

import (
	"strings"
	"time"
	"unicode"
	"unicode/utf8"
)

// TimeLayout is how every time in a catalog or native index is written: RFC 3339,
// UTC, milliseconds.
const TimeLayout = "2006-01-02T15:04:05.000Z"

// MaxPromptChars is how many characters of a first prompt are kept before "…".
const MaxPromptChars = 200

// FormatTime renders t in TimeLayout.
func FormatTime(t time.Time) string { return t.UTC().Format(TimeLayout) }

// NormTime parses an RFC 3339 timestamp and renders it in TimeLayout; "" if it does
// not parse.
func NormTime(s string) string {
	if s == "" {
		return ""
	}
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return ""
	}
	return FormatTime(t)
}

// ParseTime parses a TimeLayout (or any RFC 3339) string; the zero time if it does not.
func ParseTime(s string) time.Time {
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return time.Time{}
	}
	return t
}

// Prompt collapses every run of whitespace to one space, trims, and cuts the text to
// MaxPromptChars characters plus "…".
func Prompt(s string) string {
	var b strings.Builder
	space := false
	n := 0
	for _, r := range s {
		if unicode.IsSpace(r) {
			space = b.Len() > 0
			continue
		}
		if r == utf8.RuneError {
			continue
		}
		if space {
			if n == MaxPromptChars {
				b.WriteString("…")
				return b.String()
			}
			b.WriteByte(' ')
			n++
			space = false
		}
		if n == MaxPromptChars {
			b.WriteString("…")
			return b.String()
		}
		b.WriteRune(r)
		n++
	}
	return b.String()
}
