package search

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
)

// refCounted is what countedTerms gives for messages msgs (each a message's
// JSON strings), counted with no dict at all: each message's terms tokenized
// (appendTermsJSON, itself checked against decoding by FuzzAppendTermsJSON)
// and tallied by name in a map, in order of first occurrence. It shares no
// code with the dict, its keys or the block tokenizer: the reference the
// tokenizer's counts are held to whatever its keys' form.
func refCounted(msgs [][][]byte) []string {
	var out []string
	for _, parts := range msgs {
		var terms []byte
		n := 0
		for _, raw := range parts {
			var k int
			terms, k = appendTermsJSON(terms, raw)
			n += k
		}
		if n == 0 {
			continue
		}
		var order []string
		tf := map[string]int{}
		for b := terms; len(b) > 0; {
			k := int(b[0])
			t := string(b[1 : 1+k])
			if tf[t] == 0 {
				order = append(order, t)
			}
			tf[t]++
			b = b[1+k:]
		}
		var s strings.Builder
		fmt.Fprintf(&s, "n=%d:", n)
		for _, t := range order {
			fmt.Fprintf(&s, " %q×%d", t, tf[t])
		}
		out = append(out, s.String())
	}
	return out
}

// checkCountTermsRef: the messages counted as they are cut (message), with the
// assembly and with the Go loops (useCountAsm), with the AVX2 classifier and
// without, in a fresh preparedLines and in one used for another unit before
// (its dict reset as release resets it), with pairs of room room at first,
// give what refCounted gives.
func checkCountTermsRef(t *testing.T, msgs [][][]byte, room int) {
	t.Helper()
	want := refCounted(msgs)
	defer func(a, v bool) { useCountAsm, useAVX2 = a, v }(useCountAsm, useAVX2)
	asmModes, avxModes := []bool{false}, []bool{false}
	if useCountAsm {
		asmModes = append(asmModes, true)
	}
	if useAVX2 {
		avxModes = append(avxModes, true)
	}
	for _, asm := range asmModes {
		for _, avx := range avxModes {
			useCountAsm, useAVX2 = asm, avx
			used := new(preparedLines)
			for round := range 2 {
				p := used
				if round == 0 {
					p = new(preparedLines)
					p.pairs = make([]termTF, 0, room)
				}
				for i, parts := range msgs {
					var text textParts
					for _, raw := range parts {
						// Each part in a buffer whose capacity runs on into
						// letters, as a string in its line does.
						inLine := append(append([]byte(nil), raw...), "zzzzzzzzzzzzzzzz"...)[:len(raw)]
						text.raw = append(text.raw, inLine)
					}
					p.message(int64(i), 0, "user", 0, &text)
				}
				if got := countedTerms(p); !slices.Equal(got, want) {
					for i := range max(len(got), len(want)) {
						var g, w string
						if i < len(got) {
							g = got[i]
						}
						if i < len(want) {
							w = want[i]
						}
						if g != w {
							t.Fatalf("asm %v avx2 %v round %d room %d: doc %d of messages %q counted\n%s\nwant\n%s", asm, avx, round, room, i, msgs, g, w)
						}
					}
				}
				// As release leaves it for the pool's next unit, its dict
				// (and the terms' marks) reset, the table kept.
				p.dict.reset()
				p.docs, p.pairs = p.docs[:0], p.pairs[:0]
			}
		}
	}
}

// saladVocab is the words word salad is made of: the bench stores' kind of
// English, upper case, digits, words of 6 to 9 bytes that begin alike (8
// bytes' keys against longer terms'), long words, accents, CJK, Greek, escapes
// of letters and of separators.
var saladVocab = []string{
	"the", "a", "lock", "goroutine", "with", "buffer", "and", "or", "quoted", "THE", "Lock", "GoRoutine",
	"0", "7", "12345678", "123456789", "1234567", "x1", "9z", "abcdef", "abcdefg", "abcdefgh", "abcdefghi",
	"ABCDEFGH", "abcdefgh1", "abcdefghij", "abcdefghijklmnop", "abcdefgx", "abcdeff", "zzzzzzzz", "zzzzzzzzz",
	strings.Repeat("q", 63), strings.Repeat("Q", 64), strings.Repeat("r", 65), strings.Repeat("s", 130),
	"café", "naïve", "ÆON", "straße", "Straße", "ΣΊΣΥΦΟΣ", "İstanbul", "ＡＢＣ", "东京都", "東京", "東", "日本語の", "ｶﾀｶﾅ",
	`\u0041BC`, `d\u0045f`, `caf\u00e9`, `\u6771\u4eac`, `x\u0301y`, `\ud83d\ude00`, `\ud840\udc00\ud840\udc01`,
	`abcdef\u0067h`, `abcdefg\u0068`, `abcdefgh\u0069`, `\u0000`, `\u0001x`, "x\x01y",
}

