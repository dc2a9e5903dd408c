//go:build amd64 && !purego

#include "textflag.h"

// func countRunAsm(keys *[cutWords]uint64, lhs *[cutWords]uint32, j int, doc uint32, tb *dictSlot, mask uint32, pp *termTF, np int) (next, n int)
//
// blockWords.count: for each word from j on, until one of no bytes or more
// than 8 (lhs' low byte) or not in its first slot or the next (a dictSlot is
// 24 bytes: key 0, id 8, lh 12, mark 16, pair 20), its pair is tallied: a new
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
	CMPQ    R12, (R8)(AX*8)
	CMOVQNE BX, AX          // the next slot if the first is not the term's
	CMPQ    R12, (R8)(AX*8)
	JNE     done            // new to the dict, or further on
	LEAQ    (R8)(AX*8), AX  // the term's slot
	MOVL    8(AX), BX
	DECL    BX              // its id (the upper half zeroed)
	MOVQ    BX, (R10)(R11*8) // pairs[np] = {id, 0}
	MOVL    R11, R13         // at: np if new
	CMPL    DX, 16(AX)
	CMOVLEQ 20(AX), R13      // the term's pair if it occurred in doc
	SETNE   BL
	MOVBLZX BX, BX           // 1: new to the doc
	MOVL    DX, 16(AX)
	MOVL    R13, 20(AX)
	INCL    4(R10)(R13*8)    // pairs[at].tf++
	ADDQ    BX, R11
	INCQ    CX
	JMP     loop

done:
	MOVQ CX, next+64(FP)
	MOVQ R11, n+72(FP)
	RET
