//go:build amd64 && !purego

#include "textflag.h"

// Clears bits 0 and 1 of a block: LLAMA's notThreeBlock.
DATA notthree<>+0(SB)/8, $0xfffffffffffffffc
DATA notthree<>+8(SB)/8, $0xffffffffffffffff
GLOBL notthree<>(SB), RODATA|NOPTR, $16

// The four PRG plaintexts: the u64 0, 1, 2, 3 in the low half.
DATA ctrs<>+0(SB)/8, $0
DATA ctrs<>+8(SB)/8, $0
DATA ctrs<>+16(SB)/8, $1
DATA ctrs<>+24(SB)/8, $0
DATA ctrs<>+32(SB)/8, $2
DATA ctrs<>+40(SB)/8, $0
DATA ctrs<>+48(SB)/8, $3
DATA ctrs<>+56(SB)/8, $0
GLOBL ctrs<>(SB), RODATA|NOPTR, $64

// NEXTKEY advances the AES-128 round key in X4 (FIPS-197 key expansion,
// one round, rcon rc), using X5 and X6.
#define NEXTKEY(rc) \
	AESKEYGENASSIST $rc, X4, X5; \
	PSHUFD $0xff, X5, X5; \
	MOVOU X4, X6; \
	PSLLO $4, X6; \
	PXOR X6, X4; \
	PSLLO $4, X6; \
	PXOR X6, X4; \
	PSLLO $4, X6; \
	PXOR X6, X4; \
	PXOR X5, X4

#define ENC4 \
	AESENC X4, X0; \
	AESENC X4, X1; \
	AESENC X4, X2; \
	AESENC X4, X3

// func rekeyExpand4(seeds *Block, out *[4]Block, n int)
// For i < n: K = seeds[i] with bits 0,1 cleared; out[i][j] = AES_K(j),
// j = 0..3. The key schedule is computed on the fly, round by round.
TEXT ·rekeyExpand4(SB), NOSPLIT, $0-24
	MOVQ seeds+0(FP), SI
	MOVQ out+8(FP), DI
	MOVQ n+16(FP), CX
	MOVOU notthree<>(SB), X15
	MOVOU ctrs<>+16(SB), X9
	MOVOU ctrs<>+32(SB), X10
	MOVOU ctrs<>+48(SB), X11
	TESTQ CX, CX
	JZ done

loop:
	MOVOU (SI), X4
	PAND X15, X4
	MOVOU X4, X0
	MOVOU X9, X1
	PXOR X4, X1
	MOVOU X10, X2
	PXOR X4, X2
	MOVOU X11, X3
	PXOR X4, X3
	NEXTKEY(0x01); ENC4
	NEXTKEY(0x02); ENC4
	NEXTKEY(0x04); ENC4
	NEXTKEY(0x08); ENC4
	NEXTKEY(0x10); ENC4
	NEXTKEY(0x20); ENC4
	NEXTKEY(0x40); ENC4
	NEXTKEY(0x80); ENC4
	NEXTKEY(0x1b); ENC4
	NEXTKEY(0x36)
	AESENCLAST X4, X0
	AESENCLAST X4, X1
	AESENCLAST X4, X2
	AESENCLAST X4, X3
	MOVOU X0, 0(DI)
	MOVOU X1, 16(DI)
	MOVOU X2, 32(DI)
	MOVOU X3, 48(DI)
	ADDQ $16, SI
	ADDQ $64, DI
	DECQ CX
	JNZ loop

done:
	RET
