// The DPF Gen level kernels on ZMM registers (AVX-512 with VAES), and the register wipes.

package main

import (
	"fmt"
)

// dpfGen512 emits vaes512DPFGenLevel and vaes512DPFGenFirst, the DPF Gen
// level of vaesDPFGenLevel on ZMM registers (AVX-512 with VAES):
//
//	func NAME(k *zmmSeedSchedule, quads *Block, n int, alpha *uint64,
//		shift uint64, out *byte, stride uint64, ctrlRel int64, ctrlShift uint64)
//
// on the same chain layout: one 64-byte load of key pair q's chains is
// [A | B] = [party-0 chain of 2q, of 2q+1 | party-1 chain of 2q, of 2q+1],
// hashed as one register under K_sL and one under K_sR. The round keys come
// from memory, pre-broadcast to all four lanes (k[h][r] for lane h = 0: K_sL,
// 1: K_sR; k[h][11] is round 10 with bit 0 of lanes 2 and 3 flipped, the
// first level's last round key). The correction works on [A | B] directly:
// a half swap gives each key's XOR of both parties, duplicated in both
// halves, and the α and control-bit selections are mask-register blends, so
// one instruction serves both parties of two keys. It uses the same
// derivation as genPostLevel; at the first level the flipped round key
// makes party 1's raw children carry t1 = 1 in bit 0, so the same step
// applies with fixed control bits (t0, t1) = (0, 1).
func (g *gen) dpfGen512() {
	g.buf.WriteString(`
// zmmTab: notOne, the lane-low one, ones in both quadwords (64 bytes
// each). Only ever read at fixed offsets: masks that depend on α or
// control bits are computed (see genPost512).
`)
	for l := 0; l < 4; l++ {
		fmt.Fprintf(&g.buf, "DATA zmmTab<>+%d(SB)/8, $0xfffffffffffffffe\n", 16*l)
		fmt.Fprintf(&g.buf, "DATA zmmTab<>+%d(SB)/8, $0xffffffffffffffff\n", 16*l+8)
	}
	for l := 0; l < 4; l++ {
		fmt.Fprintf(&g.buf, "DATA zmmTab<>+%d(SB)/8, $1\n", 64+16*l)
		fmt.Fprintf(&g.buf, "DATA zmmTab<>+%d(SB)/8, $0\n", 64+16*l+8)
	}
	for l := 0; l < 4; l++ {
		fmt.Fprintf(&g.buf, "DATA zmmTab<>+%d(SB)/8, $1\n", 128+16*l)
		fmt.Fprintf(&g.buf, "DATA zmmTab<>+%d(SB)/8, $1\n", 128+16*l+8)
	}
	g.buf.WriteString("GLOBL zmmTab<>(SB), RODATA|NOPTR, $192\n")
	g.dpfGen512Func("vaes512DPFGenLevel", false)
	g.dpfGen512Func("vaes512DPFGenFirst", true)
}

func (g *gen) dpfGen512Func(name string, first bool) {
	last := 10
	if first {
		last = 11
	}
	g.genLevelPrologue(name, "*zmmSeedSchedule", zPark+64, "zmmTab")
	fmt.Fprintf(&g.buf, `	MOVL $0xf0, R13
	KMOVB R13, K4
	VMOVDQU64 0(BX), Z29
	VMOVDQU64 64(BX), Z30
	VMOVDQU64 128(BX), Z31
	VMOVDQU64 0(AX), Z16
	VMOVDQU64 %[1]d(AX), Z17
	VMOVDQU64 %[2]d(AX), Z18
	VMOVDQU64 %[3]d(AX), Z19
`, 12*64, 64*last, 12*64+64*last)
	var post []string
	for q := 0; q < zP; q++ {
		post = append(post, genPost512(q, -64*zP, first)...)
	}
	post = append(post, fmt.Sprintf("ADDQ $%d, R8", 16*zP))
	aes := func(P int, extra []string) { g.genAES512(P, extra, first) }
	g.pipelined(name, zP, aes, g.genPark512, post)
	// Up to zP-1 key pairs are left: one at a time.
	g.p("CMPQ DX, $2")
	g.p("JB " + name + "_done")
	g.genAES512(1, nil, first)
	g.genPark512(1)
	for _, l := range genPost512(0, 0, first) {
		g.p("%s", l)
	}
	g.p("ADDQ $16, R8")
	g.p("ADDQ $64, SI")
	g.p("SUBQ $2, DX")
	g.p("JMP " + name + "_tail")
	g.label(name + "_done")
	g.wipe512()
	g.p("RET")
}

