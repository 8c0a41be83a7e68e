// The GGM tree kernels: one level of expansion of many keys at once, and the leaves.

package main

import (
	"fmt"
)

// tree emits vaesTree(k *pairSchedule, cw *[32]byte, out, in *Block, n int):
// for each parent in[i] in folded form (bit 0 of byte 0 is the control bit
// t), out[2i], out[2i+1] = MMO(K_sL / K_sR, in[i] with bit 0 cleared) XOR
// (cw's left / right half if t). One YMM register holds both children: its
// round keys pair K_sL (low lane) with K_sR (high lane).
func (g *gen) tree() {
	g.buf.WriteString(`
// notOne clears bit 0 of byte 0 in each 128-bit lane.
DATA treeNotOne<>+0(SB)/8, $0xfffffffffffffffe
DATA treeNotOne<>+8(SB)/8, $0xffffffffffffffff
DATA treeNotOne<>+16(SB)/8, $0xfffffffffffffffe
DATA treeNotOne<>+24(SB)/8, $0xffffffffffffffff
GLOBL treeNotOne<>(SB), RODATA|NOPTR, $32
`)
	g.treeRows()
	for _, party := range []int{0, 1} {
		for _, masked := range []bool{false, true} {
			name := fmt.Sprintf("vaesTreeLeaves%d", party)
			if masked {
				name += "M"
			}
			g.leavesKernel(name, party == 1, masked)
		}
	}
}

// treeRows emits vaesTree: each parent is broadcast to both lanes of one
// register ([L | R] child), up to 8 parents in flight per unit with the
// round key, the notOne mask, the correction and one temporary in Y12–Y15
// (12 in flight measured no faster than 8).
func (g *gen) treeRows() {
	g.buf.WriteString(`
// func vaesTree(k *pairSchedule, cw *[32]byte, out, in *Block, n int)
TEXT ·vaesTree(SB), NOSPLIT, $0-40
	MOVQ k+0(FP), AX
	MOVQ cw+8(FP), DX
	MOVQ out+16(FP), DI
	MOVQ in+24(FP), SI
	MOVQ n+32(FP), CX
	VMOVDQU treeNotOne<>(SB), Y13
	VMOVDQU (DX), Y14
`)
	for _, u := range []int{8, 4, 2, 1} {
		loop := fmt.Sprintf("vaesTree_u%d", u)
		next := loop + "_end"
		g.label(loop)
		g.p("CMPQ CX, $%d", u)
		g.p("JB %s", next)
		g.p("VMOVDQU (AX), Y12")
		for j := 0; j < u; j++ {
			g.p("VBROADCASTI128 %d(SI), Y%d", 16*j, j)
			g.p("VPAND Y13, Y%d, Y%d", j, j)
			g.p("VPXOR Y12, Y%d, Y%d", j, j)
		}
		for r := 1; r <= 9; r++ {
			g.p("VMOVDQU %d(AX), Y12", 32*r)
			for j := 0; j < u; j++ {
				g.p("VAESENC Y12, Y%d, Y%d", j, j)
			}
		}
		g.p("VMOVDQU 320(AX), Y12")
		for j := 0; j < u; j++ {
			g.p("VBROADCASTI128 %d(SI), Y15", 16*j)
			g.p("VPXOR Y12, Y15, Y15")
			g.p("VAESENCLAST Y15, Y%d, Y%d", j, j)
		}
		for j := 0; j < u; j++ {
			// Correction: cw & (t ? ones : zeros), the mask spread
			// from t by shifts (see ctMask).
			g.p("VPBROADCASTD %d(SI), Y15", 16*j)
			for _, l := range ctMask("Y15") {
				g.p("%s", l)
			}
			g.p("VPAND Y14, Y15, Y15")
			g.p("VPXOR Y15, Y%d, Y%d", j, j)
			g.p("VMOVDQU Y%d, %d(DI)", j, 32*j)
		}
		g.p("ADDQ $%d, SI", 16*u)
		g.p("ADDQ $%d, DI", 32*u)
		g.p("SUBQ $%d, CX", u)
		g.p("JMP %s", loop)
		g.label(next)
	}
	g.p("VZEROUPPER")
	g.p("RET")
}

