// Command gen writes mmo_amd64.s, the batched fixed-key AES-128 MMO kernels
// of package prg.
//
// avo v0.5.0 knows VAESENC only in its 128-bit form, so this is a small text
// generator instead. Run it from internal/prg:
//
//	go run ./_asm -out mmo_amd64.s
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

func main() {
	out := flag.String("out", "mmo_amd64.s", "output file")
	flag.Parse()
	var g gen
	g.buf.WriteString(`// Code generated by go run ./_asm -out mmo_amd64.s. DO NOT EDIT.

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

// zP is how many key pairs one main-loop block of dpfGen512 carries: 2·zP
// AES states of four blocks each.
const zP = 4

// zPark is the size of dpfGen512's park; genPost512's α k-mask byte
// passes through the 64 bytes after it.
const zPark = 128 * zP
