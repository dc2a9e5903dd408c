//go:build amd64 && !purego

package search

// On amd64 with AVX2, a block of 64 bytes is classified with vector compares
// (classify64AVX2, classify_amd64.s): a few instructions for what classify64Go
// does with about two hundred. classify64Go is the fallback (no AVX2, the
// purego tag, other architectures) and the reference: FuzzClassify64 checks
// that both give the same bitmaps.

// classify64AVX2 is classify64Go of the 64 bytes at b.
//
//go:noescape
func classify64AVX2(b *[64]byte) (w, x uint64)

// classify64 returns the bitmaps of b's first 64 bytes: w of the ASCII letters
// and digits, x of the bytes that are no plain text ('"', '\\', control bytes,
// bytes of multi-byte characters).
func classify64(b []byte) (w, x uint64) {
	if useAVX2 {
		return classify64AVX2((*[64]byte)(b))
	}
	return classify64Go(b)
}
