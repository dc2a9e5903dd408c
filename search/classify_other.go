//go:build !amd64 || purego

package search

// classify64 returns the bitmaps of b's first 64 bytes: w of the ASCII letters
// and digits, x of the bytes that are no plain text ('"', '\\', control bytes,
// bytes of multi-byte characters).
func classify64(b []byte) (w, x uint64) { return classify64Go(b) }
