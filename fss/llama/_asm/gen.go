//go:build ignore

// gen writes rekey_amd64.s, the node kernels of package llama: for each
// seed, the AES-128 key schedule of the seed (bits 0 and 1 cleared)
// expanded on the fly, round by round, and the encryption of the four
// counters 0…3 under it. rekeyExpand4 is AES-NI with two nodes
// interleaved; rekeyExpandZ8 is VAES on ZMM, four nodes a register, two
// registers interleaved. Every round is one pattern, unrolled here rather
// than by hand (or by #define), so the kernels are reviewed as this
// program; TestKernelMatchesGeneric and the DCF vectors pin the result.
//
//	go run ./_asm/gen.go -out rekey_amd64.s
package main

import (
	"fmt"

	"github.com/kord-fss/kord/internal/asmgen"
)

// asm is the assembly file being written.
type asm = asmgen.Buf

// rounds is AES-128's round count: round constants 0…9.
const rounds = 10

// rcons are AES-128's round constants.
var rcons = [rounds]uint64{0x01, 0x02, 0x04, 0x08, 0x10, 0x20, 0x40, 0x80, 0x1b, 0x36}

func main() {
	asmgen.Main("rekey_amd64.s", func(a *asm) {
		a.Line(`#include "textflag.h"`)
		a.Line("")
		tables(a)
		a.Line("")
		sse(a)
		a.Line("")
		zmm(a)
	})
}

func tables(a *asm) {
	a.Line("// Clears bits 0 and 1 of a block: LLAMA's notThreeBlock.")
	a.Data("notthree", "0xfffffffffffffffc", "0xffffffffffffffff")
	a.Line("")
	a.Line("// The four PRG plaintexts: the u64 0, 1, 2, 3 in the low half.")
	a.Data("ctrs", "0", "0", "1", "0", "2", "0", "3", "0")
	a.Line("")
	a.Line("// RotWord(w3) broadcast to all four words (PSHUFB control).")
	a.Data("rotw", "0x0c0f0e0d0c0f0e0d", "0x0c0f0e0d0c0f0e0d")
	a.Line("")
	a.Line("// The ten round constants, each broadcast to four words.")
	var words []string
	for _, r := range rcons {
		w := fmt.Sprintf("0x%016x", r<<32|r)
		words = append(words, w, w)
	}
	a.Data("rcon", words...)
}

// args loads the three arguments of both kernels.
func args(a *asm) {
	a.Op("MOVQ seeds+0(FP), SI")
	a.Op("MOVQ out+8(FP), DI")
	a.Op("MOVQ n+16(FP), CX")
}

// nextKey advances the AES-128 round key in k by round i (FIPS-197 key
// expansion) with temporaries t and u and the RotWord shuffle in X11.
// SubWord(RotWord(w3)) ⊕ rcon comes from AESENCLAST on the broadcast word
// (ShiftRows is the identity on equal columns), which pipelines where
// AESKEYGENASSIST does not.
func nextKey(a *asm, i int, k, t, u string) {
	a.Op("MOVOU %s, %s", k, t)
	a.Op("PSHUFB X11, %s", t)
	a.Op("MOVOU rcon<>+%d(SB), %s", 16*i, u)
	a.Op("AESENCLAST %s, %s", u, t)
	a.Op("MOVOU %s, %s", k, u)
	for range 3 {
		a.Op("PSLLO $4, %s", u)
		a.Op("PXOR %s, %s", u, k)
	}
	a.Op("PXOR %s, %s", t, k)
}

// node is one node's registers in the SSE kernel: its key, the key
// schedule's temporaries and the four states.
type node struct {
	key, t, u string
	states    [4]string
}

var (
	nodeA = node{"X4", "X5", "X6", [4]string{"X0", "X1", "X2", "X3"}}
	nodeB = node{"X12", "X13", "X14", [4]string{"X7", "X8", "X9", "X10"}}
)

// load reads the seed at off(SI) into n's key and clears its bits 0 and 1.
func (n node) load(a *asm, off string) {
	a.Op("MOVOU %s(SI), %s", off, n.key)
	a.Op("PAND X15, %s", n.key)
}

