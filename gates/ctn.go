package gates

import (
	"fmt"
	"io"

	"github.com/kord-fss/kord/fss"
)

// Ctn is multiple-interval containment: for knots p_1 < … < p_m in
// [0, 2^ℓ), the one-hot vector e_j (j = 0..m) with j = #{i : x ≥ p_i}, x
// unsigned. With c_i = 1{x < p_i}: o_0 = c_1, o_j = c_{j+1} − c_j,
// o_m = 1 − c_m (sorted knots need no multiplication). Complement: one
// derived DCF(ℓ→n) at r; all m comparisons are evaluations of that key.
// Output: m+1 shares in Z_{2^n}.
type Ctn struct {
	Bits, Out int
	Knots     []uint64
}

func (g Ctn) Name() string    { return "Ctn" }
func (g Ctn) Variant() string { return fmt.Sprintf("%d knots", len(g.Knots)) }
func (g Ctn) InBits() int     { return g.Bits }
func (g Ctn) Arity() int      { return 1 }
func (g Ctn) OutWidths() []int {
	w := make([]int, len(g.Knots)+1)
	for i := range w {
		w[i] = g.Out
	}
	return w
}
func (g Ctn) Valid([]uint64) bool { return true }
func (g Ctn) Ref(in []uint64) []uint64 {
	x := in[0] & mask(g.Bits)
	j := 0
	for _, p := range g.Knots {
		if x >= p {
			j++
		}
	}
	out := make([]uint64, len(g.Knots)+1)
	out[j] = 1
	return out
}

func checkKnots(name string, bits int, knots []uint64) error {
	for i, p := range knots {
		if p&^mask(bits) != 0 || (i > 0 && p <= knots[i-1]) {
			return fmt.Errorf("gates: %s: knots must be strictly increasing and below 2^%d", name, bits)
		}
	}
	return nil
}

func (g Ctn) Gen(src KeySource, _ io.Reader, ops int) ([2]Material, error) {
	if err := checkBits("Ctn", g.Bits, 1, 64); err != nil {
		return [2]Material{}, err
	}
	if err := checkKnots("Ctn", g.Bits, g.Knots); err != nil {
		return [2]Material{}, err
	}
	m := newBatches(ops)
	err := derive(src, fss.Params{Type: fss.DCF, InBits: g.Bits, OutBits: g.Out}, m)
	return [2]Material{m[0], m[1]}, err
}

func (g Ctn) Eval(p *Party, mat Material, in [][]uint64) ([][]uint64, error) {
	m, xhat, err := openMasked(g, p, mat, in, 1)
	if err != nil {
		return nil, err
	}
	nk := len(g.Knots)
	out := make([][]uint64, len(in))
	for i := range in {
		c := make([]uint64, nk+2) // c[0] = 0, c[nk+1] = 1
		c[nk+1] = oneShare(p.B)
		for j, pk := range g.Knots {
			c[j+1] = pubCmp(m[i].keys[0], g.Bits, xhat[i], pk, oneShare(p.B))
		}
		out[i] = make([]uint64, nk+1)
		for j := 0; j <= nk; j++ {
			out[i][j] = (c[j+1] - c[j]) & mask(g.Out)
		}
	}
	return out, nil
}
