// Command gen writes mmo_amd64.s, the batched fixed-key AES-128 MMO kernels
// of package prg.
//
// avo v0.5.0 knows VAESENC only in its 128-bit form, so this is a small text
// generator instead. Run it from internal/prg:
//
//	go run ./_asm/gen.go -out mmo_amd64.s
//
// Every kernel has the shape
//
//	func NAME(k0, …, k{L-1} *Schedule, o0, …, o{L-1} *Block, in *Block, n int)
//
// and sets o_l[i] = AES(k_l, in[i]) XOR in[i] for i < n and every lane l.
// Blocks are processed in units: the main unit keeps D AES states in flight
// (enough to cover the AESENC latency × throughput product), smaller
// power-of-two units finish the tail. Each round key is loaded once per unit
// and round into a register shared by all states of that lane. The MMO XOR is
// folded into the last round: AESENCLAST with (round key 10 XOR input).
// All inputs of a unit are read before any of its outputs are written, so an
// output may alias the input.
//
// Constant time: no address a kernel forms and no branch it takes may
// depend on a secret (α bits, seeds, control bits, values). Addresses come
// from the public arguments (pointers, n, shift, stride, ctrlRel,
// ctrlShift, mask), the frame and loop counters; masks that depend on
// secrets are computed with shifts, compares and multiplies; the constant
// tables (DATA/GLOBL) are read at fixed offsets only, never indexed.
// ctcheck_test.go checks the generated file for all of this.
package main

import (
	"bytes"
	"flag"
	"fmt"
	"log"
	"os"
)

var (
	keyPtr = []string{"AX", "BX", "DX", "R11"}
	outPtr = []string{"DI", "R8", "R9", "R10"}
)

const (
	inPtr = "SI"
	count = "CX"
)

type kernel struct {
	name  string
	lanes int  // L: 1, 2 or 4
	vaes  bool // YMM VAES (2 blocks per register) instead of SSE AES-NI
	zmm   bool // with vaes: ZMM (EVEX, AVX-512) registers, 4 blocks each
	dregs int  // D: AES states in flight in the main unit
	// folded: hash each input with bit 0 of byte 0 cleared (tree nodes
	// that carry their control bit there); the mask lives in register 14.
	folded bool
}

type gen struct{ buf bytes.Buffer }

func (g *gen) p(format string, args ...any) { fmt.Fprintf(&g.buf, "\t"+format+"\n", args...) }
func (g *gen) label(l string)               { fmt.Fprintf(&g.buf, "%s:\n", l) }

// per returns how many blocks each register of the main unit holds.
func (k kernel) per() int {
	switch {
	case k.zmm:
		return 4
	case k.vaes:
		return 2
	}
	return 1
}

func (g *gen) kernel(k kernel) {
	L := k.lanes
	frame := (2*L + 2) * 8
	fmt.Fprintf(&g.buf, "\n// func %s(", k.name)
	for l := 0; l < L; l++ {
		fmt.Fprintf(&g.buf, "k%d, ", l)
	}
	fmt.Fprintf(&g.buf, "*Schedule, ")
	for l := 0; l < L; l++ {
		fmt.Fprintf(&g.buf, "o%d, ", l)
	}
	fmt.Fprintf(&g.buf, "in *Block, n int)\n")
	fmt.Fprintf(&g.buf, "TEXT ·%s(SB), NOSPLIT, $0-%d\n", k.name, frame)
	for l := 0; l < L; l++ {
		g.p("MOVQ k%d+%d(FP), %s", l, 8*l, keyPtr[l])
	}
	for l := 0; l < L; l++ {
		g.p("MOVQ o%d+%d(FP), %s", l, 8*(L+l), outPtr[l])
	}
	g.p("MOVQ in+%d(FP), %s", 16*L, inPtr)
	g.p("MOVQ n+%d(FP), %s", 16*L+8, count)

	if k.dregs%L != 0 {
		log.Fatalf("%s: %d states do not split over %d lanes", k.name, k.dregs, L)
	}
	main := k.dregs * k.per() / L // blocks per lane in the main unit
	// The main unit, then descending powers of two below it for the tail.
	tail := []int{main}
	for u := 1 << 10; u >= 1; u /= 2 {
		if u < main {
			tail = append(tail, u)
		}
	}
	if k.folded {
		if !k.vaes {
			log.Fatalf("%s: folded needs VAES", k.name)
		}
		g.p("VMOVDQU treeNotOne<>(SB), Y14")
	}
	for _, u := range tail {
		g.unit(k, u)
	}
	g.label(k.name + "_done")
	if k.vaes {
		g.p("VZEROUPPER")
	}
	g.p("RET")
}

