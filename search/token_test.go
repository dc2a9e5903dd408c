package search

import (
	"slices"
	"strings"
	"testing"
	"unicode/utf8"
)

func termsOf(s string) []string {
	var out []string
	Terms(s, nil, func(t []byte) { out = append(out, string(t)) })
	return out
}

func TestTerms(t *testing.T) {
	tests := []struct {
		name, in string
		want     string
	}{
		{"words and case", "Fix the AUTH bug", "fix the auth bug"},
		{"accents folded", "Café Ærøskøbing naïve Ñandú straße Łódź", "cafe aeroskobing naive nandu strasse lodz"},
		{"decomposed accents", "cafe\u0301 re\u0301sume\u0301", "cafe resume"},
		{"digits and scripts", "v2 Привет мир ΣΟΦΟΣ 123", "v2 привет мир σοφοσ 123"},
		{"punctuation splits", "foo.bar_baz-qux (x)", "foo bar baz qux x"},
		{"cjk bigrams", "東京都に行く", "東京 京都 都に に行 行く く"},
		{"cjk single", "猫 dog", "猫 dog"},
		{"cjk then latin", "漢字abc", "漢字 字 abc"},
		{"katakana prolonged", "コーヒー", "コー ーヒ ヒー ー"},
		{"empty", " ,.; ", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := strings.Join(termsOf(tt.in), " "); got != tt.want {
				t.Errorf("Terms(%q) = %q, want %q", tt.in, got, tt.want)
			}
		})
	}
}

func TestTermsCapLongWords(t *testing.T) {
	long := strings.Repeat("é", 100) + " next"
	got := termsOf(long)
	if len(got) != 2 || len(got[0]) != MaxTermBytes || got[1] != "next" {
		t.Errorf("Terms(long) = %q, want a %d-byte term then next", got, MaxTermBytes)
	}
	// The query side cuts the same way, so the long word is still found.
	if a := Normalize(long); a[0].Text != got[0] {
		t.Errorf("Normalize cut %q, Terms cut %q", a[0].Text, got[0])
	}
}

func TestMatchPhrase(t *testing.T) {
	tests := []struct {
		text, q string
		want    bool
	}{
		{"the quick brown fox", "quick brown", true},
		{"the quick brown fox", "brown quick", false},
		{"The Quick, Brown!", "quick brown", true},
		{"東京都に行く", "京都", true},
		{"東京 都", "京都", false}, // not in one run
		{"東京都", "東京 都", true},
		{"東京都", "都", true},
		{"a", "", false},
	}
	for _, tt := range tests {
		if got := MatchPhrase(Normalize(tt.text), Normalize(tt.q)); got != tt.want {
			t.Errorf("MatchPhrase(%q, %q) = %v, want %v", tt.text, tt.q, got, tt.want)
		}
	}
}

// FuzzTerms checks that terms are valid, folded, bounded and agree with Normalize.
func FuzzTerms(f *testing.F) {
	for _, s := range []string{"", "Hello, World", "Café naïve", "東京都に行く", "e\u0301\u0301", "\xff\xfe", strings.Repeat("ß", 40), "ＡＢＣ", "İstanbul"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		terms := termsOf(s)
		atoms := Normalize(s)
		words := 0
		for _, a := range atoms {
			if !a.CJK {
				words++
			}
		}
		nw := 0
		for _, term := range terms {
			if term == "" || len(term) > MaxTermBytes || !utf8.ValidString(term) {
				t.Fatalf("Terms(%q) gave bad term %q", s, term)
			}
			if !isCJKTerm(term) {
				nw++
			}
			again := termsOf(term)
			if len(again) == 0 || again[0] != term {
				t.Fatalf("term %q of %q is not stable: %q", term, s, again)
			}
		}
		if nw != words {
			t.Fatalf("Terms(%q) has %d words, Normalize %d", s, nw, words)
		}
	})
}

func isCJKTerm(s string) bool {
	r, _ := utf8.DecodeRuneInString(s)
	return isCJK(r)
}

// refNormalize is Normalize as first written, rune by rune (scan's ASCII fast path
// must give the same atoms).
func refNormalize(text string) []Atom {
	var out []Atom
	var buf []byte
	inWord, full, prevCJK := false, false, false
	flush := func() {
		if inWord && len(buf) > 0 {
			out = append(out, Atom{Text: string(buf)})
		}
		buf = buf[:0]
		inWord, full = false, false
	}
	for _, r := range text {
		switch runeClass(r) {
		case 1:
			prevCJK, inWord = false, true
			if !full {
				n := len(buf)
				buf = appendFolded(buf, r)
				if len(buf) > MaxTermBytes {
					buf, full = buf[:n], true
				}
			}
		case 2:
			flush()
			out = append(out, Atom{Text: string(r), CJK: true, Joined: prevCJK})
			prevCJK = true
		case 3:
		default:
			flush()
			prevCJK = false
		}
	}
	flush()
	return out
}

func FuzzNormalizeFastPath(f *testing.F) {
	for _, s := range []string{"", "Hello, World", "Café naïve", "東京都に行く", "e\u0301\u0301", "\xff\xfe",
		strings.Repeat("a", 63) + "é", strings.Repeat("A", 70) + "ß x", strings.Repeat("ß", 40), "x1_y2-Z3"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got, want := Normalize(s), refNormalize(s)
		if !slices.Equal(got, want) {
			t.Fatalf("Normalize(%q) = %v, want %v", s, got, want)
		}
	})
}

// FuzzAppendTerms: appendTerms gives the terms Terms gives, in the same order.
func FuzzAppendTerms(f *testing.F) {
	for _, s := range []string{"", "Hello, World", "Café naïve", "東京都に行く", "e\u0301\u0301", "\xff\xfe",
		strings.Repeat("a", 63) + "é", strings.Repeat("A", 70) + "ß x", strings.Repeat("ß", 40), "x1_y2-Z3",
		"東京 abc 京都x", "a東b", "東\u0301京", "\u0301abc", "ＡＢＣ", "İstanbul ΣΊΣΥΦΟΣ", strings.Repeat("é", 40) + "ab"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		want := termsOf(s)
		dst, n := appendTerms([]byte("prefix"), s)
		if string(dst[:6]) != "prefix" {
			t.Fatalf("appendTerms(%q) changed what dst held", s)
		}
		var got []string
		for b := dst[6:]; len(b) > 0; {
			k := int(b[0])
			if k == 0 || k+1 > len(b) {
				t.Fatalf("appendTerms(%q) = %q: bad length byte", s, dst[6:])
			}
			got = append(got, string(b[1:1+k]))
			b = b[1+k:]
		}
		if n != len(got) || !slices.Equal(got, want) {
			t.Fatalf("appendTerms(%q) = %q (n %d), Terms gives %q", s, got, n, want)
		}
	})
}
