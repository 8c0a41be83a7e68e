// The DPF Gen level kernels on YMM registers (VAES): both parties' chains of many keys hashed at once, with the correction words computed in constant time.

package main

import (
	"fmt"
)

// dpfGen emits vaesDPFGenLevel, one fused DPF Gen level for n keys (n
// even):
//
//	func vaesDPFGenLevel(k *[2]Schedule, quads *Block, n int, alpha *uint64,
//		shift uint64, out *byte, stride uint64, ctrlRel int64, ctrlShift uint64)
//
// with K_sL's schedule in k[0] and K_sR's in k[1]. Keys go in pairs: for
// keys 2q and 2q+1, quads[4q:4q+4] holds A = [party-0 chain of 2q | of
// 2q+1] and B = [party-1 chain of 2q | of 2q+1], in folded form (bit 0 of
// byte 0 is the chain's control bit). With one key per 128-bit lane, the
// two parties of a key sit in the same lane of A and B, so every step of
// the correction is lane-wise: no cross-lane shuffles but one store.
// Per key i it computes the raw children, selects Keep/Lose by bit `shift`
// of alpha[i], writes sCW (16 bytes) at out+i·stride, ORs
// (tLCW | tRCW<<1) << ctrlShift into the byte at out+i·stride+ctrlRel, and
// replaces both chains with their folded corrected Keep children.
func (g *gen) dpfGen() {
	g.buf.WriteString(`
DATA genOne<>+0(SB)/8, $1
DATA genOne<>+8(SB)/8, $0
DATA genOne<>+16(SB)/8, $1
DATA genOne<>+24(SB)/8, $0
GLOBL genOne<>(SB), RODATA|NOPTR, $32

// genSel: per dword, the shift that takes bit 0 (low lane) or bit 1 (high
// lane) of a0 | a1<<1 to the sign (see alphaMask).
DATA genSel<>+0(SB)/8, $0x0000001f0000001f
DATA genSel<>+8(SB)/8, $0x0000001f0000001f
DATA genSel<>+16(SB)/8, $0x0000001e0000001e
DATA genSel<>+24(SB)/8, $0x0000001e0000001e
GLOBL genSel<>(SB), RODATA|NOPTR, $32
`)
	g.dpfGenFunc("vaesDPFGenLevel", false)
	g.dpfGenFunc("vaesDPFGenFirst", true)
}

// pipelined emits the main loop shared by the fused level kernels: blocks
// of P key pairs (64P bytes of chains at SI, 2P keys counted down in DX).
// While block b's AES rounds run (aes, with the lines of post spread
// between them), block b-1's post step runs on the children park left in
// the frame; after the last full block its post step runs alone, and
// control reaches name_tail with fewer than 2P keys left.
func (g *gen) pipelined(name string, P int, aes func(P int, extra []string), park func(P int), post []string) {
	keys := 2 * P
	g.p("CMPQ DX, $%d", keys)
	g.p("JB " + name + "_tail")
	aes(P, nil)
	park(P)
	g.p("ADDQ $%d, SI", 64*P)
	g.p("SUBQ $%d, DX", keys)
	g.label(name + "_loop")
	g.p("CMPQ DX, $%d", keys)
	g.p("JB " + name + "_drain")
	aes(P, post)
	park(P)
	g.p("ADDQ $%d, SI", 64*P)
	g.p("SUBQ $%d, DX", keys)
	g.p("JMP " + name + "_loop")
	g.label(name + "_drain")
	for _, l := range post {
		g.p("%s", l)
	}
	g.label(name + "_tail")
}

// genLevelPrologue starts a fused DPF Gen level kernel: its header, a
// frame of park bytes (plus 64 to align them; R15 is the aligned base) and
// the arguments in their registers (AX k, SI quads, DX n, R8 alpha, R11
// shift, DI out, R10 ctrlRel, R12 ctrlShift), BX the kernel's constant
// table (none if tab is empty) and R14 the control-bit deposit mask.
func (g *gen) genLevelPrologue(name, sched string, park int, tab string) {
	fmt.Fprintf(&g.buf, `
// func %[1]s(k %[2]s, quads *Block, n int, alpha *uint64, shift uint64, out *byte, stride uint64, ctrlRel int64, ctrlShift uint64)
TEXT ·%[1]s(SB), NOSPLIT, $%[3]d-72
	LEAQ 63(SP), R15
	ANDQ $-64, R15
	MOVQ k+0(FP), AX
	MOVQ quads+8(FP), SI
	MOVQ n+16(FP), DX
	MOVQ alpha+24(FP), R8
	MOVQ shift+32(FP), R11
	MOVQ out+40(FP), DI
	MOVQ ctrlRel+56(FP), R10
	MOVQ ctrlShift+64(FP), R12
`, name, sched, park+64)
	if tab != "" {
		g.p("LEAQ %s<>(SB), BX", tab)
	}
	g.p("MOVL $0x0303, R14")
}

