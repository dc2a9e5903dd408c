package search

import (
	"encoding/binary"
	"math/bits"

	"github.com/sessionwatch/sessionwatch/internal/avx2"
)

// The block tokenizer: countEscaped's fast path over plain text, 64 bytes at a
// time. Finding words one after another chains each word's start to the load
// and classification of the word before it (about 20 cycles a word, most of
// what countEscaped cost per word); classifying a block of 64 bytes into two
// bitmaps first (which bytes are ASCII letters or digits, which are not plain
// text) takes the loads off that chain: the words of a block are cut from the
// bitmaps with a few bit operations each, their keys loaded at addresses known
// from the bitmaps alone.

// blockSpan is how many bytes past a block's start countBlocks reads: the block
// and the 8 bytes a word of up to 8 bytes that starts at its last byte is
// loaded with.
const blockSpan = 64 + 8

// countBlocks counts the words of in from i on, 64 bytes at a time, as
// countEscaped counts them from i outside any word and with no CJK character
// pending; it stops before the first of its bytes that is not plain text (no
// ASCII letter, digit or plain separator, nor an escape that decodes to a
// separator) and the word that runs up to it, and where fewer than blockSpan
// bytes of in are left. It returns where it stopped (i if nowhere further), how
// many terms it counted, pairs, and the index countEscaped, which reads on
// from where it stopped, is to pass before it calls it again (the stopping
// byte; len(in) if it stopped at in's end).
func (p *preparedLines) countBlocks(in []byte, i int, doc uint32, pairs []termTF) (int, int, []termTF, int) {
	n := 0
	for i+blockSpan <= len(in) {
		b := in[i : i+blockSpan]
		w, x := classify64(b)
		end, stop := 64, -1
		for x != 0 {
			at := bits.TrailingZeros64(x)
			if at == 63 {
				end = 63 // left to the next block (an escape's letter would be there)
				break
			}
			if b[at] == '\\' && escSep[b[at+1]] {
				// An escape that decodes to a separator: both its bytes are
				// separators ("\n": the n is none of a word's).
				w &^= 2 << at
				x &^= 3 << at
				continue
			}
			end, stop = at, i+at
			break
		}
		if end > 0 && w>>(end-1)&1 != 0 {
			// The word that runs up to the end is left to the next block, or
			// to countEscaped: it may go on past it.
			end = bits.Len64(^w & (1<<end - 1))
		}
		for ws := w & (1<<end - 1); ws != 0; {
			var k int
			ws, k, pairs = countWords((*[blockSpan]byte)(b), ws, doc, p.dict.table, pairs)
			n += k
			if ws == 0 {
				break
			}
			// The next word is longer than 8 bytes or new to the dict, or
			// pairs is full: counted with calls.
			s := bits.TrailingZeros64(ws)
			r := ws + ws&-ws
			ws &= r
			pairs = p.countWord(pairs, b[s:bits.TrailingZeros64(r)], doc)
			n++
		}
		if stop >= 0 || end == 0 {
			return i + end, n, pairs, max(stop, i+end)
		}
		i += end
	}
	return i, n, pairs, len(in)
}

// useAVX2 is whether classify64 runs the vector code (classify_amd64.go): AVX2
// on amd64, the purego tag not set (tests switch it off to run the fallback).
var useAVX2 = avx2.Supported

// classify64Go returns the bitmaps of b's first 64 bytes: w of the ASCII
// letters and digits, x of the bytes that are no plain text ('"', '\\', control
// bytes, bytes of multi-byte characters): classify64 in pure Go
// (classify_amd64.go). Unrolled by hand: the compiler would call classify8
// eight times.
func classify64Go(b []byte) (w, x uint64) {
	b = b[:64]
	w0, x0 := classify8(binary.LittleEndian.Uint64(b[0:]))
	w1, x1 := classify8(binary.LittleEndian.Uint64(b[8:]))
	w2, x2 := classify8(binary.LittleEndian.Uint64(b[16:]))
	w3, x3 := classify8(binary.LittleEndian.Uint64(b[24:]))
	w4, x4 := classify8(binary.LittleEndian.Uint64(b[32:]))
	w5, x5 := classify8(binary.LittleEndian.Uint64(b[40:]))
	w6, x6 := classify8(binary.LittleEndian.Uint64(b[48:]))
	w7, x7 := classify8(binary.LittleEndian.Uint64(b[56:]))
	w = pack8(w0) | pack8(w1)<<8 | pack8(w2)<<16 | pack8(w3)<<24 | pack8(w4)<<32 | pack8(w5)<<40 | pack8(w6)<<48 | pack8(w7)<<56
	x = pack8(x0) | pack8(x1)<<8 | pack8(x2)<<16 | pack8(x3)<<24 | pack8(x4)<<32 | pack8(x5)<<40 | pack8(x6)<<48 | pack8(x7)<<56
	return w, x
}

