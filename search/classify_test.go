package search

import (
	"math/rand/v2"
	"strings"
	"testing"
)

// classifyRef is classify64 byte by byte: the definition the block codes keep.
func classifyRef(b []byte) (w, x uint64) {
	for j, c := range b[:64] {
		if 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' {
			w |= 1 << j
		}
		if c == '"' || c == '\\' || c < 0x20 || c >= 0x80 {
			x |= 1 << j
		}
	}
	return w, x
}

func checkClassify(t *testing.T, b []byte) {
	t.Helper()
	ww, wx := classifyRef(b)
	if w, x := classify64(b); w != ww || x != wx {
		t.Fatalf("classify64 (AVX2 %v) (%q) = %064b %064b, want %064b %064b", useAVX2, b, w, x, ww, wx)
	}
	if w, x := classify64Go(b); w != ww || x != wx {
		t.Fatalf("classify64Go(%q) = %064b %064b, want %064b %064b", b, w, x, ww, wx)
	}
}

// TestClassify64Bytes puts every byte value at every place of a block (the
// others a letter, a separator, a special byte in turn) and holds classify64
// (the vector code where there is one) and classify64Go to the byte-by-byte
// bitmaps; then random blocks.
func TestClassify64Bytes(t *testing.T) {
	for _, fill := range []byte{'a', ' ', 0x00, '"', 0xff, 'Z', '9', 0x80} {
		b := []byte(strings.Repeat(string([]byte{fill}), blockSpan))
		for j := range 64 {
			for c := range 256 {
				b[j] = byte(c)
				checkClassify(t, b)
			}
			b[j] = fill
		}
	}
	rng := rand.New(rand.NewPCG(1, 2))
	b := make([]byte, blockSpan)
	for range 20000 {
		for j := range b {
			b[j] = byte(rng.IntN(256))
			if rng.IntN(2) == 0 {
				b[j] = "@AZ[`az{/09:\"\\ \x1f\x7f"[rng.IntN(17)] // the edges of the ranges
			}
		}
		checkClassify(t, b)
	}
}

// FuzzClassify64: the vector code and the pure Go one give the same bitmaps,
// the byte-by-byte ones, on any 64 bytes.
func FuzzClassify64(f *testing.F) {
	f.Add([]byte(`Word salad, "quoted" \n 0123456789 @AZ[` + "`az{/:\x00\x1f\x7f\x80\xff\xc3\xa9"))
	f.Add([]byte(strings.Repeat("plain text, words and spaces ", 3)))
	f.Fuzz(func(t *testing.T, in []byte) {
		b := make([]byte, blockSpan)
		copy(b, in)
		checkClassify(t, b)
	})
}