// dpfGenFunc emits one DPF Gen level kernel. With first set it is level 1:
// the chains are the roots, used as given (bit 0 is seed, not control
// bit), with control bits t0 = 0 and t1 = 1.
func (g *gen) dpfGenFunc(name string, first bool) {
	g.genLevelPrologue(name, "*[2]Schedule", 256, "")
	g.p("VMOVDQU treeNotOne<>(SB), Y9")
	// The main loop is software pipelined: while the AES rounds of block b
	// (two key pairs, 8 chains) run, the corrections of block b-1 are
	// computed from its raw children parked in the frame (at R15, the
	// frame rounded up to 64 bytes: a park across cache lines costs split
	// loads and stores on every block).
	var post []string
	for q := 0; q < 2; q++ {
		post = append(post, genPost(q, -128, first)...)
	}
	post = append(post, "ADDQ $32, R8")
	aes := func(P int, extra []string) { g.genAES(P, extra, first) }
	g.pipelined(name, 2, aes, g.genPark, post)
	g.p("CMPQ DX, $2")
	g.p("JB " + name + "_done")
	g.genAES(1, nil, first)
	g.genPark(1)
	for _, l := range genPost(0, 0, first) {
		g.p("%s", l)
	}
	g.label(name + "_done")
	g.wipe256()
	g.p("RET")
}

// chainReg is the register of key pair q's chain for party (0: A, 1: B)
// under lane half (0: K_sL, 1: K_sR).
func chainReg(q, party, half int) int { return 4*q + 2*party + half }

// genAES emits the MMO of P key pairs' folded chains (A at 64q(SI), B at
// 64q+32(SI)) under K_sL and K_sR, spreading the lines of extra evenly
// between rounds 0–9 (they may use Y10–Y15, which round 10 needs).
func (g *gen) genAES(P int, extra []string, first bool) {
	per := (len(extra) + 9) / 10
	spill := func() {
		for i := 0; i < per && len(extra) > 0; i++ {
			g.p("%s", extra[0])
			extra = extra[1:]
		}
	}
	// K_sL's schedule at 0(AX), K_sR's right after it at 176(AX).
	for half := 0; half < 2; half++ {
		g.p("VBROADCASTI128 %d(AX), Y8", 176*half)
		for q := 0; q < P; q++ {
			for party := 0; party < 2; party++ {
				r, off := chainReg(q, party, half), 64*q+32*party
				if first {
					g.p("VPXOR %d(SI), Y8, Y%d", off, r)
					continue
				}
				g.p("VPAND %d(SI), Y9, Y%d", off, r)
				g.p("VPXOR Y8, Y%d, Y%d", r, r)
			}
		}
	}
	spill()
	for r := 1; r <= 9; r++ {
		for half := 0; half < 2; half++ {
			g.p("VBROADCASTI128 %d(AX), Y8", 176*half+16*r)
			for q := 0; q < P; q++ {
				for party := 0; party < 2; party++ {
					g.p("VAESENC Y8, Y%[1]d, Y%[1]d", chainReg(q, party, half))
				}
			}
		}
		if r < 9 {
			spill()
		}
	}
	for len(extra) > 0 {
		spill()
	}
	for half := 0; half < 2; half++ {
		g.p("VBROADCASTI128 %d(AX), Y8", 176*half+160)
		for q := 0; q < P; q++ {
			for party := 0; party < 2; party++ {
				r, off := chainReg(q, party, half), 64*q+32*party
				// The feed-forward takes the chain as it is, control bit
				// included: each child then carries its parent's t in bit 0,
				// which genPost absorbs (the roots have no control bit).
				g.p("VPXOR %d(SI), Y8, Y10", off)
				g.p("VAESENCLAST Y10, Y%[1]d, Y%[1]d", r)
			}
		}
	}
}

// genPark stores P key pairs' raw children to the frame: pair q's chain
// (party, half) at 128q + 64·party + 32·half (R15).
func (g *gen) genPark(P int) {
	for q := 0; q < P; q++ {
		for party := 0; party < 2; party++ {
			for half := 0; half < 2; half++ {
				g.p("VMOVDQU Y%d, %d(R15)", chainReg(q, party, half), 128*q+64*party+32*half)
			}
		}
	}
}

