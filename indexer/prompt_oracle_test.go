package indexer

import (
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"
)

// promptOracle is Prompt as it was written first, a rune at a time: the fast
// paths must give exactly its bytes.
func promptOracle(s string) string {
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

var promptSeeds = []string{
	"", " ", "a", "fix the bug", " fix", "fix ", "fix  the", "fix\tthe", "fix\nthe\r\n", "a\x00b", "a\x7fb", "~",
	"héllo wörld", "a\u00a0b", "a\u0085b", "a\u2003b", "\xff\xfe", "a\xffb", "\uFFFD", "日本語 の テキスト",
	strings.Repeat("x", MaxPromptChars), strings.Repeat("x", MaxPromptChars+1), strings.Repeat("x", MaxPromptChars-1) + " y",
	strings.Repeat("x ", MaxPromptChars), strings.Repeat("é", MaxPromptChars+5), strings.Repeat("ab ", 66) + "cd",
}

func TestPromptMatchesOracle(t *testing.T) {
	alphabet := []string{"a", "Z", " ", "  ", "\t", "\n", "é", "\u00a0", "\xff", "~", "\x7f", "\x01", "日"}
	inputs := append([]string(nil), promptSeeds...)
	// Every string of up to 4 pieces, and long ones around the cut.
	var gen func(prefix string, depth int)
	gen = func(prefix string, depth int) {
		inputs = append(inputs, prefix)
		if depth == 0 {
			return
		}
		for _, p := range alphabet {
			gen(prefix+p, depth-1)
		}
	}
	gen("", 4)
	for _, p := range alphabet {
		for _, k := range []int{MaxPromptChars - 2, MaxPromptChars - 1, MaxPromptChars, MaxPromptChars + 1} {
			inputs = append(inputs, strings.Repeat("a", k)+p+"b", p+strings.Repeat("a", k), strings.Repeat("a", k)+p)
		}
	}
	for _, in := range inputs {
		if got, want := Prompt(in), promptOracle(in); got != want {
			t.Fatalf("Prompt(%q) = %q, want %q", in, got, want)
		}
	}
}

func FuzzPrompt(f *testing.F) {
	for _, s := range promptSeeds {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if got, want := Prompt(s), promptOracle(s); got != want {
			t.Fatalf("Prompt(%q) = %q, want %q", s, got, want)
		}
	})
}