// saladSeps is what separates its words: JSON escapes of separators, runs of
// spaces (to move words across the blocks' edges), punctuation, a quote.
var saladSeps = []string{" ", " ", " ", "  ", ", ", ". ", `\n`, `\t`, `\"`, `\\`, `\/`, "-", " (", ") ", "   ", strings.Repeat(" ", 9), "…", "\t", "_"}

// salad returns a JSON string of n words of the vocabulary (and of w0…w299,
// numbered words that fill the dict's table past its first size, and of
// k00000…k00099, words of 6 bytes, each also with up to 4 more letters), separated as
// saladSeps does, chosen by r.
func salad(r *rand.Rand, n int) []byte {
	b := []byte{'"'}
	for range n {
		switch r.IntN(6) {
		case 0, 1:
			b = fmt.Appendf(b, "w%d", r.IntN(300))
		case 2:
			// Words of 6 bytes and longer ones that begin with them:
			// their keys differ in their last two bytes only.
			b = fmt.Appendf(b, "k%05d", r.IntN(100))
			if r.IntN(2) == 0 {
				b = fmt.Appendf(b, "%s", strings.Repeat("Z", 1+r.IntN(4)))
			}
		default:
			b = append(b, saladVocab[r.IntN(len(saladVocab))]...)
		}
		b = append(b, saladSeps[r.IntN(len(saladSeps))]...)
	}
	return append(b, '"')
}

// FuzzCountTermsRef: counted as they are cut (the block tokenizer with its
// assembly and with its Go loops), the fuzzed string and word salad made from
// the fuzzed seed (alone, and with the fuzzed string inside it, as messages of
// one part and of several) count what refCounted counts.
func FuzzCountTermsRef(f *testing.F) {
	for _, s := range []string{`""`, `"abcdefgh abcdefghi ABCDEFGH abcdefgh1 abcdefg"`, `"` + strings.Repeat("the quick brown fox ", 20) + `"`,
		`"\u6771\u4eac\u90fd abc 東京 ab東c"`, `"` + strings.Repeat("ab ", 21) + `\n` + strings.Repeat("a ", 40) + `"`,
		`"` + strings.Repeat("x", 70) + " " + strings.Repeat("Abcdefgh ", 40) + `"`, `"Caf\u00e9 na\u00efve STRASSE straße"`} {
		for seed := range uint64(3) {
			f.Add([]byte(s), seed, uint8(seed*7))
		}
	}
	f.Fuzz(func(t *testing.T, raw []byte, seed uint64, room uint8) {
		r := rand.New(rand.NewPCG(seed, seed>>32^0x5eed))
		var msgs [][][]byte
		msgs = append(msgs, [][]byte{raw})
		for range 1 + r.IntN(4) {
			s := salad(r, r.IntN(400))
			msgs = append(msgs, [][]byte{s})
			// The fuzzed string's bytes inside the salad (a JSON string
			// still if they have no quote), and as a later part.
			cut := 1 + r.IntN(len(s)-1)
			in := slices.Concat(s[:cut], raw, s[cut:])
			msgs = append(msgs, [][]byte{in}, [][]byte{s, raw, s})
		}
		checkCountTermsRef(t, msgs, int(room))
	})
}

// TestCountTermsSaladRef: checkCountTermsRef of much word salad, as many
// units of many messages.
func TestCountTermsSaladRef(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	units := 40
	if testing.Short() {
		units = 5
	}
	for range units {
		var msgs [][][]byte
		for range 1 + r.IntN(30) {
			msgs = append(msgs, [][]byte{salad(r, r.IntN(600))})
		}
		checkCountTermsRef(t, msgs, r.IntN(100))
	}
}

// TestCountTermsKeyForms: a term of up to 8 bytes is told from each longer term
// that begins with it (a key of another form, termKey) even where the longer
// one, counted first, holds the shorter one's first slot (found under this
// process's seed): counted by the block tokenizer, whose lookup compares keys
// alone. Terms of 1 to 8 bytes, ASCII and not, and of 6 bytes that end like
// a longer term's key (with a 1 and with a 0: no term holds one).
func TestCountTermsKeyForms(t *testing.T) {
	for _, short := range []string{"a", "ab", "abc", "abcd", "abcde", "abcdef", "abcdefg", "abcdefgh", "12345678", "東京", "éé", "x\u0301yz"} {
		_, slh := termKey([]byte(short))
		var long []string
		for i := 0; len(long) < 3; i++ {
			w := fmt.Sprintf("%s%sq%d", short, strings.Repeat("z", max(0, 8-len(short))), i)
			if _, lh := termKey([]byte(w)); lh>>8&255 == slh>>8&255 {
				long = append(long, w)
			}
		}
		var b strings.Builder
		b.WriteString(`"` + strings.Join(long, " ") + " ")
		for range 40 {
			b.WriteString(short + " " + long[0] + " " + strings.ToUpper(short) + " ")
		}
		b.WriteString(`"`)
		msgs := [][][]byte{{[]byte(b.String())}, {[]byte(`"` + short + " " + long[1] + `"`)}}
		checkCountTermsRef(t, msgs, 0)
		checkCountTerms(t, msgs)
	}
}
