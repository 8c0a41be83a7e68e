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

// RotWord(w3) broadcast to all four words (PSHUFB control).
DATA rotw<>+0(SB)/8, $0x0c0f0e0d0c0f0e0d
DATA rotw<>+8(SB)/8, $0x0c0f0e0d0c0f0e0d
GLOBL rotw<>(SB), RODATA|NOPTR, $16

// The ten round constants, each broadcast to four words.
#define RCON(i, v) DATA rcon<>+(16*i)(SB)/8, $v; DATA rcon<>+(16*i+8)(SB)/8, $v
RCON(0, 0x0000000100000001)
RCON(1, 0x0000000200000002)
RCON(2, 0x0000000400000004)
RCON(3, 0x0000000800000008)
RCON(4, 0x0000001000000010)
RCON(5, 0x0000002000000020)
RCON(6, 0x0000004000000040)
RCON(7, 0x0000008000000080)
RCON(8, 0x0000001b0000001b)
RCON(9, 0x0000003600000036)
GLOBL rcon<>(SB), RODATA|NOPTR, $160

#define NEXTKEY(i) NEXTKEYR(i, X4, X5, X6)

// NEXTKEYR advances the AES-128 round key in K by one round (FIPS-197 key
// expansion, round constant number i) with temporaries T and U and the
// RotWord shuffle in X11. SubWord(RotWord(w3)) ⊕ rcon comes from
// AESENCLAST on the broadcast word (ShiftRows is the identity on equal
// columns), which pipelines where AESKEYGENASSIST does not.
#define NEXTKEYR(i, K, T, U) \
	MOVOU K, T; \
	PSHUFB X11, T; \
	MOVOU rcon<>+(16*i)(SB), U; \
	AESENCLAST U, T; \
	MOVOU K, U; \
	PSLLO $4, U; \
	PXOR U, K; \
	PSLLO $4, U; \
	PXOR U, K; \
	PSLLO $4, U; \
	PXOR U, K; \
	PXOR T, K

#define ENC4 ENC4R(X4, X0, X1, X2, X3)

#define ENC4R(K, A, B, C, D) \
	AESENC K, A; \
	AESENC K, B; \
	AESENC K, C; \
	AESENC K, D

// One round of two interleaved nodes: key X4 (states X0-X3) and key X12
// (states X7-X10), so that one node's schedule latency hides the other's.
#define ROUND2(i) \
	NEXTKEYR(i, X4, X5, X6); \
	NEXTKEYR(i, X12, X13, X14); \
	ENC4R(X4, X0, X1, X2, X3); \
	ENC4R(X12, X7, X8, X9, X10)

// func rekeyExpand4(seeds *Block, out *[4]Block, n int)
// For i < n: K = seeds[i] with bits 0,1 cleared; out[i][j] = AES_K(j),
// j = 0..3. The key schedule is computed on the fly, round by round, two
// nodes interleaved (an odd last node alone).
TEXT ·rekeyExpand4(SB), NOSPLIT, $0-24
	MOVQ seeds+0(FP), SI
	MOVQ out+8(FP), DI
	MOVQ n+16(FP), CX
	MOVOU notthree<>(SB), X15
	MOVOU rotw<>(SB), X11
	CMPQ CX, $2
	JB single

pair:
	MOVOU (SI), X4
	PAND X15, X4
	MOVOU 16(SI), X12
	PAND X15, X12
	MOVOU X4, X0
	MOVOU ctrs<>+16(SB), X1
	PXOR X4, X1
	MOVOU ctrs<>+32(SB), X2
	PXOR X4, X2
	MOVOU ctrs<>+48(SB), X3
	PXOR X4, X3
	MOVOU X12, X7
	MOVOU ctrs<>+16(SB), X8
	PXOR X12, X8
	MOVOU ctrs<>+32(SB), X9
	PXOR X12, X9
	MOVOU ctrs<>+48(SB), X10
	PXOR X12, X10
	ROUND2(0)
	ROUND2(1)
	ROUND2(2)
	ROUND2(3)
	ROUND2(4)
	ROUND2(5)
	ROUND2(6)
	ROUND2(7)
	ROUND2(8)
	NEXTKEYR(9, X4, X5, X6)
	NEXTKEYR(9, X12, X13, X14)
	AESENCLAST X4, X0
	AESENCLAST X4, X1
	AESENCLAST X4, X2
	AESENCLAST X4, X3
	AESENCLAST X12, X7
	AESENCLAST X12, X8
	AESENCLAST X12, X9
	AESENCLAST X12, X10
	MOVOU X0, 0(DI)
	MOVOU X1, 16(DI)
	MOVOU X2, 32(DI)
	MOVOU X3, 48(DI)
	MOVOU X7, 64(DI)
	MOVOU X8, 80(DI)
	MOVOU X9, 96(DI)
	MOVOU X10, 112(DI)
	ADDQ $32, SI
	ADDQ $128, DI
	SUBQ $2, CX
	CMPQ CX, $2
	JAE pair

single:
	TESTQ CX, CX
	JZ done

loop:
	MOVOU (SI), X4
	PAND X15, X4
	MOVOU X4, X0
	MOVOU ctrs<>+16(SB), X1
	PXOR X4, X1
	MOVOU ctrs<>+32(SB), X2
	PXOR X4, X2
	MOVOU ctrs<>+48(SB), X3
	PXOR X4, X3
	NEXTKEY(0); ENC4
	NEXTKEY(1); ENC4
	NEXTKEY(2); ENC4
	NEXTKEY(3); ENC4
	NEXTKEY(4); ENC4
	NEXTKEY(5); ENC4
	NEXTKEY(6); ENC4
	NEXTKEY(7); ENC4
	NEXTKEY(8); ENC4
	NEXTKEY(9)
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
