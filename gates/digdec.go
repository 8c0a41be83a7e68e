package gates

import (
	"fmt"
	"io"

	"github.com/kord-fss/kord/fss"
)

// DigDec splits unsigned x ∈ Z_{2^ℓ} into k = ⌈ℓ/d⌉ base-2^d digits, least
// significant first; digit i has shares in Z_{2^{d_i}} (d_i = d except a
// shorter top digit). Digit 0 is x_b mod 2^d (local); digit i ≥ 1 is the
// truncation by d·i of the low d·i+d_i bits, which are exactly shared mod
// 2^{d·i+d_i}. Complement: k−1 derived DCF((d·i+1)→d_i); all digits in one
// round. No carry chain and no Beaver triples (Xing et al. need k−1 rounds).
type DigDec struct{ Bits, D int }

func (g DigDec) k() int { return (g.Bits + g.D - 1) / g.D }
func (g DigDec) width(i int) int {
	return min(g.D, g.Bits-g.D*i)
}
func (g DigDec) Name() string    { return "DigDec" }
func (g DigDec) Variant() string { return fmt.Sprintf("d=%d", g.D) }
func (g DigDec) InBits() int     { return g.Bits }
func (g DigDec) Arity() int      { return 1 }
func (g DigDec) OutWidths() []int {
	w := make([]int, g.k())
	for i := range w {
		w[i] = g.width(i)
	}
	return w
}
func (g DigDec) Valid([]uint64) bool { return true }
func (g DigDec) Ref(in []uint64) []uint64 {
	x := in[0] & mask(g.Bits)
	out := make([]uint64, g.k())
	for i := range out {
		out[i] = (x >> uint(g.D*i)) & mask(g.width(i))
	}
	return out
}

func (g DigDec) Gen(src KeySource, _ io.Reader, ops int) ([2]Material, error) {
	if err := checkBits("DigDec", g.Bits, 1, 64); err != nil {
		return [2]Material{}, err
	}
	if g.D < 1 || g.D > g.Bits {
		return [2]Material{}, fmt.Errorf("gates: DigDec: digit width %d is outside 1..%d", g.D, g.Bits)
	}
	m := newBatches(ops)
	for i := 1; i < g.k(); i++ {
		if err := derive(src, fss.Params{Type: fss.DCF, InBits: g.D*i + 1, OutBits: g.width(i)}, m); err != nil {
			return [2]Material{}, err
		}
	}
	return [2]Material{m[0], m[1]}, nil
}

func (g DigDec) Eval(p *Party, mat Material, in [][]uint64) ([][]uint64, error) {
	if err := evalPre(g, p, mat, in); err != nil {
		return nil, err
	}
	k := g.k()
	m, err := asBatch(mat, len(in), k-1, k-1)
	if err != nil {
		return nil, err
	}
	widths := make([]int, k-1)
	vecs := make([][]uint64, k-1)
	for j := range vecs {
		s := g.D * (j + 1)
		widths[j] = s + 1
		vecs[j] = make([]uint64, len(in))
		for i, x := range in {
			vecs[j][i] = trPrep(x[0], s, m[i].r[j])
		}
	}
	o, err := p.open(widths, vecs...)
	if err != nil {
		return nil, err
	}
	out := make([][]uint64, len(in))
	for i, x := range in {
		out[i] = make([]uint64, k)
		out[i][0] = x[0] & mask(g.width(0))
		for j := 1; j < k; j++ {
			s := g.D * j
			low := x[0] & mask(s+g.width(j))
			out[i][j] = trFinish(m[i].keys[j-1], p.B, low, s, g.width(j), o[j-1][i])
		}
	}
	return out, nil
}