// unit emits a loop that handles u blocks per lane per iteration while n ≥ u.
func (g *gen) unit(k kernel, u int) {
	L := k.lanes
	loop := fmt.Sprintf("%s_u%d", k.name, u)
	next := fmt.Sprintf("%s_u%d_end", k.name, u)
	// Units of four blocks or more per lane run on ZMM in a zmm kernel,
	// of two or more on YMM in a VAES kernel; the rest on XMM.
	zwide := k.zmm && u >= 4
	wide := k.vaes && u >= 2 && !zwide
	per := 1
	switch {
	case zwide:
		per = 4
	case wide:
		per = 2
	}
	if u%per != 0 {
		log.Fatalf("%s: unit of %d blocks does not fill %d-block registers", k.name, u, per)
	}
	rpl := u / per // registers per lane
	nreg := rpl * L
	reg := func(i int) string {
		switch {
		case zwide:
			return fmt.Sprintf("Z%d", i)
		case wide:
			return fmt.Sprintf("Y%d", i)
		}
		return fmt.Sprintf("X%d", i)
	}
	keyReg := func(l int) string { return reg(nreg + l) }
	tmp := reg(15)
	if zwide {
		tmp = reg(31)
	}
	if (!zwide && nreg+L > 15) || nreg+L > 31 || (k.folded && nreg+L > 14) {
		log.Fatalf("%s: %d states and %d keys do not fit", k.name, nreg, L)
	}
	xor := "VPXOR"
	if zwide {
		xor = "VPXORQ"
	}
	loadKey := func(l, r int) {
		switch {
		case zwide:
			g.p("VBROADCASTI32X4 %d(%s), %s", 16*r, keyPtr[l], keyReg(l))
		case wide:
			g.p("VBROADCASTI128 %d(%s), %s", 16*r, keyPtr[l], keyReg(l))
		case k.vaes:
			g.p("VMOVDQU %d(%s), %s", 16*r, keyPtr[l], keyReg(l))
		default:
			g.p("MOVOU %d(%s), %s", 16*r, keyPtr[l], keyReg(l))
		}
	}
	state := func(l, j int) string { return reg(l*rpl + j) }
	inOff := func(j int) int { return 16 * per * j }

	g.label(loop)
	g.p("CMPQ %s, $%d", count, u)
	g.p("JB %s", next)
	// Round 0: state = in XOR k0.
	for l := 0; l < L; l++ {
		loadKey(l, 0)
	}
	for l := 0; l < L; l++ {
		for j := 0; j < rpl; j++ {
			if k.folded {
				g.p("VPAND %d(%s), %s, %s", inOff(j), inPtr, reg(14), state(l, j))
				g.p("VPXOR %s, %s, %s", keyReg(l), state(l, j), state(l, j))
				continue
			}
			if k.vaes {
				g.p("%s %d(%s), %s, %s", xor, inOff(j), inPtr, keyReg(l), state(l, j))
			} else {
				g.p("MOVOU %d(%s), %s", inOff(j), inPtr, state(l, j))
				g.p("PXOR %s, %s", keyReg(l), state(l, j))
			}
		}
	}
	// Rounds 1..9, lanes interleaved so every key load feeds rpl states.
	for r := 1; r <= 9; r++ {
		for l := 0; l < L; l++ {
			loadKey(l, r)
		}
		for j := 0; j < rpl; j++ {
			for l := 0; l < L; l++ {
				if k.vaes {
					g.p("VAESENC %s, %s, %s", keyReg(l), state(l, j), state(l, j))
				} else {
					g.p("AESENC %s, %s", keyReg(l), state(l, j))
				}
			}
		}
	}
	// Round 10 with the MMO XOR folded in: AESENCLAST(s, k10 XOR in).
	for l := 0; l < L; l++ {
		loadKey(l, 10)
	}
	for j := 0; j < rpl; j++ {
		for l := 0; l < L; l++ {
			if k.folded {
				g.p("VPAND %d(%s), %s, %s", inOff(j), inPtr, reg(14), tmp)
				g.p("VPXOR %s, %s, %s", keyReg(l), tmp, tmp)
				g.p("VAESENCLAST %s, %s, %s", tmp, state(l, j), state(l, j))
			} else if k.vaes {
				g.p("%s %d(%s), %s, %s", xor, inOff(j), inPtr, keyReg(l), tmp)
				g.p("VAESENCLAST %s, %s, %s", tmp, state(l, j), state(l, j))
			} else {
				g.p("MOVOU %d(%s), %s", inOff(j), inPtr, tmp)
				g.p("PXOR %s, %s", keyReg(l), tmp)
				g.p("AESENCLAST %s, %s", tmp, state(l, j))
			}
		}
	}
	// Stores only after every read of this unit's input.
	for l := 0; l < L; l++ {
		for j := 0; j < rpl; j++ {
			if zwide {
				g.p("VMOVDQU64 %s, %d(%s)", state(l, j), inOff(j), outPtr[l])
			} else if k.vaes {
				g.p("VMOVDQU %s, %d(%s)", state(l, j), inOff(j), outPtr[l])
			} else {
				g.p("MOVOU %s, %d(%s)", state(l, j), inOff(j), outPtr[l])
			}
		}
	}
	g.p("ADDQ $%d, %s", 16*u, inPtr)
	for l := 0; l < L; l++ {
		g.p("ADDQ $%d, %s", 16*u, outPtr[l])
	}
	g.p("SUBQ $%d, %s", u, count)
	g.p("JMP %s", loop)
	g.label(next)
}

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

