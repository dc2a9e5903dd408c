//go:build amd64 && !purego

#include "go_asm.h"
#include "textflag.h"

// func countRunAsm(keys *[cutWords]uint64, lhs *[cutWords]uint32, j int, doc uint32, tb *dictSlot, mask uint32, pp *termTF, np int) (next, n int)
//
// blockWords.count: for each word from j on, until one of no bytes or more
// than 8 (lhs' low byte) or not in its first slot or the next (a dictSlot is
// 24 bytes, a termTF 8, its id first: countrun_amd64.go checks; the fields'
// offsets are go_asm.h's), its pair is tallied: a new
// one {id, 0} is written at np and kept if the term's mark is not doc, then
// the pair at the slot's pair (np if new) gets one more.
TEXT ·countRunAsm(SB), NOSPLIT, $0-80
	MOVQ keys+0(FP), SI
	MOVQ lhs+8(FP), DI
	MOVQ j+16(FP), CX
	MOVL doc+24(FP), DX
	MOVQ tb+32(FP), R8
	MOVL mask+40(FP), R9
	MOVQ pp+48(FP), R10
	MOVQ np+56(FP), R11

loop:
	MOVL    (DI)(CX*4), AX // lh
	MOVBLZX AX, BX
	DECL    BX
	CMPL    BX, $7
	JA      done           // a long word, or the end
	MOVQ    (SI)(CX*8), R12 // key
	SHRL    $8, AX
	ANDL    R9, AX          // h: the first slot
	LEAL    1(AX), BX
	ANDL    R9, BX          // the next
	LEAQ    (AX)(AX*2), AX
	LEAQ    (BX)(BX*2), BX
	CMPQ    R12, dictSlot_key(R8)(AX*8)
	CMOVQNE BX, AX          // the next slot if the first is not the term's
	CMPQ    R12, dictSlot_key(R8)(AX*8)
	JNE     done            // new to the dict, or further on
	LEAQ    (R8)(AX*8), AX  // the term's slot
	MOVL    dictSlot_id(AX), BX
	DECL    BX              // its id (the upper half zeroed)
	MOVQ    BX, termTF_id(R10)(R11*8) // pairs[np] = {id, 0}
	MOVL    R11, R13         // at: np if new
	CMPL    DX, dictSlot_mark(AX)
	CMOVLEQ dictSlot_pair(AX), R13      // the term's pair if it occurred in doc
	SETNE   BL
	MOVBLZX BX, BX           // 1: new to the doc
	MOVL    DX, dictSlot_mark(AX)
	MOVL    R13, dictSlot_pair(AX)
	INCL    termTF_tf(R10)(R13*8)    // pairs[at].tf++
	ADDQ    BX, R11
	INCQ    CX
	JMP     loop

done:
	MOVQ CX, next+64(FP)
	MOVQ R11, n+72(FP)
	RET

// func cutAsm(b *[blockSpan]byte, ws uint64, base, n int, c *blockWords) int
//
// blockWords.cut: c's key, lh and at arrays at go_asm.h's offsets. c holds
// n and the block's words (at most 32) at their indexes unmasked: cutRun
// checks that they fit.
TEXT ·cutAsm(SB), NOSPLIT, $0-48
	MOVQ b+0(FP), SI
	MOVQ ws+8(FP), AX
	MOVQ base+16(FP), R8
	MOVQ n+24(FP), CX
	MOVQ c+32(FP), DI
	LEAQ (AX)(AX*1), BX
	NOTQ BX
	ANDQ AX, BX            // the words' first bytes
	MOVQ AX, DX
	SHRQ $1, DX
	NOTQ DX
	ANDQ AX, DX            // their last bytes
	TESTQ BX, BX
	JZ   cutdone
	MOVQ $0x2020202020202020, R11
	MOVQ $0x9E3779B97F4A7C15, R12 // dictMul
	LEAQ ·keyMask(SB), R13

cutloop:
	BSFQ  BX, AX           // s
	BSFQ  DX, R9
	LEAQ  -1(BX), R14
	ANDQ  R14, BX
	LEAQ  -1(DX), R14
	ANDQ  R14, DX
	SUBQ  AX, R9
	INCQ  R9               // k
	MOVQ  (SI)(AX*1), R10
	ORQ   R11, R10         // lower case
	ANDQ  (R13)(R9*8), R10 // keyMask[k]
	MOVQ  R10, blockWords_key(DI)(CX*8) // key
	IMULQ R12, R10
	SHRQ  $40, R10
	SHLL  $8, R10
	ORL   R9, R10
	MOVL  R10, blockWords_lh(DI)(CX*4) // lh
	LEAQ  (R8)(AX*1), R14
	MOVL  R14, blockWords_at(DI)(CX*4) // at
	INCQ  CX
	TESTQ BX, BX
	JNZ   cutloop

cutdone:
	MOVQ CX, ret+40(FP)
	RET
