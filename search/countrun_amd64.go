//go:build amd64 && !purego

package search

import "unsafe"

// On amd64 the words of a run of blocks are cut by cutAsm and looked up and
// tallied by countRunAsm (countrun_amd64.s): blockWords.cut's loop in about 22
// instructions a word where the compiler's takes about 36, and
// blockWords.count's in about 30 where the compiler's takes about 70 (bounds
// checks, alignment padding, a value kept on the stack). blockWords.cut and
// count are the fallback (the purego tag, other architectures) and the
// reference: the tests count with both.

// useCountAsm is whether countRun runs countRunAsm (tests switch it off to run
// the fallback).
var useCountAsm = true

// countRunAsm is blockWords.count of the words whose keys and lhs are at keys
// and lhs from j on, into the pairs at pp of which np are in use, with the dict
// table at tb (mask+1 slots): it returns where it stopped and how many pairs
// are in use then.
//
//go:noescape
func countRunAsm(keys *[cutWords]uint64, lhs *[cutWords]uint32, j int, doc uint32, tb *dictSlot, mask uint32, pp *termTF, np int) (next, n int)

// countRun is blockWords.count.
func (c *blockWords) countRun(j int, doc uint32, tb []dictSlot, pairs []termTF) (int, []termTF) {
	if !useCountAsm || len(tb) == 0 || cap(pairs) == len(pairs) || uint(j) >= cutWords {
		return c.count(j, doc, tb, pairs)
	}
	pp := pairs[:cap(pairs)]
	j, n := countRunAsm(&c.key, &c.lh, j, doc, &tb[0], uint32(len(tb)-1), &pp[0], len(pairs))
	return j, pp[:n]
}

// cutAsm is blockWords.cut of c.
//
//go:noescape
func cutAsm(b *[blockSpan]byte, ws uint64, base, n int, c *blockWords) int

// The assembly takes the offsets of blockWords', dictSlot's and termTF's
// fields from go_asm.h; what it assumes beyond them is checked here (a compile
// error if not so): a slot's index times 3 times 8 is its offset, a pair's
// times 8, a key's and keyMask's times 8, an lh's and an at's times 4, and a
// pair {id, 0} is written at once as id's 8 bytes.
var (
	_ = [1]struct{}{}[unsafe.Sizeof(blockWords{}.key[0])-8]
	_ = [1]struct{}{}[unsafe.Sizeof(blockWords{}.lh[0])-4]
	_ = [1]struct{}{}[unsafe.Sizeof(blockWords{}.at[0])-4]
	_ = [1]struct{}{}[unsafe.Sizeof(keyMask)-64*8]
	_ = [1]struct{}{}[unsafe.Sizeof(dictSlot{})-24]
	_ = [1]struct{}{}[unsafe.Sizeof(dictSlot{}.key)-8]
	_ = [1]struct{}{}[unsafe.Sizeof(termTF{})-8]
	_ = [1]struct{}{}[unsafe.Offsetof(termTF{}.tf)-unsafe.Offsetof(termTF{}.id)-4]
)

// cutRun is blockWords.cut.
func (c *blockWords) cutRun(b *[blockSpan]byte, ws uint64, base, n int) int {
	if !useCountAsm || uint(n) > cutWords-maxBlockWords {
		return c.cut(b, ws, base, n)
	}
	return cutAsm(b, ws, base, n, c)
}