// genAES512 emits the MMO of P key pairs' chains (64 bytes at 64q(SI))
// under K_sL (into Z2q) and K_sR (into Z2q+1), spreading the lines of extra
// between rounds 0–9.
func (g *gen) genAES512(P int, extra []string, first bool) {
	per := (len(extra) + 9) / 10
	spill := func() {
		for i := 0; i < per && len(extra) > 0; i++ {
			g.p("%s", extra[0])
			extra = extra[1:]
		}
	}
	for q := 0; q < P; q++ {
		g.p("VMOVDQU64 %d(SI), Z%d", 64*q, 8+q)
	}
	for q := 0; q < P; q++ {
		for h := 0; h < 2; h++ {
			st := 2*q + h
			if first {
				g.p("VPXORQ Z%d, Z%d, Z%d", 8+q, 16+h, st)
				continue
			}
			// state = k0 ^ (chain & notOne)
			g.p("VMOVDQA64 Z%d, Z%d", 16+h, st)
			g.p("VPTERNLOGQ $0x78, Z%d, Z29, Z%d", 8+q, st)
		}
	}
	spill()
	for r := 1; r <= 9; r++ {
		for h := 0; h < 2; h++ {
			for q := 0; q < P; q++ {
				g.p("VAESENC %d(AX), Z%d, Z%d", (12*h+r)*64, 2*q+h, 2*q+h)
			}
		}
		if r < 9 {
			spill()
		}
	}
	for len(extra) > 0 {
		spill()
	}
	for q := 0; q < P; q++ {
		for h := 0; h < 2; h++ {
			tmp := 12 + h
			g.p("VPXORQ Z%d, Z%d, Z%d", 8+q, 18+h, tmp)
			g.p("VAESENCLAST Z%d, Z%d, Z%d", tmp, 2*q+h, 2*q+h)
		}
	}
}

// genPark512 stores P key pairs' raw children: pair q's L at 128q(R15), its
// R at 128q+64(R15).
func (g *gen) genPark512(P int) {
	for q := 0; q < P; q++ {
		g.p("VMOVDQU64 Z%d, %d(R15)", 2*q, 128*q)
		g.p("VMOVDQU64 Z%d, %d(R15)", 2*q+1, 128*q+64)
	}
}

