package search

import (
	"encoding/binary"
	"math/bits"
	"slices"

	"github.com/sessionwatch/sessionwatch/internal/avx2"
)

// The block tokenizer: countEscaped's fast path over plain text, 64 bytes at a
// time. Finding words one after another chains each word's start to the load
// and classification of the word before it (about 20 cycles a word, most of
// what countEscaped cost per word); classifying a block of 64 bytes into two
// bitmaps first (which bytes are ASCII letters or digits, which are not plain
// text) takes the loads off that chain: the words of a block are cut from the
// bitmaps with a few bit operations each, their keys loaded at addresses known
// from the bitmaps alone. The words of a run of blocks are cut first, each
// hashed into a small array (blockWords), and then looked up and tallied in one
// loop that takes no branch on which term a word is: a word's lookup does not
// wait on the word before it, nor a mispredicted branch of the word before it.

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
	cw := &p.cut
	n, nw := 0, 0 // words counted, words cut and not yet counted
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
		if ws := w & (1<<end - 1); ws != 0 {
			if nw > len(cw.lh)-1-maxBlockWords {
				pairs = p.countCut(in, nw, doc, pairs)
				n, nw = n+nw, 0
			}
			nw = cw.cutRun((*[blockSpan]byte)(b), ws, i, nw)
		}
		if stop >= 0 || end == 0 {
			return i + end, n + nw, p.countCut(in, nw, doc, pairs), max(stop, i+end)
		}
		i += end
	}
	return i, n + nw, p.countCut(in, nw, doc, pairs), len(in)
}

// countCut counts the nw words cut into p.cut, in order, into pairs: most in
// one run of blockWords.count, each longer than 8 bytes or new to the dict
// with calls.
func (p *preparedLines) countCut(in []byte, nw int, doc uint32, pairs []termTF) []termTF {
	if nw == 0 {
		return pairs
	}
	cw := &p.cut
	const mask = len(cw.lh) - 1
	cw.lh[nw&mask] = 0 // the end
	if cap(pairs)-len(pairs) < nw {
		pairs = slices.Grow(pairs, nw) // room for every word
	}
	for j := 0; ; j++ {
		j, pairs = cw.countRun(j, doc, p.dict.table, pairs)
		if j >= nw {
			return pairs
		}
		// Word j is longer than 8 bytes, new to the dict or not in the
		// two slots count probes: counted with calls (each adds one pair at
		// most: the room stays).
		s, k := int(cw.at[j&mask]), int(cw.lh[j&mask]&0xff)
		pairs = p.countWord(pairs, in[s:s+k], doc)
	}
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

// maxBlockWords is how many words a block holds at most: each of its first 63
// bytes but the last of a word is followed by one not of the word.
const maxBlockWords = 32

// blockWords is the words of a run of blocks, cut (blockWords.cut) before any
// is looked up (blockWords.count): the loads of a word's bytes and its hashing
// do not wait on the lookup and tally of the word before it, the lookups'
// loads are issued from addresses known from the start, and the loop that
// counts them ends once a run, not once a block.
type blockWords struct {
	key [cutWords]uint64 // lower case, masked to the word (its first 8 bytes if longer)
	lh  [cutWords]uint32 // the dict's hash<<8 | length (the hash only if at most 8 bytes); after the last word 0
	at  [cutWords]int32  // where the word starts in the string
}

// cutWords is how many words blockWords holds (the last after them of no
// bytes): a power of two.
const cutWords = 256

// keyMask keeps the bytes of a word of k bytes (all 8 if longer) in its key.
var keyMask = func() (m [64]uint64) {
	for k := range m {
		m[k] = ^uint64(0) >> (64 - 8*min(k, 8)) // k = 0: never used
	}
	return m
}()

// cut adds to c, from its n-th word on, the words of block b (at base in its
// string) whose bits are set in ws (runs of them, each ending before bit 63),
// lowest first, and returns how many words c holds then.
func (c *blockWords) cut(b *[blockSpan]byte, ws uint64, base, n int) int {
	starts := ws &^ (ws << 1)
	ends := ws &^ (ws >> 1) // each word's last byte
	for starts != 0 {
		s := bits.TrailingZeros64(starts) & 63
		e := bits.TrailingZeros64(ends)
		starts &= starts - 1
		ends &= ends - 1
		k := e - s + 1
		key := (binary.LittleEndian.Uint64(b[s:s+8]) | 0x2020202020202020) & keyMask[k&63] // lower case
		i := n & (len(c.lh) - 1)
		c.key[i] = key
		c.lh[i] = uint32(key*dictMul>>40)<<8 | uint32(k)
		c.at[i] = int32(base + s)
		n++
	}
	return n
}

// count counts the cut words from j on (pairs has room for all of them) as
// long as each is of 1 to 8 bytes and a term of the dict whose table is tb,
// found in its first slot or the next; it returns the index of the first it
// did not count (the number of words if none: countCut ends them with a word
// of no bytes). It calls nothing and takes no branch that depends on which
// term a word is: its state stays in registers, and a word's lookup does not
// wait on the word before it.
func (c *blockWords) count(j int, doc uint32, tb []dictSlot, pairs []termTF) (int, []termTF) {
	if len(tb) == 0 {
		return j, pairs
	}
	mask := uint32(len(tb) - 1)
	np := uint32(len(pairs))
	pp := pairs[:cap(pairs)]
	for ; ; j++ {
		lh := c.lh[j&(len(c.lh)-1)]
		if lh&0xff-1 >= 8 {
			break // a long word, or the end
		}
		key := c.key[j&(len(c.key)-1)]
		// A term of up to 8 bytes is told by its key alone (a longer
		// one's is of another form: termKey). Its first slot or the next,
		// chosen by a conditional move; a collision costs no branch.
		h := lh >> 8 & mask
		h2 := (h + 1) & mask
		d, d2 := tb[h].key^key, tb[h2].key^key
		miss := (d | -d) >> 63 // 1: not in the first slot
		h ^= (h ^ h2) & -uint32(miss)
		if miss&((d2|-d2)>>63) != 0 {
			return j, pp[:np] // new to the dict, or further on
		}
		e := &tb[h]
		// tally, inline: pairs has room. Whether the term is new to the
		// doc is a coin toss: settled in arithmetic, not by a branch.
		pp[np] = termTF{e.id - 1, 0}
		m := e.mark ^ doc
		isNew := (m | -m) >> 31 // 1: new to the doc
		pair := e.pair
		at := pair ^ (pair^np)&-isNew // np if new
		e.mark, e.pair = doc, at
		pp[at].tf++
		np += isNew
	}
	return j, pp[:np]
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
