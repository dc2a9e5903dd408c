package search

import (
	"bytes"
	"encoding/binary"
	"strings"
	"testing"
)

// FuzzAppendTermsJSON: the read workers' tokenizer of escaped JSON strings gives
// the terms (and count) that decoding the string first (jstr) and tokenizing the
// text (appendTerms) gives, whatever the bytes: escapes of every kind, surrogate
// pairs and lone halves, \u-escaped letters inside words, bytes that are not
// UTF-8, control bytes and malformed escapes (which decode to "").
func FuzzAppendTermsJSON(f *testing.F) {
	for _, s := range []string{`""`, `"Hello, World"`, `"Caf\u00e9 na\u00efve"`, `"\u6771\u4eac\u90fd\u306b"`,
		`"line one\nline two\ttab \"quoted\" back\\slash a\/b"`, `"\u0041BC d\u0045f"`, `"x\u0301y e\u0301\u0301"`,
		`"\ud83d\ude00 smile\ud83dx \ude00y \ud83d\u0041 \ud840\udc00\ud840\udc01 x\ud835\udc00y"`, `"\ud83d\uZZZZ"`, `"bad \q escape"`, `"trailing \"`,
		`"ctrl ` + "\x01" + ` byte"`, `"raw ` + "\xff\xfe" + ` bytes ` + "\xed\xa0\x80" + `"`,
		`"` + strings.Repeat("a", 63) + `\u00e9 ` + strings.Repeat("B", 70) + ` ` + strings.Repeat("x", 62) + `\u0041\u0042\u0043"`,
		`"` + strings.Repeat("ß", 40) + `ab"`, `"東京 abc 京都x a東b 東\u0301京"`, `"\u6771\n\u4eac"`, `  "padded"  `,
		`"ＡＢＣ İstanbul ΣΊΣΥΦΟΣ"`, `"x1_y2-Z3 \u0000nul"`, `"unterminated`, `not a string`, `"a"b"`,
		`"\u00"`, `"\u"`, `"12345678 abcdefghi ABCDEFGH1 a\nb"`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		want, wn := appendTerms([]byte("prefix"), jstr(raw))
		got, gn := appendTermsJSON([]byte("prefix"), raw)
		if !bytes.Equal(got, want) || gn != wn {
			t.Fatalf("appendTermsJSON(%q) = %q (n %d), appendTerms of jstr gives %q (n %d)", raw, got, gn, want, wn)
		}
		// In a line, letters follow the string: the bytes read past it are
		// not taken.
		inLine := append(append([]byte(nil), raw...), "zzzzzzzzzzzzzzzz"...)[:len(raw)]
		if got, gn := appendTermsJSON([]byte("prefix"), inLine); !bytes.Equal(got, want) || gn != wn {
			t.Fatalf("appendTermsJSON(%q) followed by letters = %q (n %d), want %q (n %d)", raw, got, gn, want, wn)
		}
	})
}

// TestNonWord: the 8-bytes-at-once test marks exactly the bytes asciiFold does
// not fold, in every position, whatever the bytes around them.
func TestNonWord(t *testing.T) {
	for _, fill := range []byte{'a', 'Z', '5', ' ', 0xff, 0x80, '\\'} {
		for pos := range 8 {
			for c := range 256 {
				var b [8]byte
				for i := range b {
					b[i] = fill
				}
				b[pos] = byte(c)
				got := nonWord(binary.LittleEndian.Uint64(b[:]))
				for i, x := range b {
					if (got>>(8*i)&0xff == 0x80) != (asciiFold[x] == 0) || got>>(8*i)&0x7f != 0 {
						t.Fatalf("nonWord(%q) = %#x: byte %d (%q) wrong", b, got, i, x)
					}
				}
			}
		}
	}
}

// TestQuoteIn8: the 8-bytes-at-once search finds the first quote, whatever
// precedes and follows it (bytes that borrow: 0x00, 0x01, 0x21, 0x23, 0xa2).
func TestQuoteIn8(t *testing.T) {
	fills := []byte{'a', 0, 1, '"' - 1, '"' + 1, 0xa2, 0xff, '\\'}
	for _, fill := range fills {
		for _, after := range fills {
			for q := -1; q < 8; q++ {
				b := bytes.Repeat([]byte{fill}, 12)
				if q >= 0 {
					b[q] = '"'
					for i := q + 1; i < 8; i++ {
						b[i] = after
					}
				}
				want := bytes.IndexByte(b[:8], '"')
				if got := quoteIn8(b, 0); got != want {
					t.Fatalf("quoteIn8(%q) = %d, want %d", b, got, want)
				}
				if got := quoteIn8(b[:7], 0); got != -1 {
					t.Fatalf("quoteIn8 of 7 bytes %q = %d, want -1", b[:7], got)
				}
			}
		}
	}
}
