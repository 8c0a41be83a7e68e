package gates

import (
	"io"

	"github.com/kord-fss/kord/fss"
)

// ReLU is max(x, 0) for two's-complement x ∈ Z_{2^ℓ}, shares in Z_{2^ℓ}.
// Complement: a derived DCF(ℓ→ℓ) F at r with β = 1 (its α shares are the
// mask) and a bound DCF(ℓ→ℓ) G at the same r with β = r — the LLAMA vector
// payload (1, r) as two keys. Online: open x̂ = x + r, u = x̂ − 2^{ℓ−1},
// h = 1{x̂ < 2^{ℓ−1}}; d = F(u) − F(x̂) + b·h is DReLU, and
// d·r = G(u) − G(x̂) + h·r_b, so ReLU = x̂·d − d·r is local: one round.
type ReLU struct{ Bits int }

func (g ReLU) Name() string        { return "ReLU" }
func (g ReLU) Variant() string     { return "signed" }
func (g ReLU) InBits() int         { return g.Bits }
func (g ReLU) Arity() int          { return 1 }
func (g ReLU) OutWidths() []int    { return []int{g.Bits} }
func (g ReLU) Valid([]uint64) bool { return true }
func (g ReLU) Ref(in []uint64) []uint64 {
	x := in[0] & mask(g.Bits)
	if x>>uint(g.Bits-1) == 1 {
		return []uint64{0}
	}
	return []uint64{x}
}

func (g ReLU) Gen(src KeySource, _ io.Reader, ops int) ([2]Material, error) {
	if err := checkBits("ReLU", g.Bits, 2, 64); err != nil {
		return [2]Material{}, err
	}
	p := fss.Params{Type: fss.DCF, InBits: g.Bits, OutBits: g.Bits}
	m := newBatches(ops)
	if err := derive(src, p, m); err != nil {
		return [2]Material{}, err
	}
	err := bindAll(src, p, m, func(i int) (a, c [2]uint64) {
		r := [2]uint64{m[0][i].r[0], m[1][i].r[0]}
		return r, r
	})
	if err != nil {
		return [2]Material{}, err
	}
	return [2]Material{m[0], m[1]}, nil
}

func (g ReLU) Eval(p *Party, mat Material, in [][]uint64) ([][]uint64, error) {
	m, xhat, err := openMasked(g, p, mat, in, 2)
	if err != nil {
		return nil, err
	}
	half := uint64(1) << uint(g.Bits-1)
	out := make([][]uint64, len(in))
	for i := range in {
		xh := xhat[i]
		d := pubCmp(m[i].keys[0], g.Bits, xh, half, oneShare(p.B))
		dr := pubCmp(m[i].keys[1], g.Bits, xh, half, m[i].r[0])
		out[i] = []uint64{(xh*d - dr) & mask(g.Bits)}
	}
	return out, nil
}
