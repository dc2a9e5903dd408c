package search

import (
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"
)

// ErrQuery marks a query that does not parse or holds nothing to look for.
var ErrQuery = errors.New("invalid query")

// Query is a parsed search: every item of Must must occur in a session, no item of
// Not may.
type Query struct {
	Must []Item
	Not  []Item
}

// Item is one word, prefix or quoted phrase of a query.
type Item struct {
	Raw    string // as written (without the leading '-')
	Atoms  []Atom // its normalized form
	Prefix bool   // word*: the (single) atom is a prefix
}

// Lookup is one term (or prefix of terms) an item needs in a message's postings.
type Lookup struct {
	Term   string
	Prefix bool
}

// Lookups are the terms a message must hold to be a candidate for the item.
func (it Item) Lookups() []Lookup {
	if it.Prefix {
		return []Lookup{{Term: it.Atoms[0].Text, Prefix: true}}
	}
	var out []Lookup
	for i, a := range it.Atoms {
		joinedNext := i+1 < len(it.Atoms) && it.Atoms[i+1].CJK && it.Atoms[i+1].Joined
		switch {
		case !a.CJK:
			out = append(out, Lookup{Term: a.Text})
		case joinedNext:
			out = append(out, Lookup{Term: a.Text + it.Atoms[i+1].Text})
		case !a.Joined:
			// A lone CJK character: any bigram starting with it, or the character
			// alone (the last of a run).
			out = append(out, Lookup{Term: a.Text, Prefix: true})
		}
	}
	return out
}

// NeedsVerify reports whether the postings alone do not decide a match (a phrase,
// or a word that normalizes to several atoms): the message's text is then read
// back and matched with MatchPhrase.
func (it Item) NeedsVerify() bool { return !it.Prefix && len(it.Atoms) > 1 }

// Matches reports whether the item occurs in text's atoms (the brute-force rule
// the index answers).
func (it Item) Matches(text []Atom) bool {
	if it.Prefix {
		for _, a := range text {
			if strings.HasPrefix(a.Text, it.Atoms[0].Text) && a.CJK == it.Atoms[0].CJK {
				return true
			}
		}
		return false
	}
	return MatchPhrase(text, it.Atoms)
}

// MaxQueryItems bounds how many words and phrases a query may hold.
const MaxQueryItems = 32

// ParseQuery parses the query language: words (all must match), "quoted phrases",
// prefix* and -excluded (a word, prefix or phrase). Matching ignores case and
// accents; punctuation separates words, so a word like `foo.bar` is the phrase
// "foo bar".
func ParseQuery(s string) (Query, error) {
	var q Query
	i := 0
	for i < len(s) {
		r, n := utf8.DecodeRuneInString(s[i:])
		if r == ' ' || r == '\t' || r == '\n' || r == '\r' {
			i += n
			continue
		}
		neg := false
		if r == '-' {
			neg = true
			i++
			if i >= len(s) || s[i] == ' ' || s[i] == '\t' {
				continue // a lone dash means nothing
			}
		}
		var raw string
		quoted := false
		if s[i] == '"' {
			end := strings.IndexByte(s[i+1:], '"')
			if end < 0 {
				return Query{}, fmt.Errorf("%w: unterminated quote in %q", ErrQuery, s)
			}
			raw, quoted = s[i+1:i+1+end], true
			i += end + 2
		} else {
			end := strings.IndexAny(s[i:], " \t\n\r")
			if end < 0 {
				end = len(s) - i
			}
			raw = s[i : i+end]
			i += end
		}
		it := Item{Raw: raw}
		body := raw
		if !quoted && strings.HasSuffix(raw, "*") {
			body = strings.TrimRight(raw, "*")
			it.Prefix = true
		}
		it.Atoms = Normalize(body)
		if len(it.Atoms) == 0 {
			if it.Prefix && strings.TrimSpace(body) == "" {
				return Query{}, fmt.Errorf("%w: %q needs at least one letter or digit before *", ErrQuery, raw)
			}
			continue // punctuation only: nothing to look for
		}
		if it.Prefix && len(it.Atoms) > 1 {
			return Query{}, fmt.Errorf("%w: prefix %q must be one word", ErrQuery, raw)
		}
		if neg {
			q.Not = append(q.Not, it)
		} else {
			q.Must = append(q.Must, it)
		}
		if len(q.Must)+len(q.Not) > MaxQueryItems {
			return Query{}, fmt.Errorf("%w: more than %d words", ErrQuery, MaxQueryItems)
		}
	}
	if len(q.Must) == 0 {
		return Query{}, fmt.Errorf("%w: %q has no word to look for (only exclusions or punctuation)", ErrQuery, s)
	}
	return q, nil
}
