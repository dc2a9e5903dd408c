//go:build amd64 && !purego

#include "textflag.h"

// func cpuHasAVX2() bool
TEXT ·cpuHasAVX2(SB), NOSPLIT, $0-1
	MOVB $0, ret+0(FP)
	MOVL $0, AX
	CPUID
	CMPL AX, $7
	JLT  done
	MOVL $1, AX
	MOVL $0, CX
	CPUID
	MOVL CX, R8
	ANDL $0x18000000, R8 // OSXSAVE (bit 27) and AVX (bit 28)
	CMPL R8, $0x18000000
	JNE  done
	MOVL $0, CX
	XGETBV
	ANDL $6, AX // XMM and YMM state saved by the OS
	CMPL AX, $6
	JNE  done
	MOVL $7, AX
	MOVL $0, CX
	CPUID
	BTL  $5, BX // AVX2
	JCC  done
	MOVB $1, ret+0(FP)
done:
	RET

// func specials64AVX2(b *[64]byte) uint64
TEXT ·specials64AVX2(SB), NOSPLIT, $0-16
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
	VMOVDQU (SI), Y0
	VMOVDQU 32(SI), Y1
	VPCMPEQB Y0, Y2, Y5
	VPCMPEQB Y0, Y3, Y6
	VPOR     Y5, Y6, Y5
	VPMINUB  Y0, Y4, Y6  // min(c, 0x1f) == c: c below 0x20
	VPCMPEQB Y0, Y6, Y6
	VPOR     Y5, Y6, Y5
	VPMOVMSKB Y5, AX
	VPCMPEQB Y1, Y2, Y7
	VPCMPEQB Y1, Y3, Y8
	VPOR     Y7, Y8, Y7
	VPMINUB  Y1, Y4, Y8
	VPCMPEQB Y1, Y8, Y8
	VPOR     Y7, Y8, Y7
	VPMOVMSKB Y7, BX
	SHLQ $32, BX
	MOVL AX, AX
	ORQ  BX, AX
	VZEROUPPER
	MOVQ AX, ret+8(FP)
	RET
