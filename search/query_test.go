package search

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"
	"unicode/utf8"
)

func describe(q Query) string {
	var parts []string
	for _, set := range []struct {
		sign  string
		items []Item
	}{{"+", q.Must}, {"-", q.Not}} {
		for _, it := range set.items {
			var atoms []string
			for _, a := range it.Atoms {
				atoms = append(atoms, a.Text)
			}
			s := set.sign + strings.Join(atoms, "_")
			if it.Prefix {
				s += "*"
			}
			parts = append(parts, s)
		}
	}
	return strings.Join(parts, " ")
}

func TestParseQuery(t *testing.T) {
	tests := []struct {
		in, want string
	}{
		{"auth bug", "+auth +bug"},
		{`"Quick Brown" fox`, "+quick_brown +fox"},
		{"auth* -Légacy", "+auth* -legacy"},
		{`-"old api" new`, "+new -old_api"},
		{"foo.bar", "+foo_bar"},
		{"東京", "+東_京"},
		{"x - y", "+x +y"},
		{"ok !!!", "+ok"},
	}
	for _, tt := range tests {
		q, err := ParseQuery(tt.in)
		if err != nil {
			t.Errorf("ParseQuery(%q): %v", tt.in, err)
			continue
		}
		if got := describe(q); got != tt.want {
			t.Errorf("ParseQuery(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func TestParseQueryErrors(t *testing.T) {
	for _, in := range []string{"", "-only", `"unterminated`, "*", "foo.ba*", "!!!", strings.Repeat("w ", MaxQueryItems+1)} {
		if _, err := ParseQuery(in); !errors.Is(err, ErrQuery) {
			t.Errorf("ParseQuery(%q) error = %v, want ErrQuery", in, err)
		}
	}
}

func TestLookups(t *testing.T) {
	tests := []struct {
		in, want string
	}{
		{"auth", "auth"},
		{"auth*", "auth*"},
		{`"a b"`, "a b"},
		{"東京都", "東京 京都"},
		{"猫", "猫*"},
		{`"猫 犬"`, "猫* 犬*"},
	}
	for _, tt := range tests {
		q, err := ParseQuery(tt.in)
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, l := range q.Must[0].Lookups() {
			s := l.Term
			if l.Prefix {
				s += "*"
			}
			got = append(got, s)
		}
		if g := strings.Join(got, " "); g != tt.want {
			t.Errorf("Lookups(%q) = %q, want %q", tt.in, g, tt.want)
		}
	}
}

// FuzzParseQuery: a parsed query is never empty, and every item's lookups are
// terms the tokenizer can produce for text that matches the item.
func FuzzParseQuery(f *testing.F) {
	for _, s := range []string{"auth bug", `"a b" -c d*`, "東京 -猫", `"`, "-", "***", "a\"b\"c", "ÉCOLE* -\"x y\""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		q, err := ParseQuery(s)
		if err != nil {
			if !errors.Is(err, ErrQuery) {
				t.Fatalf("ParseQuery(%q) error %v is not ErrQuery", s, err)
			}
			return
		}
		if len(q.Must) == 0 {
			t.Fatalf("ParseQuery(%q) has no item", s)
		}
		for _, it := range append(q.Must, q.Not...) {
			// The item's own text, tokenized, must hold every lookup.
			var text []string
			for _, a := range it.Atoms {
				text = append(text, a.Text)
			}
			joined := fmt.Sprint(strings.Join(text, " "))
			if !it.Prefix && !it.Matches(Normalize(rejoin(it.Atoms))) {
				t.Fatalf("item %q does not match its own text %q", it.Raw, joined)
			}
			terms := map[string]bool{}
			Terms(rejoin(it.Atoms), nil, func(b []byte) { terms[string(b)] = true })
			for _, l := range it.Lookups() {
				found := false
				for term := range terms {
					if term == l.Term || l.Prefix && strings.HasPrefix(term, l.Term) {
						found = true
					}
				}
				if !found {
					t.Fatalf("lookup %+v of %q not among the terms %v of its own text", l, s, terms)
				}
			}
		}
	})
}

// rejoin writes atoms back as text: words spaced, joined CJK characters adjacent.
func rejoin(atoms []Atom) string {
	var b strings.Builder
	for i, a := range atoms {
		if i > 0 && !(a.CJK && a.Joined) {
			b.WriteByte(' ')
		}
		b.WriteString(a.Text)
	}
	return b.String()
}

func TestSnippet(t *testing.T) {
	q, _ := ParseQuery("parser caf*")
	got, spans := Snippet("Fix the\n\nflaky Parser in Café code", q, 80)
	if got != "Fix the flaky Parser in Café code" {
		t.Fatalf("Snippet = %q", got)
	}
	var hl []string
	for _, s := range spans {
		hl = append(hl, got[s[0]:s[1]])
	}
	if strings.Join(hl, ",") != "Parser,Café" {
		t.Errorf("highlighted %q, want Parser,Café", hl)
	}
	long := strings.Repeat("word ", 100) + "parser " + strings.Repeat("tail ", 100)
	got, spans = Snippet(long, q, 40)
	if !strings.HasPrefix(got, "…") || !strings.HasSuffix(got, "…") || len(spans) != 1 || got[spans[0][0]:spans[0][1]] != "parser" {
		t.Errorf("Snippet(long) = %q %v", got, spans)
	}
}

// TestMatchesWordASCIIFastPath: the allocation-free comparison of ASCII words
// agrees with matching their normalized form.
func TestMatchesWordASCIIFastPath(t *testing.T) {
	words := []string{"parser", "Parser", "PARSER", "parse", "parsers", "v2", "V2", "42", "k", "K", "ss", "SS", "cafe", "Cafe",
		strings.Repeat("a", MaxTermBytes+3), strings.Repeat("A", MaxTermBytes), "x"}
	queries := []string{"parser", "pars*", "PARSE*", "v2", "k", "café", "straße", "ss*", "\u212a", strings.Repeat("a", MaxTermBytes+1),
		"a*", "cafe -parser", "東京 cafe"}
	for _, qs := range queries {
		q, err := ParseQuery(qs)
		if err != nil {
			t.Fatal(err)
		}
		for _, w := range words {
			if got, want := matchesWord(w, q), matchesWordNormalized(w, q); got != want {
				t.Errorf("matchesWord(%q, %q) = %v, want %v", w, qs, got, want)
			}
		}
	}
}

// snippetWhole is Snippet as first written: every word of the text matched, then
// the window cut around the first hit.
func snippetWhole(text string, q Query, width int) (string, [][2]int) {
	flat := strings.Join(strings.Fields(text), " ")
	var hits [][2]int
	eachWord(flat, func(w [2]int) bool {
		if matchesWord(flat[w[0]:w[1]], q) {
			hits = append(hits, w)
		}
		return true
	})
	start := 0
	if len(hits) > 0 {
		start = hits[0][0]
		for back := 0; start > 0 && back < width/4; back++ {
			_, n := utf8.DecodeLastRuneInString(flat[:start])
			start -= n
		}
	}
	end, n := start, 0
	for end < len(flat) && n < width {
		_, sz := utf8.DecodeRuneInString(flat[end:])
		end += sz
		n++
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

// TestSnippetStopsAtWindow: matching words only up to the window's end gives the
// snippet and spans of matching every word.
func TestSnippetStopsAtWindow(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 9))
	vocab := []string{"parser", "Parser", "config", "東京", "café", "x", "  ", "\n", "naïve", "pars", "CONFIG,", "e\u0301"}
	for i := range 2000 {
		var ws []string
		for range rng.IntN(120) {
			ws = append(ws, vocab[rng.IntN(len(vocab))])
		}
		text := strings.Join(ws, []string{" ", "", "\t"}[rng.IntN(3)])
		qs := []string{"parser", "parser config", "pars*", "東京", "cafe", "zzz"}[i%6]
		q, err := ParseQuery(qs)
		if err != nil {
			t.Fatal(err)
		}
		width := []int{10, 40, 160}[rng.IntN(3)]
		gs, gsp := Snippet(text, q, width)
		ws2, wsp := snippetWhole(text, q, width)
		if gs != ws2 || !reflect.DeepEqual(gsp, wsp) {
			t.Fatalf("Snippet(%q, %q, %d) = %q %v, want %q %v", text, qs, width, gs, gsp, ws2, wsp)
		}
	}
}

// TestFlattenSpaceEqualsFields: flattenSpace is strings.Join(strings.Fields(s),
// " ") on random text of ASCII and Unicode spaces, letters and broken UTF-8.
func TestFlattenSpaceEqualsFields(t *testing.T) {
	parts := []string{" ", "  ", "\t", "\n", "\r\n", "\v", "\f", "\u0085", "\u00a0", "\u2003", "\u3000", "a", "bc", "é", "東京", "\xc2", "\xff", "\x00", "x y"}
	rng := rand.New(rand.NewPCG(14, 14))
	for range 20000 {
		var b strings.Builder
		for range rng.IntN(12) {
			b.WriteString(parts[rng.IntN(len(parts))])
		}
		checkFlatten(t, b.String())
	}
}

func checkFlatten(t *testing.T, s string) {
	t.Helper()
	want := strings.Join(strings.Fields(s), " ")
	if got := flattenSpace(s); got != want {
		t.Fatalf("flattenSpace(%q) = %q, want %q", s, got, want)
	}
}

func FuzzFlattenSpace(f *testing.F) {
	for _, s := range []string{"", " ", "a", " a", "a ", "a  b", "a\tb", "a\u00a0b", "a\xc2 b", "Fix the\n\nflaky Parser"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) { checkFlatten(t, s) })
}
