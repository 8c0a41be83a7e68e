//go:build ignore

// gen writes aes256_amd64.s, the AES-256 kernels of package kdf: the key
// expansion and the in-place multi-block encryption (AES-NI, eight blocks
// in flight; VAES on ZMM, 32). Every round is one pattern, unrolled here
// rather than by hand, so the kernels are reviewed as this program.
//
//	go run ./_asm/gen.go -out aes256_amd64.s
package main

import (
	"fmt"

	"github.com/kord-fss/kord/internal/asmgen"
)

// asm is the assembly file being written.
type asm = asmgen.Buf

// rounds is AES-256's round count: round keys 0…14 at 16-byte steps.
const rounds = 14

func main() {
	asmgen.Main("aes256_amd64.s", func(a *asm) {
		a.Line("// AES-256 with AES-NI: key expansion (AESKEYGENASSIST, the FIPS-197")
		a.Line("// schedule) and in-place encryption of many blocks, eight in flight (32")
		a.Line("// with VAES on ZMM registers, encrypt256v). The rounds are unrolled by")
		a.Line("// _asm/gen.go from one pattern per step; TestMultiMatchesCryptoAES pins")
		a.Line("// the result to crypto/aes.")
		a.Line("")
		a.Line(`#include "textflag.h"`)
		a.Line("")
		expand(a)
		a.Line("")
		a.Line("// func encrypt256(ks *schedule256, buf *byte, n int)")
		a.Line("// Encrypts n 16-byte blocks at buf in place, eight at a time, then one at a time.")
		a.Line("TEXT ·encrypt256(SB), NOSPLIT, $0-24")
		args(a)
		loops(a, "loop8", "loop1", "done")
		a.Line("")
		a.Line("// func encrypt256v(ks *schedule256, buf *byte, n int)")
		a.Line("// encrypt256 with VAES on ZMM: 32 blocks in flight (four per register),")
		a.Line("// then the AES-NI loops for the rest.")
		a.Line("TEXT ·encrypt256v(SB), NOSPLIT, $0-24")
		args(a)
		vaes32(a)
		loops(a, "v8", "v1", "vdone")
	})
}

func args(a *asm) {
	a.Op("MOVQ ks+0(FP), AX")
	a.Op("MOVQ buf+8(FP), SI")
	a.Op("MOVQ n+16(FP), CX")
}

// expand writes expand256: round keys 0 and 1 are the key; each later
// pair comes from AESKEYGENASSIST on the previous key with the round
// constant (even keys: RotWord+SubWord, word 3; odd keys: SubWord only,
// word 2), xored into the running prefix-xor of the key two back.
func expand(a *asm) {
	a.Line("// func expand256(key *[32]byte, ks *schedule256)")
	a.Line("TEXT ·expand256(SB), NOSPLIT, $0-16")
	a.Op("MOVQ key+0(FP), AX")
	a.Op("MOVQ ks+8(FP), DX")
	a.Op("MOVOU 0(AX), X1")
	a.Op("MOVOU 16(AX), X3")
	a.Op("MOVOU X1, 0(DX)")
	a.Op("MOVOU X3, 16(DX)")
	step := func(rcon string, shuf string, src, dst string, off int) {
		a.Op("AESKEYGENASSIST $%s, %s, X2", rcon, src)
		a.Op("PSHUFD $%s, X2, X2", shuf)
		a.Op("MOVO %s, X4", dst)
		for range 3 {
			a.Op("PSLLO $4, X4")
			a.Op("PXOR X4, %s", dst)
		}
		a.Op("PXOR X2, %s", dst)
		a.Op("MOVOU %s, %d(DX)", dst, off)
	}
	rcon := 1
	for k := 2; k <= rounds; k++ {
		if k%2 == 0 {
			step(fmt.Sprintf("0x%x", rcon), "0xff", "X3", "X1", 16*k)
			rcon <<= 1
		} else {
			step("0x00", "0xaa", "X1", "X3", 16*k)
		}
	}
	for _, r := range []string{"X1", "X2", "X3", "X4"} {
		a.Op("PXOR %s, %s", r, r)
	}
	a.Op("RET")
}

// loops writes the eight-block loop, the one-block loop and the exit that
// clears every register that held a block or a round key.
func loops(a *asm, l8, l1, done string) {
	a.Label(l8)
	a.Op("CMPQ CX, $8")
	a.Op("JB %s", l1)
	a.Op("MOVOU 0(AX), X8")
	for i := range 8 {
		a.Op("MOVOU %d(SI), X%d", 16*i, i)
		a.Op("PXOR X8, X%d", i)
	}
	for r := 1; r <= rounds; r++ {
		a.Op("MOVOU %d(AX), X8", 16*r)
		for i := range 8 {
			a.Op("%s X8, X%d", aesenc(r), i)
		}
	}
	for i := range 8 {
		a.Op("MOVOU X%d, %d(SI)", i, 16*i)
	}
	a.Op("ADDQ $128, SI")
	a.Op("SUBQ $8, CX")
	a.Op("JMP %s", l8)
	a.Label(l1)
	a.Op("TESTQ CX, CX")
	a.Op("JZ %s", done)
	a.Op("MOVOU 0(SI), X0")
	a.Op("MOVOU 0(AX), X8")
	a.Op("PXOR X8, X0")
	for r := 1; r <= rounds; r++ {
		a.Op("MOVOU %d(AX), X8", 16*r)
		a.Op("%s X8, X0", aesenc(r))
	}
	a.Op("MOVOU X0, 0(SI)")
	a.Op("ADDQ $16, SI")
	a.Op("DECQ CX")
	a.Op("JMP %s", l1)
	a.Label(done)
	for i := range 9 {
		a.Op("PXOR X%d, X%d", i, i)
	}
	a.Op("RET")
}

// vaes32 writes the 32-block VAES loop (four blocks per ZMM register,
// round keys broadcast) and clears the ZMM registers before the AES-NI
// loops take the rest.
func vaes32(a *asm) {
	a.Label("v32")
	a.Op("CMPQ CX, $32")
	a.Op("JB v32end")
	a.Op("VBROADCASTI32X4 0(AX), Z8")
	for i := range 8 {
		a.Op("VPXORQ %d(SI), Z8, Z%d", 64*i, i)
	}
	for r := 1; r <= rounds; r++ {
		a.Op("VBROADCASTI32X4 %d(AX), Z8", 16*r)
		for i := range 8 {
			a.Op("V%s Z8, Z%d, Z%d", aesenc(r), i, i)
		}
	}
	for i := range 8 {
		a.Op("VMOVDQU64 Z%d, %d(SI)", i, 64*i)
	}
	a.Op("ADDQ $512, SI")
	a.Op("SUBQ $32, CX")
	a.Op("JMP v32")
	a.Label("v32end")
	for i := range 9 {
		a.Op("VPXORQ Z%d, Z%d, Z%d", i, i, i)
	}
	a.Op("VZEROUPPER")
}

func aesenc(round int) string {
	if round == rounds {
		return "AESENCLAST"
	}
	return "AESENC"
}
