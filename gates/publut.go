package gates

import (
	"fmt"
	"io"

	"github.com/kord-fss/kord/fss"
)

// PubLUT is T[x] for a public table T of 2^ℓ entries in Z_{2^n} and secret
// x. Complement: one derived DPF(ℓ→n) at r, β = 1. Online: open x̂ = x + r;
// D_b = EvalAll of the key; share = Σ_v T[(x̂ − v) mod 2^ℓ]·D_b[v]. ℓ ≤ 24
// (the evaluation is over the whole domain). Output: shares in Z_{2^n}.
type PubLUT struct {
	Bits, Out int
	Table     []uint64
}

func (g PubLUT) Name() string             { return "PubLUT" }
func (g PubLUT) Variant() string          { return "" }
func (g PubLUT) InBits() int              { return g.Bits }
func (g PubLUT) Arity() int               { return 1 }
func (g PubLUT) OutWidths() []int         { return []int{g.Out} }
func (g PubLUT) Valid([]uint64) bool      { return true }
func (g PubLUT) Ref(in []uint64) []uint64 { return []uint64{g.Table[in[0]&mask(g.Bits)] & mask(g.Out)} }

func (g PubLUT) check() error {
	if err := checkBits("PubLUT", g.Bits, 1, maxFullDomain); err != nil {
		return err
	}
	if len(g.Table) != 1<<uint(g.Bits) {
		return fmt.Errorf("gates: PubLUT: table has %d entries, want 2^%d", len(g.Table), g.Bits)
	}
	return nil
}

func (g PubLUT) Gen(src KeySource, _ io.Reader, ops int) ([2]Material, error) {
	if err := g.check(); err != nil {
		return [2]Material{}, err
	}
	m := newBatches(ops)
	err := derive(src, fss.Params{Type: fss.DPF, InBits: g.Bits, OutBits: g.Out}, m)
	return [2]Material{m[0], m[1]}, err
}

func (g PubLUT) Eval(p *Party, mat Material, in [][]uint64) ([][]uint64, error) {
	if err := g.check(); err != nil {
		return nil, err
	}
	m, xhat, err := openMasked(g, p, mat, in, 1)
	if err != nil {
		return nil, err
	}
	n := 1 << uint(g.Bits)
	d := make([]uint64, n)
	out := make([][]uint64, len(in))
	for i := range in {
		if err := m[i].keys[0].EvalAll(d); err != nil {
			return nil, err
		}
		xh := int(xhat[i])
		var y uint64
		for v := 0; v < n; v++ {
			y += g.Table[(xh-v)&(n-1)] * d[v]
		}
		out[i] = []uint64{y & mask(g.Out)}
	}
	return out, nil
}
