package search

import (
	"bytes"
	"fmt"
	"slices"
	"strings"
	"testing"
)

// countedTerms is what a unit's messages counted into p come to: per doc, its
// terms count and its distinct terms in order of first occurrence, each with its
// tf, by name (ids are the dict's business).
func countedTerms(p *preparedLines) []string {
	var out []string
	at := 0
	for _, d := range p.docs {
		var b strings.Builder
		fmt.Fprintf(&b, "n=%d:", d.n)
		for ; at < d.pairsEnd; at++ {
			e := p.pairs[at]
			fmt.Fprintf(&b, " %q×%d", p.dict.name(e.id), e.tf)
		}
		out = append(out, b.String())
	}
	return out
}

// checkCountTerms: the messages of parts (each a message's JSON strings),
// counted as they are cut (message), give the docs, terms and tfs that
// tokenizing them into the scratch first and counting the terms one by one
// (countScratch, which message did before) gives; in a line, the bytes after a
// string (letters here) are not taken.
func checkCountTerms(t *testing.T, msgs [][][]byte) {
	t.Helper()
	fused, scratch := new(preparedLines), new(preparedLines)
	for i, parts := range msgs {
		// Each part in a buffer whose capacity runs on into letters, as a
		// string in its line does.
		var text textParts
		for _, raw := range parts {
			inLine := append(append([]byte(nil), raw...), "zzzzzzzzzzzzzzzz"...)[:len(raw)]
			text.raw = append(text.raw, inLine)
		}
		fused.message(int64(i), 0, "user", 0, &text)
		doc := uint32(len(scratch.docs)) + 1
		if n := scratch.countScratch(doc, &text); n > 0 {
			scratch.addDoc(int64(i), 0, "user", 0, n)
		}
	}
	got, want := countedTerms(fused), countedTerms(scratch)
	if !slices.Equal(got, want) {
		t.Fatalf("messages %q counted as cut:\n%q\nthrough the scratch:\n%q", msgs, got, want)
	}
	if len(fused.docs) != len(scratch.docs) {
		t.Fatalf("messages %q: %d docs counted as cut, %d through the scratch", msgs, len(fused.docs), len(scratch.docs))
	}
}

// FuzzCountTermsJSON: the read workers' tokenizer that counts each term as it
// cuts it (countTermsJSON, through message) counts what tokenizing each message
// first (appendTermsJSON, itself checked against decoding by
// FuzzAppendTermsJSON) and counting the terms one by one counts, whatever the
// bytes: the fuzzed string as a message alone, as a later part of a message
// (a part that does not decode undoes what its message counted before it) and
// again after other messages (terms already in the unit's dict and in the doc).
func FuzzCountTermsJSON(f *testing.F) {
	for _, s := range []string{`""`, `"Hello, World"`, `"Caf\u00e9 na\u00efve"`, `"\u6771\u4eac\u90fd\u306b"`,
		`"line one\nline two\ttab \"quoted\" back\\slash a\/b"`, `"\u0041BC d\u0045f"`, `"x\u0301y e\u0301\u0301"`,
		`"\ud83d\ude00 smile\ud83dx \ude00y \ud83d\u0041 \ud840\udc00\ud840\udc01 x\ud835\udc00y"`, `"\ud83d\uZZZZ"`, `"bad \q escape"`, `"trailing \"`,
		`"ctrl ` + "\x01" + ` byte"`, `"raw ` + "\xff\xfe" + ` bytes ` + "\xed\xa0\x80" + `"`,
		`"` + strings.Repeat("a", 63) + `\u00e9 ` + strings.Repeat("B", 70) + ` ` + strings.Repeat("x", 62) + `\u0041\u0042\u0043"`,
		`"` + strings.Repeat("ß", 40) + `ab"`, `"東京 abc 京都x a東b 東\u0301京"`, `"\u6771\n\u4eac"`, `  "padded"  `,
		`"ＡＢＣ İstanbul ΣΊΣΥΦΟΣ"`, `"x1_y2-Z3 \u0000nul"`, `"unterminated`, `not a string`, `"a"b"`,
		`"\u00"`, `"\u"`, `"12345678 abcdefghi ABCDEFGH1 a\nb"`,
		`"the the THE tHe a a b the 1234567 1234567 12345678 123456789 x.y.z"`, `"東京東京 京東 a東 東a"`,
		`"abc\u00e9 abcdefg\u0041 abcdefg\u0301 abcdefg\u6771"`, `"word"`, `"a"`} {
		f.Add([]byte(s))
	}
	// Long strings: words of every length (up to past MaxTermBytes), runs of
	// separators, and a byte that is not plain ASCII (an escape, a quote, a
	// control byte, UTF-8, CJK) at many places.
	var words strings.Builder
	for k := 1; k <= 70; k++ {
		words.WriteString(strings.Repeat(string(rune('a'+k%26)), k/2) + strings.Repeat(string(rune('A'+k%26)), k-k/2))
		words.WriteString([]string{" ", ", ", "  -- ", ".", "(", ")\t"[:1]}[k%6])
	}
	long := words.String()
	f.Add([]byte(`"` + long + `"`))
	for _, special := range []string{`\n`, `\u0041`, `\u00e9`, `\"`, `\\`, "\x01", "é", "東京", "\xff", `\ud83d\ude00`, "\u0301"} {
		for _, at := range []int{0, 1, 7, 8, 9, 63, 64, 65, 100, 130} {
			at = min(at, len(long))
			f.Add([]byte(`"` + long[:at] + special + long[at:] + `"`))
		}
	}
	f.Add([]byte(`"` + strings.Repeat("x", 64) + " " + strings.Repeat("y", 130) + " end " + strings.Repeat("ab ", 40) + `"`))
	f.Add([]byte(`"` + strings.Repeat("the quick brown fox ", 12) + `\n` + strings.Repeat("JUMPS over 12345678 lazy dogs ", 5) + `"`))
	// Word salad as the bench stores' (an escape every few words, each crossed
	// within countBlocks), and escapes next to each other or at a block's end.
	salad := strings.Repeat(`lock the goroutine\nwith a \"quoted\" buffer\tand\/or `, 6)
	f.Add([]byte(`"` + salad + `"`))
	f.Add([]byte(`"` + salad + `\\n` + salad + `\\` + salad + `"`))
	for _, at := range []int{61, 62, 63, 64} {
		f.Add([]byte(`"` + strings.Repeat("ab ", 30)[:at] + `\n` + salad + `"`))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		words := []byte(`"the quick brown fox the lazy dog \u6771\u4eac 12345678901"`)
		checkCountTerms(t, [][][]byte{{raw}})
		checkCountTerms(t, [][][]byte{{words, raw}, {raw, words}})
		checkCountTerms(t, [][][]byte{{words}, {raw}, {raw, raw}, {words, words}})
		// Spaces (JSON's) around the string, and the string cut short.
		checkCountTerms(t, [][][]byte{{append(append([]byte(" \t"), raw...), '\n')}, {raw[:len(raw)/2]}})
	})
}

