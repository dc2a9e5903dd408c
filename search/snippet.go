package search

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// Snippet cuts text to one line of about width characters around the first word
// that matches q, and returns it with the byte spans (in the snippet) of every
// matching word, for highlighting. Whitespace runs become one space.
func Snippet(text string, q Query, width int) (string, [][2]int) {
	flat := flattenSpace(text)
	// The words are matched up to the end of the window only: it is known once
	// the first hit is.
	var hits [][2]int
	start, end := 0, -1
	window := func(from int) (int, int) {
		for back := 0; from > 0 && back < width/4; back++ {
			_, n := utf8.DecodeLastRuneInString(flat[:from])
			from -= n
		}
		to, n := from, 0
		for to < len(flat) && n < width {
			_, sz := utf8.DecodeRuneInString(flat[to:])
			to += sz
			n++
		}
		return from, to
	}
	eachWord(flat, func(w [2]int) bool {
		if end >= 0 && w[1] > end {
			return false
		}
		if matchesWord(flat[w[0]:w[1]], q) {
			hits = append(hits, w)
			if end < 0 {
				// Begin a little before the first hit, at a rune boundary.
				start, end = window(w[0])
			}
		}
		return true
	})
	if end < 0 {
		start, end = window(0)
	}
	prefix, suffix := "", ""
	if start > 0 {
		prefix = "…"
	}
	if end < len(flat) {
		suffix = "…"
	}
	var spans [][2]int
	for _, h := range hits {
		if h[0] >= start && h[1] <= end {
			spans = append(spans, [2]int{h[0] - start + len(prefix), h[1] - start + len(prefix)})
		}
	}
	return prefix + flat[start:end] + suffix, spans
}

// flattenSpace is strings.Join(strings.Fields(s), " ") in one pass, without
// allocating when s has nothing to change (the usual message of one line).
func flattenSpace(s string) string {
	if isFlat(s) {
		return s
	}
	var b strings.Builder
	b.Grow(len(s))
	word := -1 // start of the word being read
	for i := 0; i < len(s); {
		n, space := 1, false
		if c := s[i]; c < utf8.RuneSelf {
			space = c == ' ' || c >= '\t' && c <= '\r'
		} else {
			n, space = spaceAt(s, i)
		}
		switch {
		case space && word >= 0:
			if b.Len() > 0 {
				b.WriteByte(' ')
			}
			b.WriteString(s[word:i])
			word = -1
		case !space && word < 0:
			word = i
		}
		i += n
	}
	if word >= 0 {
		if b.Len() > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(s[word:])
	}
	return b.String()
}

// isFlat: s has no leading, trailing or repeated spaces and no whitespace but ' '.
func isFlat(s string) bool {
	prevSpace := true
	for i := 0; i < len(s); {
		if c := s[i]; c == ' ' {
			if prevSpace {
				return false
			}
			prevSpace = true
			i++
			continue
		}
		n, space := spaceAt(s, i)
		if space {
			return false
		}
		prevSpace = false
		i += n
	}
	return !prevSpace || len(s) == 0
}

// spaceAt is the length of the rune at s[i] and whether strings.Fields splits
// at it.
func spaceAt(s string, i int) (int, bool) {
	if c := s[i]; c < utf8.RuneSelf {
		return 1, c == ' ' || c >= '\t' && c <= '\r'
	}
	r, n := utf8.DecodeRuneInString(s[i:])
	return n, unicode.IsSpace(r)
}

// eachWord calls fn with the byte range of each word of s in order, until fn
// returns false.
func eachWord(s string, fn func(w [2]int) bool) {
	in := -1
	for i, r := range s {
		c := runeClass(r)
		switch {
		case c == 1 || c == 3 && in >= 0:
			if in < 0 {
				in = i
			}
		case c == 2:
			if in >= 0 {
				if !fn([2]int{in, i}) {
					return
				}
				in = -1
			}
			if !fn([2]int{i, i + utf8.RuneLen(r)}) {
				return
			}
		default:
			if in >= 0 {
				if !fn([2]int{in, i}) {
					return
				}
				in = -1
			}
		}
	}
	if in >= 0 {
		fn([2]int{in, len(s)})
	}
}

// matchesWord reports whether one word of text is (or, for a prefix, starts) one
// of q's atoms.
func matchesWord(w string, q Query) bool {
	if len(w) <= MaxTermBytes && isASCII(w) {
		// An ASCII word normalizes to itself in lower case: compare without
		// allocating (most words of most messages).
		for _, it := range q.Must {
			for _, qa := range it.Atoms {
				if !isASCII(qa.Text) {
					continue
				}
				if len(qa.Text) == len(w) && strings.EqualFold(w, qa.Text) ||
					it.Prefix && len(qa.Text) <= len(w) && strings.EqualFold(w[:len(qa.Text)], qa.Text) {
					return true
				}
			}
		}
		return false
	}
	return matchesWordNormalized(w, q)
}

// matchesWordNormalized is matchesWord through Normalize.
func matchesWordNormalized(w string, q Query) bool {
	atoms := Normalize(w)
	if len(atoms) != 1 {
		return false
	}
	a := atoms[0]
	for _, it := range q.Must {
		for _, qa := range it.Atoms {
			if qa.Text == a.Text || it.Prefix && strings.HasPrefix(a.Text, qa.Text) {
				return true
			}
		}
	}
	return false
}

// MatchesMessage reports whether a message's text satisfies q on its own: every
// item occurs and no excluded one does (show --grep).
func MatchesMessage(text string, q Query) bool {
	atoms := Normalize(text)
	for _, it := range q.Not {
		if it.Matches(atoms) {
			return false
		}
	}
	for _, it := range q.Must {
		if !it.Matches(atoms) {
			return false
		}
	}
	return true
}

func isASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= utf8.RuneSelf {
			return false
		}
	}
	return true
}