func main() {
	out := flag.String("out", "mmo_amd64.s", "output file")
	flag.Parse()
	var g gen
	g.buf.WriteString(`// Code generated by go run ./_asm/gen.go -out mmo_amd64.s. DO NOT EDIT.

//go:build amd64 && !purego

#include "textflag.h"

// func cpuid7() (ebx, ecx uint32)
TEXT ·cpuid7(SB), NOSPLIT, $0-8
	MOVL $7, AX
	XORL CX, CX
	CPUID
	MOVL BX, ebx+0(FP)
	MOVL CX, ecx+4(FP)
	RET
`)
	for _, k := range []kernel{
		{name: "aesniMMO1", lanes: 1, dregs: 12},
		{name: "aesniMMO2", lanes: 2, dregs: 12},
		{name: "aesniMMO4", lanes: 4, dregs: 8},
		{name: "vaesMMO1", lanes: 1, vaes: true, dregs: 12},
		{name: "vaesMMO2", lanes: 2, vaes: true, dregs: 12},
		{name: "vaesMMO4", lanes: 4, vaes: true, dregs: 8},
		{name: "vaesMMO2F", lanes: 2, vaes: true, dregs: 12, folded: true},
		{name: "vaes512MMO1", lanes: 1, vaes: true, zmm: true, dregs: 8},
		{name: "vaes512MMO2", lanes: 2, vaes: true, zmm: true, dregs: 8},
		{name: "vaes512MMO4", lanes: 4, vaes: true, zmm: true, dregs: 8},
	} {
		g.kernel(k)
	}
	g.tree()
	g.dpfGen()
	g.dpfGen512()
	g.dcfValues()
	if err := os.WriteFile(*out, g.buf.Bytes(), 0o644); err != nil {
		log.Fatal(err)
	}
}

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

// zP is how many key pairs one main-loop block of dpfGen512 carries: 2·zP
// AES states of four blocks each.
const zP = 4

// zPark is the size of dpfGen512's park; genPost512's α k-mask byte
// passes through the 64 bytes after it.
const zPark = 128 * zP

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
