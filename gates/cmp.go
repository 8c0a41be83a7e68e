package gates

import (
	"fmt"
	"io"

	"github.com/kord-fss/kord/fss"
)

// CMP is 1{x < C} for secret unsigned x ∈ Z_{2^ℓ} and public C
// (0 ≤ C ≤ 2^ℓ). Complement: one derived DCF(ℓ→n) at a random r, β = 1.
// Online: open x̂ = x + r; share = DCF(x̂−C) − DCF(x̂) + b·1{x̂ < C}.
// Output: shares in Z_{2^n}. DReLU is the same gate with C = 2^{ℓ−1}.
type CMP struct {
	Bits, Out int
	C         uint64
	drelu     bool
}

// DReLU returns the gate 1{x ≥ 0} for two's-complement x ∈ Z_{2^ℓ}, i.e.
// 1{x < 2^{ℓ−1}} unsigned; shares in Z_{2^n}.
func DReLU(bits, out int) CMP { return CMP{Bits: bits, Out: out, C: 1 << uint(bits-1), drelu: true} }

func (g CMP) Name() string {
	if g.drelu {
		return "DReLU"
	}
	return "CMP"
}
func (g CMP) Variant() string {
	if g.drelu {
		return "signed"
	}
	return fmt.Sprintf("x<c public, c=%d", g.C)
}
func (g CMP) InBits() int         { return g.Bits }
func (g CMP) Arity() int          { return 1 }
func (g CMP) OutWidths() []int    { return []int{g.Out} }
func (g CMP) Valid([]uint64) bool { return true }
func (g CMP) Ref(in []uint64) []uint64 {
	return []uint64{lt(in[0]&mask(g.Bits), g.C)}
}

func (g CMP) Gen(src KeySource, _ io.Reader, ops int) ([2]Material, error) {
	if err := checkBits(g.Name(), g.Bits, 1, 64); err != nil {
		return [2]Material{}, err
	}
	if g.Bits < 64 && g.C > 1<<uint(g.Bits) {
		return [2]Material{}, fmt.Errorf("gates: CMP: comparand %d exceeds 2^%d", g.C, g.Bits)
	}
	m := newBatches(ops)
	err := derive(src, fss.Params{Type: fss.DCF, InBits: g.Bits, OutBits: g.Out}, m)
	return [2]Material{m[0], m[1]}, err
}

func (g CMP) Eval(p *Party, mat Material, in [][]uint64) ([][]uint64, error) {
	m, xhat, err := openMasked(g, p, mat, in, 1)
	if err != nil {
		return nil, err
	}
	out := make([][]uint64, len(in))
	for i := range in {
		out[i] = []uint64{pubCmp(m[i].keys[0], g.Bits, xhat[i], g.C, oneShare(p.B)) & mask(g.Out)}
	}
	return out, nil
}
