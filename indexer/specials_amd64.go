//go:build amd64 && !purego

package indexer

// On amd64 with AVX2, a block of 64 string bytes is classified with vector
// compares (scanMasksAVX2, specials_amd64.s): a few instructions for what
// specials64 does with about a hundred, and the bitmaps of the backslashes and
// of the simple escapes' letters besides. specials64 is the fallback (no AVX2,
// the purego tag, other architectures) and the reference: FuzzSpecials64 checks
// that both give the same bitmap.

// scanMasksAVX2 is scanMasks of the 64 bytes at b.
//
//go:noescape
func scanMasksAVX2(b *[64]byte) (s, bs, esc uint64)

// scanMasks returns specials64(b), and the bitmaps of b[:64]'s backslashes (bs)
// and of its bytes that are a simple escape's letter (esc: one of "\\/bfnrt);
// bs and esc are 0 where there is no vector code (scanStringBlocks then
// crosses each escape on its own).
func scanMasks(b []byte) (s, bs, esc uint64) {
	if useAVX2 {
		return scanMasksAVX2((*[64]byte)(b))
	}
	return specials64(b), 0, 0
}