// genPost512 is genPostLevel for parked key pair q on [A | B] registers:
// chains at pOff+64q(SI), α words at 16q(R8), outputs at DI and DI+stride
// (DI is advanced past both). It uses Z20–Z28, K1–K3, K5, CX, R9, R13
// and the mask byte after the park.
func genPost512(q, pOff int, first bool) []string {
	p, f := pOff+64*q, 128*q
	// Quadwords 0–1 and 4–5 of [A | B] are key 2q's (parties 0 and 1),
	// 2–3 and 6–7 key 2q+1's. The masks are computed from the bits, never
	// loaded from a table indexed by them (see alphaMask).
	lines := []string{
		fmt.Sprintf("SHRXQ R11, %d(R8), CX", 16*q),
		"ANDL $1, CX",
		fmt.Sprintf("SHRXQ R11, %d(R8), R13", 16*q+8),
		"ANDL $1, R13",
		"LEAL (CX)(R13*4), CX", // z = a0 | a1<<2
		// α: blend R where set: 3z in both parties' nibbles, 0x33·z.
		"IMUL3L $0x33, CX, R9",
		// Through the frame, not KMOVB from R9: that one issues on port 5,
		// which the shuffles below and the AES rounds' neighbours need;
		// the store-forwarded load does not.
		fmt.Sprintf("MOVB R9B, %d(R15)", zPark),
		fmt.Sprintf("KMOVB %d(R15), K1", zPark),
		"LEAL (CX)(CX*2), CX",
		"XORL $10, CX", // the control-bit base, 3z ^ 0b1010
	}
	tm := "K4" // level 1: party 1's lanes
	if !first {
		tm = "K2"
		lines = append(lines,
			// The correction mask: each chain's old control bit (bit 0 of
			// its lane's low quadword), tested into K2's even bits and
			// copied to the odd ones.
			fmt.Sprintf("VPTESTMQ %d(SI), Z30, K2", p),
			"KSHIFTLB $1, K2, K5",
			"KORB K5, K2, K2",
		)
	}
	return append(append(lines,
		fmt.Sprintf("VMOVDQU64 %d(R15), Z20", f),    // L' of [A | B]
		fmt.Sprintf("VMOVDQU64 %d(R15), Z21", f+64), // R'
		"VSHUFI64X2 $0x4e, Z20, Z20, Z22",
		"VPXORQ Z20, Z22, Z22", // XL', both halves
		"VSHUFI64X2 $0x4e, Z21, Z21, Z23",
		"VPXORQ Z21, Z23, Z23",        // XR'
		"VPBLENDMQ Z21, Z20, K1, Z24", // Keep' of both parties
		"VPBLENDMQ Z22, Z23, K1, Z25", // Lose'X
		"VPXORQ Z23, Z22, Z26",        // XT'
		"VPANDQ Z29, Z25, Z27",        // sCW
		"MOVQ stride+48(FP), R9",
		"VMOVDQU64 X27, (DI)",
		"VEXTRACTI64X2 $1, Z27, (DI)(R9*1)",
		"VPTERNLOGQ $0xd2, Z30, Z26, Z25", // CW' = Lose'X ^ (^XT' & 1)
		fmt.Sprintf("VPXORQ Z25, Z24, %s, Z24", tm),
		fmt.Sprintf("VMOVDQU64 Z24, %d(SI)", p),
		// Control bits: bit 0 of XL', XR' of both keys (k0: bits 0, 1;
		// k1: bits 2, 3), then tLCW | tRCW<<1 = that ^ 2 ^ 3a.
		"VPUNPCKLQDQ Z23, Z22, Z28",
		"VPTESTMQ Z31, Z28, K3",
		"KMOVB K3, R9",
		"XORL R9, CX",
	), ctrlDeposit()...)
}

// wipe256 ends a fused YMM kernel: its parked raw children (seed material
// of the keys being made) are overwritten and every YMM register cleared,
// so nothing of them outlives the call in the frame or the registers.
func (g *gen) wipe256() {
	g.p("VPXOR Y0, Y0, Y0")
	for off := 0; off < 256; off += 32 {
		g.p("VMOVDQU Y0, %d(R15)", off)
	}
	g.p("VZEROALL")
}

// wipe512 is wipe256 for the ZMM kernels: the park and its mask bytes, the
// correction temporaries Z20–Z28 and, by VZEROALL, Z0–Z15 (Z16–Z19 and
// Z29–Z31 hold public round keys and constants).
func (g *gen) wipe512() {
	g.p("VPXORQ Z0, Z0, Z0")
	for off := 0; off < zPark+64; off += 64 {
		g.p("VMOVDQU64 Z0, %d(R15)", off)
	}
	for r := 20; r <= 28; r++ {
		g.p("VPXORQ Z%d, Z%d, Z%d", r, r, r)
	}
	g.p("VZEROALL")
}

// ctrlDeposit ends a key pair's correction step: the control-bit
// corrections of both keys in CX (key 2q's in bits 0–1, key 2q+1's in bits
// 2–3) go to byte 0 and byte 1 (R14 = 0x0303), shifted into place by R12
// and ORed into each key's control byte at DI+R10, DI advancing a stride
// per key.
func ctrlDeposit() []string {
	return []string{
		"PDEPL R14, CX, CX",
		"SHLXL R12, CX, CX",
		"ORB CL, (DI)(R10*1)",
		"ADDQ stride+48(FP), DI",
		"SHRL $8, CX",
		"ORB CL, (DI)(R10*1)",
		"ADDQ stride+48(FP), DI",
	}
}