// TestCountTermsGrowsDict: counted as they are cut, the terms of a unit larger
// than the dict's first table (which grows while a word's slot is probed
// inline) and of long words (hashed, compared with the arena) are the scratch
// path's.
func TestCountTermsGrowsDict(t *testing.T) {
	var msgs [][][]byte
	for i := range 3000 {
		var b bytes.Buffer
		fmt.Fprintf(&b, `"w%d x%dy w%d longword%012d the %s"`, i, i%7, i/2, i%50, strings.Repeat("q", i%70))
		msgs = append(msgs, [][]byte{b.Bytes()})
	}
	checkCountTerms(t, msgs)
}

// TestCountTermsWordThenEscape: a word of every length up to past 8 bytes (the
// fast path's), ending at an escape of every kind (those that decode to a
// separator, crossed at once, and \u ones, which may continue the word), a
// control byte, a quote or a byte that is not ASCII, that escape straddling
// every 8-byte boundary, counts what the scratch path counts.
func TestCountTermsWordThenEscape(t *testing.T) {
	specials := []string{`\n`, `\t`, `\"`, `\\`, `\/`, `\b`, `\f`, `\r`, `\u0041`, `\u00e9`, `\u0020`, `\ud83d\ude00`,
		`\ud83d`, `\u6771`, `\q`, `\`, "\x01", `"`, "\xff", "é", "東", "\u0301"}
	var msgs [][][]byte
	for lead := range 9 {
		for k := 1; k <= 10; k++ {
			for _, sp := range specials {
				for _, tail := range []string{"", "x", " y", "Zz word", `\n`} {
					var b bytes.Buffer
					b.WriteString(`"`)
					b.WriteString(strings.Repeat(" ", lead))
					b.WriteString(strings.Repeat("Ab", k)[:k])
					b.WriteString(sp)
					b.WriteString(tail)
					b.WriteString(` end"`)
					msgs = append(msgs, [][]byte{b.Bytes()})
				}
			}
		}
	}
	checkCountTerms(t, msgs)
	for _, m := range msgs {
		checkCountTerms(t, [][][]byte{m})
	}
}

// TestCountTermsEscapeEdges: a word of every length the fast paths treat
// apart (up to 7 bytes in one load, 8 and 16 bytes ending where a load does,
// MaxTermBytes and past it, its rest ignored) ending at each escape that
// decodes to a separator (crossed at once), at a \\ before a u (a separator,
// then the word u0041, not the letter A), at a \u escape, at the end of the
// string or at a backslash that ends it (which does not decode), after a CJK
// character, an accent, an escape or nothing and before CJK, an accent or
// letters, counts what the scratch path counts.
func TestCountTermsEscapeEdges(t *testing.T) {
	leads := []string{"", " ", "東", "東京", "é", "x\u0301 ", `\u6771`, `\u0041`, `\\`, `\n`}
	ends := []string{`\n`, `\"`, `\\`, `\/`, `\b`, `\f`, `\r`, `\t`, `\\u0041`, `\\\\`, `\\\u0041`, `\u0041`, `\u0020`, ``, `\`}
	tails := []string{"", "u0041", "東", "é", "\u0301", `\n`, " Zz", `\u6771`}
	lengths := []int{1, 2, 6, 7, 8, 9, 15, 16, 17, 24, 32, 63, 64, 65, 66, 71, 72, 80, 130}
	var all [][][]byte
	fast := 0
	for _, lead := range leads {
		for _, k := range lengths {
			word := strings.Repeat("aB3xYz9Q", k/8+1)[:k]
			for _, end := range ends {
				for _, tail := range tails {
					s := `"` + lead + word + end + tail + `"`
					msg := [][]byte{[]byte(s)}
					checkCountTerms(t, [][][]byte{msg})
					all = append(all, msg)
					if end == `\n` && tail == "" && k < 8 {
						fast++
					}
				}
			}
		}
	}
	if fast == 0 {
		t.Fatal("no word for the short fast path")
	}
	// All at once: the terms already in the unit's dict, docs one after another.
	checkCountTerms(t, all)
	// What the \\ before a u gives: the words "ab" and "u0041", not "aba".
	p := new(preparedLines)
	p.message(0, 0, "user", 0, &textParts{raw: [][]byte{[]byte(`"ab\\u0041"`)}})
	if got, want := countedTerms(p), []string{`n=2: "ab"×1 "u0041"×1`}; !slices.Equal(got, want) {
		t.Fatalf(`"ab\\u0041" counts %q, want %q`, got, want)
	}
}

// TestCountBlocks: the block tokenizer (countBlocks, 64 bytes at a time) counts
// what the scratch path counts for plain text whose words (of 1 to past
// MaxTermBytes bytes) and separators fall at every offset of a block, with each
// kind of byte it must stop at or cross (escapes that decode to a separator,
// one at a block's last byte, \\ before a letter, \u escapes, quotes, control
// bytes, UTF-8, CJK, accents) put at every offset of the first blocks; and on
// plain text it counts the words itself, not leaving them to countEscaped's
// byte loop.
func TestCountBlocks(t *testing.T) {
	var b strings.Builder
	for k := 1; b.Len() < 400; k++ {
		b.WriteString(strings.Repeat("Ab3", 30)[:k%13+1])
		b.WriteString([]string{" ", ", ", " -- ", ".", `\n`, `\"`, `\\`, `\/`, `\t`, " "}[k%10])
		if k%17 == 0 {
			b.WriteString(strings.Repeat("LongWord9", 8)[:9+k%60] + " ")
		}
	}
	text := b.String()
	var msgs [][][]byte
	for shift := range 64 {
		msgs = append(msgs, [][]byte{[]byte(`"` + strings.Repeat(" ", shift) + text + `"`)})
	}
	specials := []string{`\n`, `\"`, `\\`, `\\n`, `\\\n`, `\\u0041`, `\u0041`, `\u00e9`, `\ud83d\ude00`, `\`, `\q`, `"`,
		"\x01", "\x7f", "é", "東京", "\u0301", "\xff", strings.Repeat("z", 70)}
	for _, sp := range specials {
		for at := range 150 {
			msgs = append(msgs, [][]byte{[]byte(`"` + text[:at] + sp + text[at:] + `"`)})
		}
	}
	for _, m := range msgs {
		checkCountTerms(t, [][][]byte{m})
	}
	checkCountTerms(t, msgs)

	// Plain text: countBlocks takes it to its last blockSpan bytes at most.
	p := new(preparedLines)
	in := []byte(text)
	i, n, _, _ := p.countBlocks(in, 0, 1, nil)
	if i < len(in)-blockSpan-80 || n < strings.Count(text, " ")/2 {
		t.Fatalf("countBlocks stopped at %d of %d bytes, %d words counted", i, len(in), n)
	}
}
