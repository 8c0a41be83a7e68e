// The DCF value kernels: the per-level value words of DCF Gen.

package main

import (
	"fmt"
)

// dcfValues emits vaesDCFValues{W}[F], the value half of one DCF Gen
// level (spec §4) for n keys (n even) on the fused layout of
// vaesDPFGenLevel, W the bytes of a value field (1, 2, 4 or 8) and F the
// first level (roots as given, t1 = 1):
//
//	func NAME(k *[2]Schedule, quads *Block, n int, alpha *uint64, shift uint64,
//		beta, v *uint64, out *byte, stride uint64, mask uint64)
//
// with K_vL's schedule in k[0] and K_vR's in k[1]. It hashes every chain
// under both value lanes and, per key i with a = bit `shift` of alpha[i]
// and t1 its party-1 control bit, computes
//
//	VCW = ±(Lose1 - Lose0 - V + a·β) mod 2^n (negated when t1 = 1)
//	V  += Keep0 - Keep1 + ±VCW
//
// (Keep/Lose: the L/R value words, Convert of the children, chosen by a),
// writes VCW's low W bytes at out+i·stride and updates v[i]. The chains are
// only read. The arithmetic runs on the integer units, software pipelined
// against the AES rounds of the next four keys, as in vaesDPFGenLevel.
func (g *gen) dcfValues() {
	for _, w := range []int{1, 2, 4, 8} {
		for _, first := range []bool{false, true} {
			name := fmt.Sprintf("vaesDCFValues%d", w)
			if first {
				name += "F"
			}
			g.dcfValuesFunc(name, w, first)
		}
	}
}

func (g *gen) dcfValuesFunc(name string, w int, first bool) {
	fmt.Fprintf(&g.buf, `
// func %[1]s(k *[2]Schedule, quads *Block, n int, alpha *uint64, shift uint64, beta, v *uint64, out *byte, stride uint64, mask uint64)
TEXT ·%[1]s(SB), NOSPLIT, $320-80
	LEAQ 63(SP), R15
	ANDQ $-64, R15
	MOVQ k+0(FP), AX
	MOVQ quads+8(FP), SI
	MOVQ n+16(FP), DX
	MOVQ alpha+24(FP), R8
	MOVQ shift+32(FP), R11
	MOVQ beta+40(FP), BX
	MOVQ v+48(FP), R10
	MOVQ out+56(FP), DI
	MOVQ mask+72(FP), R12
	VMOVDQU treeNotOne<>(SB), Y9
`, name)
	var post []string
	for q := 0; q < 2; q++ {
		for h := 0; h < 2; h++ {
			post = append(post, valuePost(q, h, -128, w, first)...)
		}
	}
	aes := func(P int, extra []string) { g.genAES(P, extra, first) }
	g.pipelined(name, 2, aes, g.genPark, post)
	g.p("CMPQ DX, $2")
	g.p("JB " + name + "_done")
	g.genAES(1, nil, first)
	g.genPark(1)
	for h := 0; h < 2; h++ {
		for _, l := range valuePost(0, h, 0, w, first) {
			g.p("%s", l)
		}
	}
	g.label(name + "_done")
	g.wipe256()
	g.p("RET")
}

// valuePost returns the value step of key 2q+h of the parked block (see
// dcfValues): its value words are the high halves of lane h of the parked
// registers, its party-1 chain at pOff+64q+32+16h(SI). It advances R8, BX,
// R10 and DI to the next key and uses CX, R9, R13 and R14 only.
func valuePost(q, h, pOff, w int, first bool) []string {
	f := 128*q + 16*h + 8 // + 64·party + 32·half
	v := func(party, half int) string { return fmt.Sprintf("%d(R15)", f+64*party+32*half) }
	lines := []string{
		"SHRXQ R11, (R8), CX",
		"ANDL $1, CX",
		"NEGQ CX", // am
		"MOVQ " + v(0, 0) + ", R9",
		"XORQ " + v(0, 1) + ", R9",
		"ANDQ CX, R9", // d0
		"MOVQ " + v(1, 0) + ", R13",
		"XORQ " + v(1, 1) + ", R13",
		"ANDQ CX, R13", // d1
		"MOVQ " + v(1, 1) + ", R14",
		"XORQ R13, R14",             // Lose1
		"XORQ " + v(1, 0) + ", R13", // Keep1
		"ANDQ (BX), CX",
		"ADDQ CX, R14",
		"MOVQ " + v(0, 1) + ", CX",
		"XORQ R9, CX", // Lose0
		"SUBQ CX, R14",
		"XORQ " + v(0, 0) + ", R9", // Keep0
		"SUBQ R13, R9",
		"SUBQ (R10), R14", // Lose1 - Lose0 - V + a·β
	}
	if first {
		lines = append(lines, "MOVL $1, CX", "MOVQ $-1, R13")
	} else {
		lines = append(lines,
			fmt.Sprintf("MOVBLZX %d(SI), CX", pOff+64*q+32+16*h),
			"ANDL $1, CX",
			"MOVQ CX, R13",
			"NEGQ R13",
		)
	}
	store := map[int]string{1: "MOVB R14B", 2: "MOVW R14", 4: "MOVL R14", 8: "MOVQ R14"}[w]
	return append(lines,
		"XORQ R13, R14",
		"ADDQ CX, R14",
		"ANDQ R12, R14", // VCW
		store+", (DI)",
		"XORQ R13, R14",
		"ADDQ CX, R14",
		"ANDQ R12, R14",
		"ADDQ R9, R14",
		"ADDQ R14, (R10)",
		"ADDQ $8, R8",
		"ADDQ $8, BX",
		"ADDQ $8, R10",
		"ADDQ stride+64(FP), DI",
	)
}
