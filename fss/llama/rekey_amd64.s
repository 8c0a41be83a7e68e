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

// The AVX-512 VAES kernel: four nodes per ZMM register, one 128-bit lane
// each. VAESENC, VAESENCLAST, VPSHUFB and VPSLLDQ all work lane by lane,
// so one instruction stream expands four different key schedules and
// encrypts under them, and two register groups (eight nodes) interleave
// to hide the schedule's latency chain.

// NEXTKEYZ advances the four round keys in K by one round; the round
// constant (broadcast to every lane) is in Z16, temporaries T and U. The
// running XOR of the four key words takes two shift steps (by one word,
// then by two) instead of three, and the last two XORs are one VPTERNLOGQ
// (0x96: a ⊕ b ⊕ c): fewer port-5 shuffles per round.
#define NEXTKEYZ(K, T, U) \
	VPSHUFB Z11, K, T; \
	VAESENCLAST Z16, T, T; \
	VPSLLDQ $4, K, U; \
	VPXORQ U, K, K; \
	VPSLLDQ $8, K, U; \
	VPTERNLOGQ $0x96, T, U, K

#define ROUNDZ(i) \
	VBROADCASTI32X4 rcon<>+(16*i)(SB), Z16; \
	NEXTKEYZ(Z4, Z5, Z6); \
	NEXTKEYZ(Z12, Z13, Z14); \
	VAESENC Z4, Z0, Z0; \
	VAESENC Z4, Z1, Z1; \
	VAESENC Z4, Z2, Z2; \
	VAESENC Z4, Z3, Z3; \
	VAESENC Z12, Z7, Z7; \
	VAESENC Z12, Z8, Z8; \
	VAESENC Z12, Z9, Z9; \
	VAESENC Z12, Z10, Z10

// STORE4 transposes four registers S0..S3 (S_j holds counter j's block of
// four nodes) into node order and stores the four nodes' 64-byte rows at
// off(DI).
#define STORE4(S0, S1, S2, S3, off) \
	VSHUFI64X2 $0x44, S1, S0, Z20; \
	VSHUFI64X2 $0x44, S3, S2, Z21; \
	VSHUFI64X2 $0xee, S1, S0, Z22; \
	VSHUFI64X2 $0xee, S3, S2, Z23; \
	VSHUFI64X2 $0x88, Z21, Z20, S0; \
	VSHUFI64X2 $0xdd, Z21, Z20, S1; \
	VSHUFI64X2 $0x88, Z23, Z22, S2; \
	VSHUFI64X2 $0xdd, Z23, Z22, S3; \
	VMOVDQU64 S0, (off+0)(DI); \
	VMOVDQU64 S1, (off+64)(DI); \
	VMOVDQU64 S2, (off+128)(DI); \
	VMOVDQU64 S3, (off+192)(DI)

// func rekeyExpandZ8(seeds *Block, out *[4]Block, n int)
// rekeyExpand4 for n a multiple of 8, eight nodes at a time.
TEXT ·rekeyExpandZ8(SB), NOSPLIT, $0-24
	MOVQ seeds+0(FP), SI
	MOVQ out+8(FP), DI
	MOVQ n+16(FP), CX
	VBROADCASTI32X4 notthree<>(SB), Z15
	VBROADCASTI32X4 rotw<>(SB), Z11
	VBROADCASTI32X4 ctrs<>+16(SB), Z17
	VBROADCASTI32X4 ctrs<>+32(SB), Z18
	VBROADCASTI32X4 ctrs<>+48(SB), Z19
	CMPQ CX, $8
	JB zdone

zloop:
	VMOVDQU64 0(SI), Z4
	VPANDQ Z15, Z4, Z4
	VMOVDQU64 64(SI), Z12
	VPANDQ Z15, Z12, Z12
	VMOVDQA64 Z4, Z0
	VPXORQ Z17, Z4, Z1
	VPXORQ Z18, Z4, Z2
	VPXORQ Z19, Z4, Z3
	VMOVDQA64 Z12, Z7
	VPXORQ Z17, Z12, Z8
	VPXORQ Z18, Z12, Z9
	VPXORQ Z19, Z12, Z10
	ROUNDZ(0)
	ROUNDZ(1)
	ROUNDZ(2)
	ROUNDZ(3)
	ROUNDZ(4)
	ROUNDZ(5)
	ROUNDZ(6)
	ROUNDZ(7)
	ROUNDZ(8)
	VBROADCASTI32X4 rcon<>+144(SB), Z16
	NEXTKEYZ(Z4, Z5, Z6)
	NEXTKEYZ(Z12, Z13, Z14)
	VAESENCLAST Z4, Z0, Z0
	VAESENCLAST Z4, Z1, Z1
	VAESENCLAST Z4, Z2, Z2
	VAESENCLAST Z4, Z3, Z3
	VAESENCLAST Z12, Z7, Z7
	VAESENCLAST Z12, Z8, Z8
	VAESENCLAST Z12, Z9, Z9
	VAESENCLAST Z12, Z10, Z10
	STORE4(Z0, Z1, Z2, Z3, 0)
	STORE4(Z7, Z8, Z9, Z10, 256)
	ADDQ $128, SI
	ADDQ $512, DI
	SUBQ $8, CX
	CMPQ CX, $8
	JAE zloop

zdone:
	VZEROUPPER
	RET
