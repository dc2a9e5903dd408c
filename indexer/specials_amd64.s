//go:build amd64 && !purego

#include "textflag.h"

// The simple escapes' letters by nibble: a byte is one iff
// escHi[c>>4] & escLo[c&15] != 0. Classes: 0x2_ with low nibble 2 or f ('"',
// '/'), 0x5c ('\\'), 0x6_ with 2, 6 or e ('b', 'f', 'n'), 0x7_ with 2 or 4
// ('r', 't').
DATA escHi<>+0(SB)/8, $0x0804020000010000
DATA escHi<>+8(SB)/8, $0x0000000000000000
GLOBL escHi<>(SB), RODATA|NOPTR, $16
DATA escLo<>+0(SB)/8, $0x00040008000d0000
DATA escLo<>+8(SB)/8, $0x0104000200000000
GLOBL escLo<>(SB), RODATA|NOPTR, $16

// func scanMasksAVX2(b *[64]byte) (s, bs, esc uint64)
TEXT ·scanMasksAVX2(SB), NOSPLIT, $0-32
	MOVQ b+0(FP), SI
	MOVL $0x22, AX
	MOVQ AX, X2
	VPBROADCASTB X2, Y2 // '"'
	MOVL $0x5c, AX
	MOVQ AX, X3
	VPBROADCASTB X3, Y3 // '\\'
	MOVL $0x1f, AX
	MOVQ AX, X4
	VPBROADCASTB X4, Y4 // the last control byte
	MOVL $0x0f, AX
	MOVQ AX, X9
	VPBROADCASTB X9, Y9 // a nibble
	VBROADCASTI128 escHi<>(SB), Y10
	VBROADCASTI128 escLo<>(SB), Y11

	VMOVDQU (SI), Y0
	VPCMPEQB  Y0, Y2, Y5
	VPCMPEQB  Y0, Y3, Y6 // backslashes
	VPOR      Y5, Y6, Y5
	VPMINUB   Y0, Y4, Y7
	VPCMPEQB  Y0, Y7, Y7
	VPOR      Y5, Y7, Y5
	VPMOVMSKB Y5, AX
	VPMOVMSKB Y6, BX
	VPSRLW    $4, Y0, Y7
	VPAND     Y9, Y7, Y7
	VPSHUFB   Y7, Y10, Y7 // escHi[c>>4]
	VPAND     Y9, Y0, Y8
	VPSHUFB   Y8, Y11, Y8 // escLo[c&15]
	VPAND     Y7, Y8, Y7
	VPXOR     Y8, Y8, Y8
	VPCMPEQB  Y7, Y8, Y7 // not an escape's letter
	VPMOVMSKB Y7, CX

	VMOVDQU 32(SI), Y1
	VPCMPEQB  Y1, Y2, Y5
	VPCMPEQB  Y1, Y3, Y6
	VPOR      Y5, Y6, Y5
	VPMINUB   Y1, Y4, Y7
	VPCMPEQB  Y1, Y7, Y7
	VPOR      Y5, Y7, Y5
	VPMOVMSKB Y5, DX
	VPMOVMSKB Y6, R8
	VPSRLW    $4, Y1, Y7
	VPAND     Y9, Y7, Y7
	VPSHUFB   Y7, Y10, Y7
	VPAND     Y9, Y1, Y8
	VPSHUFB   Y8, Y11, Y8
	VPAND     Y7, Y8, Y7
	VPXOR     Y8, Y8, Y8
	VPCMPEQB  Y7, Y8, Y7
	VPMOVMSKB Y7, R9
	VZEROUPPER

	SHLQ $32, DX
	ORQ  DX, AX
	MOVQ AX, s+8(FP)
	SHLQ $32, R8
	ORQ  R8, BX
	MOVQ BX, bs+16(FP)
	SHLQ $32, R9
	ORQ  R9, CX
	NOTQ CX
	MOVQ CX, esc+24(FP)
	RET
