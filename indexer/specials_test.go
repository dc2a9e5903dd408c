package indexer

import (
	"bytes"
	"math/rand/v2"
	"strings"
	"testing"
)

// specialsRef is specials64 byte by byte: the definition the block codes keep.
func specialsRef(b []byte) uint64 {
	var m uint64
	for j, c := range b[:64] {
		if c == '"' || c == '\\' || c < 0x20 {
			m |= 1 << j
		}
	}
	return m
}

// TestSpecials64Bytes puts every byte value at every place of a block (the
// others plain, then the others special) and holds specials64 and scanMasks
// (with the vector code where there is one, and without) to the byte-by-byte
// bitmaps; then random blocks.
func TestSpecials64Bytes(t *testing.T) {
	for _, fill := range []byte{'a', 0x00, '"', 0xff, 0x20, 0x80, '\\', 'n'} {
		b := []byte(strings.Repeat(string([]byte{fill}), 64))
		for j := range 64 {
			for c := range 256 {
				b[j] = byte(c)
				checkSpecials(t, b)
			}
			b[j] = fill
		}
	}
	rng := rand.New(rand.NewPCG(1, 2))
	b := make([]byte, 64)
	for range 20000 {
		for j := range b {
			b[j] = byte(rng.IntN(256))
			if rng.IntN(2) == 0 {
				const edges = `"\ 	a!#/bfnrtu` // near the edges of the tests
				b[j] = edges[rng.IntN(len(edges))]
			}
		}
		checkSpecials(t, b)
	}
}

// checkSpecials holds specials64(b) and scanMasks(b), with the vector code
// where there is one and without, to the byte-by-byte bitmaps: specials64's,
// the backslashes' and the simple escapes' letters' with the vector code, 0 for
// the last two without.
func checkSpecials(t *testing.T, b []byte) {
	t.Helper()
	want := specialsRef(b)
	if got := specials64(b); got != want {
		t.Fatalf("specials64(%q) = %064b, want %064b", b, got, want)
	}
	defer func(v bool) { useAVX2 = v }(useAVX2)
	for _, avx := range []bool{useAVX2, false} {
		useAVX2 = avx
		var wbs, wesc uint64
		if avx {
			for j, c := range b[:64] {
				if c == '\\' {
					wbs |= 1 << j
				}
				if strings.IndexByte(`"\\/bfnrt`, c) >= 0 {
					wesc |= 1 << j
				}
			}
		}
		if s, bs, esc := scanMasks(b); s != want || bs != wbs || esc != wesc {
			t.Fatalf("scanMasks (AVX2 %v) (%q) = %064b %064b %064b, want %064b %064b %064b", avx, b, s, bs, esc, want, wbs, wesc)
		}
	}
}

// FuzzSpecials64: the vector code and the pure Go one give the same bitmaps,
// the byte-by-byte ones, on any 64 bytes.
func FuzzSpecials64(f *testing.F) {
	f.Add([]byte(`{"a":"b\"c\\d` + "\x00\x1f\x20\x7f\x80\xff" + `"}`))
	f.Add([]byte(strings.Repeat("plain text, words and spaces ", 3)))
	f.Add([]byte(strings.Repeat(`\n\"\/\b\f\r\t\\\u`, 4)))
	f.Fuzz(func(t *testing.T, in []byte) {
		b := make([]byte, 64)
		copy(b, in)
		checkSpecials(t, b)
	})
}

