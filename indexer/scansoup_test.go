package indexer

import (
	"math/rand"
	"testing"
)

// TestScanStringSoup: strings of plain bytes with, at random, escapes good,
// bad and cut, quotes, control bytes and UTF-8 at random offsets of
// scanString's blocks, whole and cut short, end, err and report escapes as a
// byte-at-a-time scan does.
func TestScanStringSoup(t *testing.T) {
	n := 20000
	toks := []string{"a", "b", "x", "word", " ", "  ", "é", "東", "\xff", `\n`, `\\`, `\"`, `\/`, `\u0041`, `\u00zz`, `\uD83D`, `\u12`, `\q`, `\`, `"`, "\x01", "\x00", "\x1f", "\x7f", "abcdefgh", "0123456789abcdef"}
	r := rand.New(rand.NewSource(int64(n)))
	for it := 0; it < n; it++ {
		var b []byte
		b = append(b, '"')
		L := r.Intn(300)
		for len(b) < L {
			if r.Intn(8) == 0 {
				b = append(b, toks[r.Intn(len(toks))]...)
			} else {
				b = append(b, toks[r.Intn(6)]...)
			}
		}
		for _, cut := range []int{len(b), len(b) - 1, r.Intn(len(b) + 1)} {
			if cut < 1 {
				continue
			}
			line := append([]byte(nil), b[:cut]...)
			end, esc, err := scanString(line, 0)
			wend, wesc, ok := refScanString(line, 0)
			if (err == nil) != ok || err == nil && (end != wend || esc != wesc) {
				t.Fatalf("scanString(%q) = %d, %v, %v; want %d, %v, ok %v", line, end, esc, err, wend, wesc, ok)
			}
		}
	}
}
