package msg

import (
	"fmt"

	"github.com/kord-fss/kord/fss/llama"
)

// MaxGatePacks bounds the packs of one LLAMA gates request
// (CorrLlamaGates): 4096 packs of the largest shape are about 10 MiB.
const MaxGatePacks = 4096

// LlamaGates returns the correlation that asks for LLAMA gate packs of
// width bits: relu ReLU, ars ARS by shift, maxpool pair-MaxPool.
func LlamaGates(bits, relu, ars, shift, maxpool int) Correlation {
	return Correlation{Kind: CorrLlamaGates, Ring: bits, Relu: relu, Ars: ars, Shift: shift, MaxPool: maxpool}
}

// Packs is the number of packs a CorrLlamaGates request asks for.
func (c *Correlation) Packs() int { return c.Relu + c.Ars + c.MaxPool }

// GateRuns returns the gate shape and count of each run of packs in
// order (ReLU, ARS, MaxPool), skipping empty runs (c must be valid).
func (c *Correlation) GateRuns() (gates []llama.Gate, counts []int) {
	for _, r := range []struct {
		g llama.Gate
		n int
	}{
		{llama.Gate{Kind: llama.GateReLU, Bits: c.Ring}, c.Relu},
		{llama.Gate{Kind: llama.GateARS, Bits: c.Ring, Shift: c.Shift}, c.Ars},
		{llama.Gate{Kind: llama.GateMaxPool, Bits: c.Ring}, c.MaxPool},
	} {
		if r.n > 0 {
			gates, counts = append(gates, r.g), append(counts, r.n)
		}
	}
	return gates, counts
}

// PackBytes is the bytes of one party's packs of a valid CorrLlamaGates.
func (c *Correlation) PackBytes() int {
	n := 0
	gs, ns := c.GateRuns()
	for i, g := range gs {
		n += ns[i] * g.PackSize()
	}
	return n
}

// gateSizes is Sizes for CorrLlamaGates: no A, one input mask per pack
// (two per MaxPool), one output mask per pack. Errors name the field.
func (c *Correlation) gateSizes() (a, r, z int, err error) {
	switch {
	case c.Ring < llama.MinGateBits || c.Ring > llama.MaxGateBits:
		return 0, 0, 0, fmt.Errorf("Corr.Ring (bits): %d is outside %d..%d", c.Ring, llama.MinGateBits, llama.MaxGateBits)
	case c.Relu < 0 || c.Ars < 0 || c.MaxPool < 0 || c.Relu > MaxGatePacks || c.Ars > MaxGatePacks || c.MaxPool > MaxGatePacks:
		return 0, 0, 0, fmt.Errorf("Corr.Relu/Ars/MaxPool: counts %d, %d, %d, each must be 0..%d", c.Relu, c.Ars, c.MaxPool, MaxGatePacks)
	case c.Packs() < 1 || c.Packs() > MaxGatePacks:
		return 0, 0, 0, fmt.Errorf("Corr.Relu/Ars/MaxPool: %d packs in all, want 1..%d", c.Packs(), MaxGatePacks)
	case c.Ars > 0 && (c.Shift < 1 || c.Shift >= c.Ring):
		return 0, 0, 0, fmt.Errorf("Corr.Shift: %d is outside 1..%d (1 ≤ shift < bits)", c.Shift, c.Ring-1)
	case c.Ars == 0 && c.Shift != 0:
		return 0, 0, 0, fmt.Errorf("Corr.Shift: %d given without ARS packs", c.Shift)
	case c.In != 0 || c.Out != 0 || c.K != 0 || c.H != 0 || c.W != 0:
		return 0, 0, 0, fmt.Errorf("Corr.In/Out/K/H/W: must be zero for LLAMA gate packs")
	case c.Part != CorrFull || c.WeightFrom != 0:
		return 0, 0, 0, fmt.Errorf("Corr.Part/WeightFrom: LLAMA gate packs are drawn whole (part 0)")
	}
	return 0, c.Relu + c.Ars + 2*c.MaxPool, c.Packs(), nil
}

// SplitGates cuts both parties' answers to one LLAMA gates request into
// runs of one gate each (ReLU, ARS, MaxPool; empty runs left out), for
// llama.CheckGates and llama.RedealGates. The runs hold slices of the
// answers; it checks that both answer the same request and hold the
// sizes it gives.
func SplitGates(sh [2]*CorrShares) ([]*llama.GateRun, error) {
	if sh[0] == nil || sh[1] == nil {
		return nil, fmt.Errorf("msg: gates: an answer is missing")
	}
	c := sh[0].Corr
	if c.Kind != CorrLlamaGates || sh[1].Corr != c {
		return nil, fmt.Errorf("msg: gates: the answers are for %+v and %+v, not one gates request", c, sh[1].Corr)
	}
	if _, _, _, err := c.Sizes(); err != nil {
		return nil, fmt.Errorf("msg: gates: %v", err)
	}
	gates, counts := c.GateRuns()
	_, nr, nz, _ := c.Sizes()
	for b := range 2 {
		if len(sh[b].Packs) != c.PackBytes() || len(sh[b].R) != nr || len(sh[b].Z) != nz {
			return nil, fmt.Errorf("msg: gates: party %d answered %d pack bytes, %d r_in and %d r_out shares, want %d, %d, %d",
				b, len(sh[b].Packs), len(sh[b].R), len(sh[b].Z), c.PackBytes(), nr, nz)
		}
	}
	var runs []*llama.GateRun
	var off, ri, zi int
	for i, g := range gates {
		n := counts[i]
		r := &llama.GateRun{G: g, N: n}
		for b := range 2 {
			r.Packs[b] = sh[b].Packs[off : off+n*g.PackSize()]
			r.RIn[b] = sh[b].R[ri : ri+n*g.Masks()]
			r.ROut[b] = sh[b].Z[zi : zi+n]
		}
		off, ri, zi = off+n*g.PackSize(), ri+n*g.Masks(), zi+n
		runs = append(runs, r)
	}
	return runs, nil
}
