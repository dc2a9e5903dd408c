package main

import (
	"fmt"
	"strings"
	"unicode/utf8"
)

// termSafe is the one function through which text from outside sessionwatch
// (transcripts, file names, ids, paths, store records) reaches a terminal: C0 and
// C1 control characters, DEL and ESC become visible escapes (\x1b, \u009b), as do
// bidirectional overrides (which reorder what the eye reads) and bytes that are
// not UTF-8. A prompt quoting a web page can then neither retitle nor recolour the
// user's terminal. --json output does not use it: JSON carries the exact text.
func termSafe(s string) string {
	i := 0
	for i < len(s) {
		c := s[i]
		if c < 0x20 || c == 0x7f {
			break
		}
		if c < utf8.RuneSelf {
			i++
			continue
		}
		r, n := utf8.DecodeRuneInString(s[i:])
		if unsafeRune(r, n) {
			break
		}
		i += n
	}
	if i == len(s) {
		return s
	}
	var b strings.Builder
	b.Grow(len(s) + 8)
	b.WriteString(s[:i])
	for i < len(s) {
		r, n := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && n <= 1:
			fmt.Fprintf(&b, `\x%02x`, s[i])
		case r < 0x20 || r == 0x7f:
			fmt.Fprintf(&b, `\x%02x`, r)
		case unsafeRune(r, n):
			fmt.Fprintf(&b, `\u%04x`, r)
		default:
			b.WriteString(s[i : i+n])
		}
		i += n
	}
	return b.String()
}

// unsafeRune: a C1 control, a bidirectional embedding, override or isolate, or
// (n == 1 with RuneError) an invalid byte.
func unsafeRune(r rune, n int) bool {
	switch {
	case r == utf8.RuneError && n <= 1:
		return true
	case r >= 0x80 && r <= 0x9f:
		return true
	case r >= 0x202a && r <= 0x202e, r >= 0x2066 && r <= 0x2069:
		return true
	}
	return false
}
