package indexer

import (
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
// others plain, then the others special) and holds specials64 (the vector code
// where there is one) and specials64Go to the byte-by-byte bitmap.
func TestSpecials64Bytes(t *testing.T) {
	for _, fill := range []byte{'a', 0x00, '"', 0xff, 0x20, 0x80} {
		b := []byte(strings.Repeat(string([]byte{fill}), 64))
		for j := range 64 {
			for c := range 256 {
				b[j] = byte(c)
				want := specialsRef(b)
				if got := specials64(b); got != want {
					t.Fatalf("specials64 (AVX2 %v) byte %#x at %d in %#x: %064b, want %064b", useAVX2, c, j, fill, got, want)
				}
				if got := specials64Go(b); got != want {
					t.Fatalf("specials64Go byte %#x at %d in %#x: %064b, want %064b", c, j, fill, got, want)
				}
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
				b[j] = `"\ 	a!#`[rng.IntN(7)] // near the edges of the tests
			}
		}
		if want, got := specialsRef(b), specials64(b); got != want {
			t.Fatalf("specials64(%q) = %064b, want %064b", b, got, want)
		}
	}
}

// FuzzSpecials64: the vector code and the pure Go one give the same bitmap,
// the byte-by-byte one, on any 64 bytes.
func FuzzSpecials64(f *testing.F) {
	f.Add([]byte(`{"a":"b\"c\\d` + "\x00\x1f\x20\x7f\x80\xff" + `"}`))
	f.Add([]byte(strings.Repeat("plain text, words and spaces ", 3)))
	f.Fuzz(func(t *testing.T, in []byte) {
		b := make([]byte, 64)
		copy(b, in)
		want := specialsRef(b)
		if got := specials64(b); got != want {
			t.Fatalf("specials64 (AVX2 %v) (%q) = %064b, want %064b", useAVX2, b, got, want)
		}
		if got := specials64Go(b); got != want {
			t.Fatalf("specials64Go(%q) = %064b, want %064b", b, got, want)
		}
	})
}