// xorCounters sets n's four states to key ⊕ counter: AES's first round
// key addition on the counters 0…3.
func (n node) xorCounters(a *asm) {
	a.Op("MOVOU %s, %s", n.key, n.states[0])
	for j := 1; j < 4; j++ {
		a.Op("MOVOU ctrs<>+%d(SB), %s", 16*j, n.states[j])
		a.Op("PXOR %s, %s", n.key, n.states[j])
	}
}

// enc writes one round of n's four states under its key.
func (n node) enc(a *asm, last bool) {
	ins := "AESENC"
	if last {
		ins = "AESENCLAST"
	}
	for _, s := range n.states {
		a.Op("%s %s, %s", ins, n.key, s)
	}
}

// run writes the whole AES of the nodes ns (already loaded), interleaved
// round by round: the key step of every node, then its encryptions.
func run(a *asm, ns ...node) {
	for i := range rounds {
		for _, n := range ns {
			nextKey(a, i, n.key, n.t, n.u)
		}
		for _, n := range ns {
			n.enc(a, i == rounds-1)
		}
	}
}

// store writes the nodes' four outputs each from 0(DI) on.
func store(a *asm, ns ...node) {
	off := 0
	for _, n := range ns {
		for _, s := range n.states {
			a.Op("MOVOU %s, %d(DI)", s, off)
			off += 16
		}
	}
}

func sse(a *asm) {
	a.Line("// func rekeyExpand4(seeds *Block, out *[4]Block, n int)")
	a.Line("// For i < n: K = seeds[i] with bits 0,1 cleared; out[i][j] = AES_K(j),")
	a.Line("// j = 0..3. The key schedule is computed on the fly, round by round, two")
	a.Line("// nodes interleaved so that one node's schedule latency hides the")
	a.Line("// other's (an odd last node alone).")
	a.Line("TEXT ·rekeyExpand4(SB), NOSPLIT, $0-24")
	args(a)
	a.Op("MOVOU notthree<>(SB), X15")
	a.Op("MOVOU rotw<>(SB), X11")
	a.Op("CMPQ CX, $2")
	a.Op("JB single")
	a.Line("")
	a.Label("pair")
	nodeA.load(a, "")
	nodeB.load(a, "16")
	nodeA.xorCounters(a)
	nodeB.xorCounters(a)
	run(a, nodeA, nodeB)
	store(a, nodeA, nodeB)
	a.Op("ADDQ $32, SI")
	a.Op("ADDQ $128, DI")
	a.Op("SUBQ $2, CX")
	a.Op("CMPQ CX, $2")
	a.Op("JAE pair")
	a.Line("")
	a.Label("single")
	a.Op("TESTQ CX, CX")
	a.Op("JZ done")
	a.Line("")
	a.Label("loop")
	nodeA.load(a, "")
	nodeA.xorCounters(a)
	run(a, nodeA)
	store(a, nodeA)
	a.Op("ADDQ $16, SI")
	a.Op("ADDQ $64, DI")
	a.Op("DECQ CX")
	a.Op("JNZ loop")
	a.Line("")
	a.Label("done")
	a.Op("RET")
}

// nextKeyZ advances the four round keys in k by one round; the round
// constant (broadcast to every lane) is in Z16, temporaries t and u. The
// running XOR of the four key words takes two shift steps (by one word,
// then by two) instead of three, and the last two XORs are one VPTERNLOGQ
// (0x96: a ⊕ b ⊕ c): fewer port-5 shuffles per round.
func nextKeyZ(a *asm, k, t, u string) {
	a.Op("VPSHUFB Z11, %s, %s", k, t)
	a.Op("VAESENCLAST Z16, %s, %s", t, t)
	a.Op("VPSLLDQ $4, %s, %s", k, u)
	a.Op("VPXORQ %s, %s, %s", u, k, k)
	a.Op("VPSLLDQ $8, %s, %s", k, u)
	a.Op("VPTERNLOGQ $0x96, %s, %s, %s", t, u, k)
}