// FuzzScanStringBlocks: scanString (its blocks crossed with the vector code's
// masks where there is one, then without) ends, reports an escape and fails
// where the scan before the block scanner (oldscanString) did, on strings of
// text and escapes long enough to be crossed 64 bytes at a time, each seed
// string also shifted by 0 to 63 bytes against the blocks.
func FuzzScanStringBlocks(f *testing.F) {
	words := strings.Repeat(`lock a goroutine \n with \"quoted\" text \t and\/or `, 4)
	for _, s := range []string{
		words, words + `"tail`, words + `\\n` + words, words + `\u00e9` + words, words + `\x` + words,
		words + "\x01" + words, words + `\\"` + words, words + `\u12` + `"`, words + `\`,
		strings.Repeat(`\n`, 40), strings.Repeat(`\"`, 40) + `"`, strings.Repeat(`a\\`, 40),
		words + "\xc3\xa9\x7f" + words, strings.Repeat("x", 58) + `\n` + words, strings.Repeat("x", 59) + `\n` + words,
		strings.Repeat("x", 62) + `\n` + words, strings.Repeat("x", 63) + `\n` + words,
	} {
		f.Add([]byte(s), uint8(0))
		f.Add([]byte(s), uint8(37))
	}
	f.Fuzz(func(t *testing.T, in []byte, shift uint8) {
		b := append(append([]byte(strings.Repeat(" ", int(shift%64))+`"`), in...), `"}`...)
		i := bytes.IndexByte(b, '"')
		wend, wesc, werr := oldscanString(b, i)
		defer func(v bool) { useAVX2 = v }(useAVX2)
		for _, avx := range []bool{useAVX2, false} {
			useAVX2 = avx
			end, esc, err := scanString(b, i)
			if (err != nil) != (werr != nil) || err == nil && (end != wend || esc != wesc) {
				t.Fatalf("scanString(%q) (AVX2 %v) = %d, %v, %v; want %d, %v, %v", b, avx, end, esc, err, wend, wesc, werr)
			}
		}
	})
}

// TestScanStringBlocksEdges holds scanString (with the vector code's masks
// where there is one, then without) to the scan before the block scanner on the
// block scanner's edges: each piece put at every place of a block (a backslash
// at bit 58 to 63, an escaped quote just before the closing quote, a control
// byte just after an escape, "\\" pairs, \u next to simple escapes, with good
// and bad hex, a multi-byte character across the block's end, the closing quote
// at bit 0 or 63), in strings of plain text or of escapes; then random strings of
// the bytes that matter.
func TestScanStringBlocksEdges(t *testing.T) {
	check := func(b []byte) {
		t.Helper()
		wend, wesc, werr := oldscanString(b, 0)
		defer func(v bool) { useAVX2 = v }(useAVX2)
		for _, avx := range []bool{useAVX2, false} {
			useAVX2 = avx
			end, esc, err := scanString(b, 0)
			if (err != nil) != (werr != nil) || err == nil && (end != wend || esc != wesc) {
				t.Fatalf("scanString(%q) (AVX2 %v) = %d, %v, %v; want %d, %v, %v", b, avx, end, esc, err, wend, wesc, werr)
			}
		}
	}
	pieces := []string{
		`\n`, `\"`, `\\`, `\\\\`, `\\\"`, `\"\"`, `\/`, `\b\f\n\r\t`, `\u00e9`, `\u00E9\n`, `\n\u00e9`,
		`\u12G4`, `\u12`, `\u`, `\x`, `\a`, `\ `, `\U0041`, `\n` + "\x01", `\"` + "\x1f", "\\\x00", `\\` + "\x01",
		`\"` + `"`, `\\"`, `\n"`, `"`, "\x01", "\x7f", "\xc3\xa9", "\xe2\x82\xac", "\xf0\x9f\x98\x80", "\xff",
		`\`, `\u00`, `\\\`,
	}
	fills := []string{"x", `\n`, `\"`, `\t`, "é"}
	for _, fill := range fills {
		for _, pre := range []string{"", "y"} { // y: escapes at odd places too
			body := pre + strings.Repeat(fill, 200/len(fill))
			for _, p := range pieces {
				for at := len(pre); at < 140; at += len(fill) {
					// Every place of the piece against the blocks (the
					// string's blocks start 9 bytes in) between whole
					// fills: a closing quote far off, right after the
					// piece, none (the line ends in the string).
					check([]byte(`"` + body[:at] + p + body[at:] + `"}`))
					check([]byte(`"` + body[:at] + p + `"}`))
					check([]byte(`"` + body[:at] + p))
				}
			}
		}
	}
	// The closing quote at every place, after plain text and after escapes.
	for _, fill := range fills {
		body := strings.Repeat(fill, 300/len(fill))
		for n := 0; n < len(body); n++ {
			check([]byte(`"` + body[:n] + `"  `))
		}
	}
	rng := rand.New(rand.NewPCG(3, 4))
	for range 200000 {
		n := 64 + rng.IntN(200)
		b := make([]byte, 0, n+2)
		b = append(b, '"')
		for len(b) < n {
			switch r := rng.IntN(40); {
			case r < 24:
				b = append(b, "plain text "[rng.IntN(11)])
			case r < 34:
				b = append(b, []string{`\n`, `\"`, `\t`, `\/`, `\\`}[rng.IntN(5)]...)
			case r < 36:
				b = append(b, `\u00e9`...)
			default:
				b = append(b, []string{`\u0G`, `\x`, "\x01", `\`, "\xc3\xa9", `"`, `\u`}[rng.IntN(7)]...)
			}
		}
		if rng.IntN(2) == 0 {
			b = append(b, '"')
		}
		check(b)
	}
}
