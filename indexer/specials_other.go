//go:build !amd64 || purego

package indexer

// scanMasks returns specials64(b), and 0 for the bitmaps of the backslashes
// and of the simple escapes' letters that the vector code gives
// (specials_amd64.go): scanStringBlocks crosses each escape on its own.
func scanMasks(b []byte) (s, bs, esc uint64) { return specials64(b), 0, 0 }
