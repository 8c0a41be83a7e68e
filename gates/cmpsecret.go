package gates

import (
	"io"

	"github.com/kord-fss/kord/fss"
)

// CMPSecret is 1{x < y} for secret unsigned x, y ∈ Z_{2^ℓ}, ℓ ≤ 63.
//
// With X = x0+x1 and Y = y0+y1 read as integers in [0, 2^{ℓ+1}), the
// shares are exact in Z_{2^{ℓ+1}}, and
//
//	1{x < y} = MSB(X−Y) ⊕ MSB(X) ⊕ MSB(Y)   (MSB = bit ℓ)
//
// Complement: three derived DCF((ℓ+1)→1) (one public comparison with
// 2^ℓ each, computed mod 2 so the XOR is local) and one derived DPF(1→n)
// at a random bit μ for the boolean-to-arithmetic step. Online: round 1
// opens the three masked (ℓ+1)-bit values; round 2 opens s ⊕ μ (one bit);
// share = DPF(ŝ ⊕ 1). Output: shares in Z_{2^n}.
type CMPSecret struct{ Bits, Out int }

func (g CMPSecret) Name() string        { return "CMP" }
func (g CMPSecret) Variant() string     { return "x<y secret" }
func (g CMPSecret) InBits() int         { return g.Bits }
func (g CMPSecret) Arity() int          { return 2 }
func (g CMPSecret) OutWidths() []int    { return []int{g.Out} }
func (g CMPSecret) Valid([]uint64) bool { return true }
func (g CMPSecret) Ref(in []uint64) []uint64 {
	return []uint64{lt(in[0]&mask(g.Bits), in[1]&mask(g.Bits))}
}

func (g CMPSecret) Gen(src KeySource, _ io.Reader, ops int) ([2]Material, error) {
	if err := checkBits("CMP secret", g.Bits, 1, 63); err != nil {
		return [2]Material{}, err
	}
	m := newBatches(ops)
	p := fss.Params{Type: fss.DCF, InBits: g.Bits + 1, OutBits: 1}
	for j := 0; j < 3; j++ {
		if err := derive(src, p, m); err != nil {
			return [2]Material{}, err
		}
	}
	err := derive(src, fss.Params{Type: fss.DPF, InBits: 1, OutBits: g.Out}, m)
	return [2]Material{m[0], m[1]}, err
}

func (g CMPSecret) Eval(p *Party, mat Material, in [][]uint64) ([][]uint64, error) {
	if err := evalPre(g, p, mat, in); err != nil {
		return nil, err
	}
	m, err := asBatch(mat, len(in), 4, 4)
	if err != nil {
		return nil, err
	}
	w := g.Bits + 1
	half := uint64(1) << uint(g.Bits)
	vx, vy, ve := make([]uint64, len(in)), make([]uint64, len(in)), make([]uint64, len(in))
	for i, x := range in {
		a, c := x[0]&mask(g.Bits), x[1]&mask(g.Bits)
		ve[i] = (a - c + m[i].r[0]) & mask(w)
		vx[i] = (a + m[i].r[1]) & mask(w)
		vy[i] = (c + m[i].r[2]) & mask(w)
	}
	o, err := p.open([]int{w, w, w}, ve, vx, vy)
	if err != nil {
		return nil, err
	}
	s := make([]uint64, len(in))
	for i := range in {
		// MSB(V) = 1 ⊕ 1{V < 2^ℓ}; three of them XOR to 1 ⊕ (sum of cmps).
		bit := oneShare(p.B)
		for j := 0; j < 3; j++ {
			bit += pubCmp(m[i].keys[j], w, o[j][i], half, oneShare(p.B))
		}
		s[i] = (bit + m[i].r[3]) & 1
	}
	o2, err := p.open([]int{1}, s)
	if err != nil {
		return nil, err
	}
	out := make([][]uint64, len(in))
	for i := range in {
		out[i] = []uint64{ev(m[i].keys[3], o2[0][i]^1)}
	}
	return out, nil
}
