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
	if _, ok := timeLayoutDate(s); ok {
		return s // in TimeLayout already: it renders as itself
	}
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return ""
	}
	return FormatTime(t)
}

// ParseTime parses a TimeLayout (or any RFC 3339) string; the zero time if it does not.
func ParseTime(s string) time.Time {
	t, _ := ParseRFC3339(s)
	return t
}

// ParseRFC3339 is time.Parse(time.RFC3339Nano, s), ok for a nil error (the zero
// time otherwise); a string in TimeLayout, as most are, is read without it.
func ParseRFC3339(s string) (time.Time, bool) {
	if d, ok := timeLayoutDate(s); ok {
		return time.Date(d[0], time.Month(d[1]), d[2], d[3], d[4], d[5], d[6]*1e6, time.UTC), true
	}
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return time.Time{}, false
	}
	return t, true
}

// timeLayoutDate reads s if it is written in TimeLayout and is a time
// time.Parse accepts (month, day of that month, hour, minute and second in
// range): year, month, day, hour, minute, second, millisecond.
func timeLayoutDate(s string) (d [7]int, ok bool) {
	// 2006-01-02T15:04:05.000Z
	if len(s) != len(TimeLayout) || s[4] != '-' || s[7] != '-' || s[10] != 'T' || s[13] != ':' || s[16] != ':' ||
		s[19] != '.' || s[23] != 'Z' {
		return d, false
	}
	for i, f := range [7][2]int{{0, 4}, {5, 7}, {8, 10}, {11, 13}, {14, 16}, {17, 19}, {20, 23}} {
		n := 0
		for _, c := range []byte(s[f[0]:f[1]]) {
			if c < '0' || c > '9' {
				return d, false
			}
			n = n*10 + int(c-'0')
		}
		d[i] = n
	}
	if d[1] < 1 || d[1] > 12 || d[2] < 1 || d[2] > daysIn(d[1], d[0]) || d[3] > 23 || d[4] > 59 || d[5] > 59 {
		return d, false
	}
	return d, true
}

// daysIn is the number of days in the month of the (proleptic Gregorian) year.
func daysIn(month, year int) int {
	switch month {
	case 2:
		if year%4 == 0 && (year%100 != 0 || year%400 == 0) {
			return 29
		}
		return 28
	case 4, 6, 9, 11:
		return 30
	}
	return 31
}

// Prompt collapses every run of whitespace to one space, trims, and cuts the text to
// MaxPromptChars characters plus "…". A prompt that is already so (the common
// one: ASCII, single spaces, short) is copied as it is; ASCII is written a
// byte at a time, without decoding it as runes.
func Prompt(s string) string {
	p, _ := promptCut(s)
	return p
}

// promptCut is Prompt(s), and whether it cut s (a character followed the
// MaxPromptChars-th kept): then it read s only up to that character, and the
// prompt of any text that starts as s does up to there is the same.
func promptCut(s string) (string, bool) {
	if promptPlain(s) {
		return strings.Clone(s), false // never a slice of the line it was read from
	}
	var b strings.Builder
	space := false
	n := 0
	for i := 0; i < len(s); {
		r := rune(s[i])
		if r < utf8.RuneSelf {
			i++
		} else {
			var w int
			r, w = utf8.DecodeRuneInString(s[i:])
			i += w
		}
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
				return b.String(), true
			}
			b.WriteByte(' ')
			n++
			space = false
		}
		if n == MaxPromptChars {
			b.WriteString("…")
			return b.String(), true
		}
		if r < utf8.RuneSelf {
			b.WriteByte(byte(r))
		} else {
			b.WriteRune(r)
		}
		n++
	}
	return b.String(), false
}

// promptPlain reports whether Prompt(s) is s: at most MaxPromptChars printable
// ASCII characters, no space first, last or next to another.
func promptPlain(s string) bool {
	if len(s) > MaxPromptChars || (len(s) > 0 && (s[0] == ' ' || s[len(s)-1] == ' ')) {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c < ' ' || c > '~' || (c == ' ' && s[i+1] == ' ') {
			return false
		}
	}
	return true
}