// classify8 is classify64 of the 8 bytes of v (little-endian), before packing:
// the high bit of each byte in each bitmap.
func classify8(v uint64) (w, x uint64) {
	const hi, lo7, each = 0x8080808080808080, 0x7f7f7f7f7f7f7f7f, 0x0101010101010101
	lv := v & lo7
	l := lv | 0x20*each // a letter lower case
	letter := (l + (0x80-'a')*each) &^ (l + (0x7f-'z')*each)
	digit := (lv + (0x80-'0')*each) &^ (lv + (0x7f-'9')*each)
	// '"' (0x22 with bit 1 flipped: 0x20) and the control bytes are below
	// 0x21 with bit 1 flipped; a backslash is 0 xored with '\\'. No sum
	// carries out of its byte.
	q, bs := lv^0x02*each, lv^'\\'*each
	return (letter | digit) &^ v & hi, (^((q + (0x80-0x21)*each) & (bs + lo7)) | v) & hi
}

// countWords counts the words of b whose bits are set in ws (runs of them, each
// ending before bit 63), lowest first, as long as each is of 1 to 8 bytes, a
// term of the dict whose table is tb, and pairs has room; it returns the bits
// of the words it did not count. It calls nothing: its state stays in
// registers.
func countWords(b *[blockSpan]byte, ws uint64, doc uint32, tb []dictSlot, pairs []termTF) (uint64, int, []termTF) {
	n := 0
	if len(tb) == 0 {
		return ws, 0, pairs
	}
	mask := uint32(len(tb) - 1)
	for ws != 0 {
		s := bits.TrailingZeros64(ws)
		r := ws + ws&-ws // the word's bits cleared, the bit past it set
		k := bits.TrailingZeros64(r) - s
		if k > 8 || len(pairs) == cap(pairs) {
			break
		}
		key := (binary.LittleEndian.Uint64(b[s:s+8]) | 0x2020202020202020) & (^uint64(0) >> ((64 - 8*k) & 63)) // lower case
		lh := uint32(key*dictMul>>40)<<8 | uint32(k)
		h := lh >> 8 & mask
		for {
			if e := &tb[h]; e.key == key && e.lh == lh || e.id == 0 {
				break
			}
			h = (h + 1) & mask
		}
		e := &tb[h]
		if e.id == 0 {
			break // a new term
		}
		// tally, inline: pairs has room.
		np := len(pairs)
		pairs = pairs[:np+1]
		pairs[np] = termTF{e.id - 1, 0}
		// Whether the term is new to the doc is a coin toss: settled in
		// arithmetic, not by a branch.
		d := e.mark ^ doc
		isNew := (d | -d) >> 31 // 1: new to the doc
		sel := -isNew           // all ones: new
		at := e.pair&^sel | uint32(np)&sel
		e.mark, e.pair = doc, at
		pairs[at].tf++
		pairs = pairs[:np+int(isNew)]
		ws &= r
		n++
	}
	return ws, n, pairs
}

// pack8 gathers the high bits of m's bytes (its other bits clear) into its low
// 8 bits, byte 0's lowest.
func pack8(m uint64) uint64 {
	return (m >> 7) * 0x0102040810204080 >> 56
}

// countWord counts the ASCII word w of up to 63 letters and digits into pairs.
func (p *preparedLines) countWord(pairs []termTF, w []byte, doc uint32) []termTF {
	t := p.long[:len(w)]
	for j, c := range w {
		t[j] = c | 0x20 // lower case
	}
	return p.countTerm(pairs, t, doc)
}