// leavesKernel emits vaesTreeLeaves{0,1}[M]:
//
//	func NAME(k *pairSchedule, cw *[32]byte, out *uint64, in *Block, n int, final, mask uint64)
//
// which turns each child of the folded parents in[i] straight into its
// output word: hi64 + (t ? final : 0), negated for party 1 (1), masked
// unless the output is 64 bits wide (M). As in vaesTree, the AES input is
// the parent with bit 0 cleared but the last round folds in the parent
// itself, so cw is [cwL ^ 1 | cwR ^ 1], applied when t = 1. It holds
// two adjacent parents a, b per register pair: [aL | bL] under K_sL and
// [aR | bR] under K_sR, round keys broadcast. Then one unpack of the high
// words gives [aL aR bL bR], the output order, and one of the low words
// the children's control bits: no cross-lane permute. A lone last parent
// runs the same steps on XMM registers.
func (g *gen) leavesKernel(name string, negate, masked bool) {
	fmt.Fprintf(&g.buf, `
// func %[1]s(k *pairSchedule, cw *[32]byte, out *uint64, in *Block, n int, final, mask uint64)
TEXT ·%[1]s(SB), NOSPLIT, $0-56
	MOVQ k+0(FP), AX
	MOVQ cw+8(FP), DX
	MOVQ out+16(FP), DI
	MOVQ in+24(FP), SI
	MOVQ n+32(FP), CX
	VPBROADCASTQ final+40(FP), Y13
	VPBROADCASTQ mask+48(FP), Y15
	VPXOR Y14, Y14, Y14
	VMOVDQU treeNotOne<>(SB), Y9
	VBROADCASTI128 (DX), Y10
	VBROADCASTI128 16(DX), Y11
`, name)
	leaf := func(v, tmp string) {
		g.p("VPSLLQ $63, %[1]s, %[1]s", tmp)
		g.p("VPCMPGTQ %s, %s14, %s", tmp, v[:1], tmp)
		g.p("VPAND %s13, %s, %s", v[:1], tmp, tmp)
		g.p("VPADDQ %s, %s, %s", tmp, v, v)
		if negate {
			g.p("VPSUBQ %s, %s14, %s", v, v[:1], v)
		}
		if masked {
			g.p("VPAND %s15, %s, %s", v[:1], v, v)
		}
	}
	for _, P := range []int{8, 4, 2} {
		Q := P / 2
		loop := fmt.Sprintf("%s_u%d", name, P)
		next := loop + "_end"
		g.label(loop)
		g.p("CMPQ CX, $%d", P)
		g.p("JB %s", next)
		if P == 8 {
			// The output is written once, sequentially, and is often far
			// larger than the caches: fetch its lines eight units ahead.
			g.p("PREFETCHT0 1024(DI)")
			g.p("PREFETCHT0 1088(DI)")
		}
		yl := func(j int) string { return fmt.Sprintf("Y%d", j) }
		yr := func(j int) string { return fmt.Sprintf("Y%d", Q+j) }
		for half, y := range []func(int) string{yl, yr} {
			g.p("VBROADCASTI128 %d(AX), Y8", 16*half)
			for j := 0; j < Q; j++ {
				g.p("VPAND %d(SI), Y9, %s", 32*j, y(j))
				g.p("VPXOR Y8, %[1]s, %[1]s", y(j))
			}
		}
		for r := 1; r <= 9; r++ {
			for half, y := range []func(int) string{yl, yr} {
				g.p("VBROADCASTI128 %d(AX), Y8", 32*r+16*half)
				for j := 0; j < Q; j++ {
					g.p("VAESENC Y8, %[1]s, %[1]s", y(j))
				}
			}
		}
		for half, y := range []func(int) string{yl, yr} {
			g.p("VBROADCASTI128 %d(AX), Y8", 320+16*half)
			for j := 0; j < Q; j++ {
				g.p("VPXOR %d(SI), Y8, Y12", 32*j)
				g.p("VAESENCLAST Y12, %[1]s, %[1]s", y(j))
			}
		}
		for j := 0; j < Q; j++ {
			// The parents' t bits, spread to their lanes (Y8, free
			// after round 10), mask the corrections.
			g.p("VPSHUFD $0, %d(SI), Y8", 32*j)
			for _, l := range ctMask("Y8") {
				g.p("%s", l)
			}
			g.p("VPAND Y8, Y10, Y12")
			g.p("VPXOR Y12, %[1]s, %[1]s", yl(j))
			g.p("VPAND Y8, Y11, Y12")
			g.p("VPXOR Y12, %[1]s, %[1]s", yr(j))
			g.p("VPUNPCKLQDQ %s, %s, Y12", yr(j), yl(j))
			g.p("VPUNPCKHQDQ %s, %s, %s", yr(j), yl(j), yl(j))
			leaf(yl(j), "Y12")
			g.p("VMOVDQU %s, %d(DI)", yl(j), 32*j)
		}
		g.p("ADDQ $%d, SI", 16*P)
		g.p("ADDQ $%d, DI", 16*P)
		g.p("SUBQ $%d, CX", P)
		g.p("JMP %s", loop)
		g.label(next)
	}
	// A lone last parent on XMM registers.
	g.p("CMPQ CX, $1")
	g.p("JB %s_done", name)
	for half := 0; half < 2; half++ {
		g.p("VMOVDQU %d(AX), X8", 16*half)
		g.p("VPAND (SI), X9, X%d", half)
		g.p("VPXOR X8, X%[1]d, X%[1]d", half)
	}
	for r := 1; r <= 9; r++ {
		for half := 0; half < 2; half++ {
			g.p("VMOVDQU %d(AX), X8", 32*r+16*half)
			g.p("VAESENC X8, X%[1]d, X%[1]d", half)
		}
	}
	for half := 0; half < 2; half++ {
		g.p("VMOVDQU %d(AX), X8", 320+16*half)
		g.p("VPXOR (SI), X8, X12")
		g.p("VAESENCLAST X12, X%[1]d, X%[1]d", half)
	}
	g.p("VPSHUFD $0, (SI), X8")
	for _, l := range ctMask("X8") {
		g.p("%s", l)
	}
	g.p("VPAND X8, X10, X12")
	g.p("VPXOR X12, X0, X0")
	g.p("VPAND X8, X11, X12")
	g.p("VPXOR X12, X1, X1")
	g.p("VPUNPCKLQDQ X1, X0, X12")
	g.p("VPUNPCKHQDQ X1, X0, X0")
	leaf("X0", "X12")
	g.p("VMOVDQU X0, (DI)")
	g.label(name + "_done")
	g.p("VZEROUPPER")
	g.p("RET")
}
