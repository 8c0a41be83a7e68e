package gates

import (
	"fmt"
	"io"

	"github.com/kord-fss/kord/fss"
)

// TR is the logical right shift ⌊x/2^s⌋ of unsigned x ∈ Z_{2^ℓ}, with
// shares in Z_{2^{ℓ−s}} (where the result is exact). With u_b = x_b mod 2^s,
// U = u0+u1 is exact in Z_{2^{s+1}} and
// ⌊x/2^s⌋ ≡ ⌊x0/2^s⌋ + ⌊x1/2^s⌋ + 1{U ≥ 2^s}  (mod 2^{ℓ−s}).
// Complement: one derived DCF((s+1)→(ℓ−s)) at a random ρ; the carry is a
// public comparison of Û = U + ρ with 2^s. One round of s+1 bits.
type TR struct{ Bits, Shift int }

func (g TR) Name() string        { return "TR" }
func (g TR) Variant() string     { return fmt.Sprintf("s=%d", g.Shift) }
func (g TR) InBits() int         { return g.Bits }
func (g TR) Arity() int          { return 1 }
func (g TR) OutWidths() []int    { return []int{g.Bits - g.Shift} }
func (g TR) Valid([]uint64) bool { return true }
func (g TR) Ref(in []uint64) []uint64 {
	return []uint64{(in[0] & mask(g.Bits)) >> uint(g.Shift)}
}

func (g TR) Gen(src KeySource, _ io.Reader, ops int) ([2]Material, error) {
	if err := checkBits("TR", g.Bits, 2, 64); err != nil {
		return [2]Material{}, err
	}
	if g.Shift < 1 || g.Shift >= g.Bits {
		return [2]Material{}, fmt.Errorf("gates: TR: shift %d is outside 1..%d", g.Shift, g.Bits-1)
	}
	m := newBatches(ops)
	err := derive(src, fss.Params{Type: fss.DCF, InBits: g.Shift + 1, OutBits: g.Bits - g.Shift}, m)
	return [2]Material{m[0], m[1]}, err
}

// trPrep returns party b's masked low part for a truncation by s.
func trPrep(x uint64, s int, rho uint64) uint64 { return (x&mask(s) + rho) & mask(s+1) }

// trFinish returns party b's share of ⌊x/2^s⌋ mod 2^out from the opened Û.
func trFinish(k *fss.Key, b int, x uint64, s, out int, uhat uint64) uint64 {
	cmp := pubCmp(k, s+1, uhat, 1<<uint(s), oneShare(b))
	return ((x>>uint(s))&mask(out) + oneShare(b) - cmp) & mask(out)
}

func (g TR) Eval(p *Party, mat Material, in [][]uint64) ([][]uint64, error) {
	m, o, err := openOne(g, p, mat, in, 1, g.Shift+1, func(x []uint64, r uint64) uint64 { return trPrep(x[0]&mask(g.Bits), g.Shift, r) })
	if err != nil {
		return nil, err
	}
	out := make([][]uint64, len(in))
	for i, x := range in {
		out[i] = []uint64{trFinish(m[i].keys[0], p.B, x[0]&mask(g.Bits), g.Shift, g.Bits-g.Shift, o[i])}
	}
	return out, nil
}
