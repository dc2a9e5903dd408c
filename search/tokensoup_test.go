package search

import (
	"math/rand"
	"strconv"
	"strings"
	"testing"
)

// TestCountTermsSoup: messages of words, separators and escapes that decode to
// separators (the block tokenizer's) with, at random rates, bytes it must stop
// at (\u escapes good and bad, UTF-8 good and bad, CJK, accents, quotes,
// control bytes), at random offsets of its blocks, count what the scratch path
// counts; strings cut short too.
func TestCountTermsSoup(t *testing.T) {
	n := 2000
	plain := []string{"a", "B", "x9", "Word", "ABCDEFGH", "abcdefghi", "1234567", "12345678", " ", "  ", ".", "-", strings.Repeat("q", 63), strings.Repeat("Z", 64), strings.Repeat("m", 65), `\n`, `\\`, `\"`, `\/`, `\t`, "_", "@", "[", "`", "{", "\x7f"}
	hard := []string{"é", "東", "京", "\xff", "\xc3", `\u0041`, `\u0061`, `\u00e9`, `\u6771`, `\u0301`, "\u0301", `\ud83d\ude00`, `\ud83d`, `\u00zz`, `\u12`, `\q`, `\`, `"`, "\x01", "\x00", "ß", "İ", "Ａ"}
	r := rand.New(rand.NewSource(int64(n)))
	for it := 0; it < n; it++ {
		var msgs [][][]byte
		for m := 0; m < 3; m++ {
			var b []byte
			b = append(b, '"')
			L := r.Intn(400)
			rare := 4 + r.Intn(60)
			for len(b) < L {
				if r.Intn(rare) == 0 {
					b = append(b, hard[r.Intn(len(hard))]...)
				} else {
					b = append(b, plain[r.Intn(len(plain))]...)
				}
			}
			if r.Intn(10) != 0 {
				b = append(b, '"')
			}
			msgs = append(msgs, [][]byte{b})
		}
		msgs = append(msgs, [][]byte{msgs[0][0], msgs[1][0]})
		checkCountTerms(t, msgs)
	}
}

// TestCountTermsManyTerms: a unit of more than 1<<16 distinct terms (the dict
// grown many times, at a quarter full) counts what the scratch path counts.
func TestCountTermsManyTerms(t *testing.T) {
	var msgs [][][]byte
	var b strings.Builder
	for i := 0; i < 70000; i++ {
		if i%500 == 0 && b.Len() > 0 {
			msgs = append(msgs, [][]byte{[]byte(`"` + b.String() + `"`)})
			b.Reset()
		}
		b.WriteString(strconv.FormatInt(int64(i)*7919, 36))
		b.WriteString(" ")
		if i%3 == 0 {
			b.WriteString("long" + strconv.Itoa(i) + "wordy ")
		}
		if i%5 == 0 {
			b.WriteString("the A ")
		}
	}
	msgs = append(msgs, [][]byte{[]byte(`"` + b.String() + `"`)})
	checkCountTerms(t, msgs)
}
