package gates

import (
	"io"

	"github.com/kord-fss/kord/fss"
)

// EQ is 1{x = y} for secret x, y ∈ Z_{2^ℓ} (a public comparand is y with
// party 1's share 0). Complement: one derived DPF(ℓ→n) at a random r, β = 1.
// Online: open ẑ = x − y + r; share = DPF(ẑ). Output: shares in Z_{2^n}.
type EQ struct{ Bits, Out int }

func (g EQ) Name() string        { return "EQ" }
func (g EQ) Variant() string     { return "" }
func (g EQ) InBits() int         { return g.Bits }
func (g EQ) Arity() int          { return 2 }
func (g EQ) OutWidths() []int    { return []int{g.Out} }
func (g EQ) Valid([]uint64) bool { return true }
func (g EQ) Ref(in []uint64) []uint64 {
	if in[0]&mask(g.Bits) == in[1]&mask(g.Bits) {
		return []uint64{1}
	}
	return []uint64{0}
}

func (g EQ) Gen(src KeySource, _ io.Reader, ops int) ([2]Material, error) {
	if err := checkBits("EQ", g.Bits, 1, 64); err != nil {
		return [2]Material{}, err
	}
	m := newBatches(ops)
	err := derive(src, fss.Params{Type: fss.DPF, InBits: g.Bits, OutBits: g.Out}, m)
	return [2]Material{m[0], m[1]}, err
}

func (g EQ) Eval(p *Party, mat Material, in [][]uint64) ([][]uint64, error) {
	m, o, err := openOne(g, p, mat, in, 1, g.Bits, func(x []uint64, r uint64) uint64 { return (x[0] - x[1] + r) & mask(g.Bits) })
	if err != nil {
		return nil, err
	}
	out := make([][]uint64, len(in))
	for i := range in {
		out[i] = []uint64{ev(m[i].keys[0], o[i])}
	}
	return out, nil
}