// genPost returns the correction step for parked key pair q, whose chains
// are at pOff+64q(SI), α words at 16q(R8) and outputs at DI and DI+stride
// (DI is advanced past both). It uses Y10–Y15, CX, R9 and R13 only.
func genPost(q, pOff int, first bool) []string {
	if !first {
		return genPostLevel(q, pOff)
	}
	p, f := pOff+64*q, 128*q
	lines := append(alphaMask(q),
		"LEAL (CX)(R13*4), CX", // a2 = a0 | a1<<2, kept for the bits below
	)
	lines = append(lines,
		// Keep = L ^ D, Lose = R ^ D with D = (L ^ R) & AM, both parties.
		fmt.Sprintf("VMOVDQU %d(R15), Y15", f),
		fmt.Sprintf("VMOVDQU %d(R15), Y14", f+32),
		"VPXOR Y14, Y15, Y11",
		"VPAND Y10, Y11, Y11",
		"VPXOR Y11, Y15, Y15",
		"VPXOR Y11, Y14, Y14",
		fmt.Sprintf("VMOVDQU %d(R15), Y13", f+64),
		fmt.Sprintf("VMOVDQU %d(R15), Y12", f+96),
		"VPXOR Y12, Y13, Y11",
		"VPAND Y10, Y11, Y11",
		"VPXOR Y11, Y13, Y13",
		"VPXOR Y11, Y12, Y12",
		// LX = loseA ^ loseB: each key's sCW with tLoseCW in bit 0.
		"VPXOR Y14, Y12, Y12",
		// CWk = LX with bit 0 := (keepA ^ keepB) bit 0 ^ 1 = tKeepCW.
		"VPXOR Y15, Y13, Y11",
		"VPXOR Y12, Y11, Y11",
		"VPANDN Y11, Y9, Y11",
		"VPXOR Y12, Y11, Y11",
		"VPXOR genOne<>(SB), Y11, Y11",
		// sCW of both keys.
		"VPAND Y9, Y12, Y10",
		"MOVQ stride+48(FP), R9",
		"VMOVDQU X10, (DI)",
		"VEXTRACTI128 $1, Y10, (DI)(R9*1)",
		// Bits 0 and 2 of l2, k2: each key's tLoseCW, tKeepCW; x2 = k2 ^ l2;
		// (tLCW | tRCW<<1) per key = x2 ^ 3·((x2 & a2) ^ l2).
		"VPSLLQ $63, Y12, Y14",
		"VMOVMSKPD Y14, R13",
		"VPSLLQ $63, Y11, Y14",
		"VMOVMSKPD Y14, R9",
		"ANDL $5, R13",
		"ANDL $5, R9",
		"XORL R13, R9",
		"ANDL R9, CX",
		"XORL R13, CX",
		"LEAL (CX)(CX*2), CX",
		"XORL R9, CX",
		"MOVL CX, R13",
		"ANDL $3, CX",
		"SHRL $2, R13",
		"SHLXQ R12, CX, CX",
		"SHLXQ R12, R13, R13",
		"ORB CL, (DI)(R10*1)",
		"ADDQ stride+48(FP), DI",
		"ORB R13B, (DI)(R10*1)",
		"ADDQ stride+48(FP), DI",
	)
	// New folded chains: Keep ^ (CWk & TM), with t = 0 for party 0 and 1
	// for party 1 at the first level.
	return append(lines,
		fmt.Sprintf("VMOVDQU Y15, %d(SI)", p),
		"VPXOR Y11, Y13, Y13",
		fmt.Sprintf("VMOVDQU Y13, %d(SI)", p+32),
	)
}