// store4 transposes four registers s (s[j] holds counter j's block of
// four nodes) into node order and stores the four nodes' 64-byte rows at
// off(DI).
func store4(a *asm, s [4]string, off int) {
	a.Op("VSHUFI64X2 $0x44, %s, %s, Z20", s[1], s[0])
	a.Op("VSHUFI64X2 $0x44, %s, %s, Z21", s[3], s[2])
	a.Op("VSHUFI64X2 $0xee, %s, %s, Z22", s[1], s[0])
	a.Op("VSHUFI64X2 $0xee, %s, %s, Z23", s[3], s[2])
	a.Op("VSHUFI64X2 $0x88, Z21, Z20, %s", s[0])
	a.Op("VSHUFI64X2 $0xdd, Z21, Z20, %s", s[1])
	a.Op("VSHUFI64X2 $0x88, Z23, Z22, %s", s[2])
	a.Op("VSHUFI64X2 $0xdd, Z23, Z22, %s", s[3])
	for j := range s {
		a.Op("VMOVDQU64 %s, %d(DI)", s[j], off+64*j)
	}
}

func zmm(a *asm) {
	a.Line("// The AVX-512 VAES kernel: four nodes per ZMM register, one 128-bit lane")
	a.Line("// each. VAESENC, VAESENCLAST, VPSHUFB and VPSLLDQ all work lane by lane,")
	a.Line("// so one instruction stream expands four different key schedules and")
	a.Line("// encrypts under them, and two register groups (eight nodes) interleave")
	a.Line("// to hide the schedule's latency chain.")
	a.Line("")
	a.Line("// func rekeyExpandZ8(seeds *Block, out *[4]Block, n int)")
	a.Line("// rekeyExpand4 for n a multiple of 8, eight nodes at a time.")
	a.Line("TEXT ·rekeyExpandZ8(SB), NOSPLIT, $0-24")
	args(a)
	a.Op("VBROADCASTI32X4 notthree<>(SB), Z15")
	a.Op("VBROADCASTI32X4 rotw<>(SB), Z11")
	for j := 1; j < 4; j++ {
		a.Op("VBROADCASTI32X4 ctrs<>+%d(SB), Z%d", 16*j, 16+j)
	}
	a.Op("CMPQ CX, $8")
	a.Op("JB zdone")
	a.Line("")
	a.Label("zloop")
	groups := []node{
		{"Z4", "Z5", "Z6", [4]string{"Z0", "Z1", "Z2", "Z3"}},
		{"Z12", "Z13", "Z14", [4]string{"Z7", "Z8", "Z9", "Z10"}},
	}
	for g, n := range groups {
		a.Op("VMOVDQU64 %d(SI), %s", 64*g, n.key)
		a.Op("VPANDQ Z15, %s, %s", n.key, n.key)
	}
	for _, n := range groups {
		a.Op("VMOVDQA64 %s, %s", n.key, n.states[0])
		for j := 1; j < 4; j++ {
			a.Op("VPXORQ Z%d, %s, %s", 16+j, n.key, n.states[j])
		}
	}
	for i := range rounds {
		a.Op("VBROADCASTI32X4 rcon<>+%d(SB), Z16", 16*i)
		for _, n := range groups {
			nextKeyZ(a, n.key, n.t, n.u)
		}
		ins := "VAESENC"
		if i == rounds-1 {
			ins = "VAESENCLAST"
		}
		for _, n := range groups {
			for _, s := range n.states {
				a.Op("%s %s, %s, %s", ins, n.key, s, s)
			}
		}
	}
	for g, n := range groups {
		store4(a, n.states, 256*g)
	}
	a.Op("ADDQ $128, SI")
	a.Op("ADDQ $512, DI")
	a.Op("SUBQ $8, CX")
	a.Op("CMPQ CX, $8")
	a.Op("JAE zloop")
	a.Line("")
	a.Label("zdone")
	a.Op("VZEROUPPER")
	a.Op("RET")
}