// genPostLevel is genPost after level 1. Its raw children carry their
// parent's control bit in bit 0 (see genAES): a primed value X' below is X
// with bit 0 flipped by the t of the chain it came from. On a DPF Gen path
// the two parties' control bits always differ (t0 ^ t1 = 1), so a primed
// XOR of both parties' values is the plain one with bit 0 flipped, and
// exactly one party's chain takes the correction. With XL' = L'A ^ L'B,
// XR' = R'A ^ R'B, XT' = XL' ^ XR' and AM the α lane masks:
//
//	Keep'X = XL' ^ (XT' & AM), Lose'X = XR' ^ (XT' & AM)
//	sCW = Lose'X & ^1, tLCW = bit0(XL') ^ a, tRCW = bit0(XR') ^ a ^ 1
//	CW' = Lose'X ^ (^XT' & 1)  (sCW with tKeepCW ^ 1 in bit 0)
//	new A = Keep'A ^ (CW' & TM), new B = Keep'B ^ CW' ^ (CW' & TM)
//
// with TM party 0's old control bits as lane masks and Keep'B = Keep'A ^
// Keep'X. It uses Y10–Y15, CX, R9 and R13 only (R14 = 0x0303 is set by the
// caller).
func genPostLevel(q, pOff int) []string {
	p, f := pOff+64*q, 128*q
	lines := append(alphaMask(q),
		// CX = 3·(a0 | a1<<2) ^ 0b1010 for the control bits.
		"LEAL (CX)(R13*4), CX",
		"LEAL (CX)(CX*2), CX",
		"XORL $10, CX",
		fmt.Sprintf("VMOVDQU %d(R15), Y15", f),       // L'A
		fmt.Sprintf("VMOVDQU %d(R15), Y14", f+32),    // R'A
		fmt.Sprintf("VPXOR %d(R15), Y15, Y13", f+64), // XL'
		fmt.Sprintf("VPXOR %d(R15), Y14, Y12", f+96), // XR'
		"VPXOR Y14, Y15, Y11",
		"VPAND Y10, Y11, Y11",
		"VPXOR Y11, Y15, Y15", // Keep'A
		// Control bits: bit0 of XL', XR' of both keys into R9 (k0: bits
		// 0, 1; k1: bits 2, 3), then tLCW | tRCW<<1 = that ^ 2 ^ 3a.
		"VPUNPCKLQDQ Y12, Y13, Y11",
		"VPSLLQ $63, Y11, Y11",
		"VMOVMSKPD Y11, R9",
		"XORL R9, CX",
		"VPXOR Y12, Y13, Y14", // XT'
		"VPAND Y10, Y14, Y11",
		"VPXOR Y11, Y13, Y13", // Keep'X
		"VPXOR Y11, Y12, Y12", // Lose'X
		// sCW of both keys.
		"VPAND Y9, Y12, Y11",
		"MOVQ stride+48(FP), R9",
		"VMOVDQU X11, (DI)",
		"VEXTRACTI128 $1, Y11, (DI)(R9*1)",
		"VPANDN genOne<>(SB), Y14, Y14",
		"VPXOR Y12, Y14, Y14", // CW'
		"VPXOR Y15, Y13, Y13", // Keep'B
		"VPXOR Y14, Y13, Y13",
		// TM from party 0's old control bits (bit 0 of each lane of A).
		fmt.Sprintf("VPSHUFD $0, %d(SI), Y11", p),
	)
	lines = append(lines, ctMask("Y11")...)
	lines = append(lines,
		"VPAND Y14, Y11, Y11",
		"VPXOR Y11, Y15, Y15",
		fmt.Sprintf("VMOVDQU Y15, %d(SI)", p),
		"VPXOR Y11, Y13, Y13",
		fmt.Sprintf("VMOVDQU Y13, %d(SI)", p+32),
	)
	return append(lines, ctrlDeposit()...)
}

// alphaMask returns the lines that put the level's α bits of key pair q
// (bit R11 of the words at 16q(R8)) in CX (a0) and R13 (a1) and their lane
// masks AM in Y10: each lane all ones where its key's bit is 1. The masks
// are computed (shifts by lane), never loaded from a table indexed by α:
// such a load's cache line would tell α to a co-resident Flush+Reload
// attacker. It uses CX, R9, R13 and Y10 only.
func alphaMask(q int) []string {
	return []string{
		fmt.Sprintf("SHRXQ R11, %d(R8), CX", 16*q),
		"ANDL $1, CX",
		fmt.Sprintf("SHRXQ R11, %d(R8), R13", 16*q+8),
		"ANDL $1, R13",
		"LEAL (CX)(R13*2), R9",
		"VMOVD R9, X10",
		"VPBROADCASTD X10, Y10",
		// a0 to the sign of the low lane's dwords, a1 to the high lane's,
		// then spread.
		"VPSLLVD genSel<>(SB), Y10, Y10",
		"VPSRAD $31, Y10, Y10",
	}
}

// ctMask returns the lines that turn reg, each of whose dwords holds the
// first dword of a folded block (bit 0: its control bit t), into a mask of
// all ones where t = 1: the bit is shifted to the sign and spread by an
// arithmetic shift, so no memory access depends on t.
func ctMask(reg string) []string {
	return []string{
		fmt.Sprintf("VPSLLD $31, %[1]s, %[1]s", reg),
		fmt.Sprintf("VPSRAD $31, %[1]s, %[1]s", reg),
	}
}
