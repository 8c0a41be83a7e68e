package gates

import (
	"fmt"
	"io"

	"github.com/kord-fss/kord/fss"
)

// PriLUT is T[x] for a secret-shared table T (party b holds Shares[b], 2^ℓ
// entries in Z_{2^n}) and secret x. Complement (Xing et al.): 2^ℓ bound
// DPF(ℓ→n) keys, key i at the point r + i with payload T[i], where r is a
// joint mask each party picks its share of. Online: open x̂ = x + r;
// share = Σ_i DPF_i(x̂). Offline cost 2^ℓ·(⌈ℓ/8⌉+⌈n/8⌉) bytes per party per
// lookup. Output: shares in Z_{2^n}.
type PriLUT struct {
	Bits, Out int
	Shares    [2][]uint64
}

func (g PriLUT) Name() string        { return "PriLUT" }
func (g PriLUT) Variant() string     { return "" }
func (g PriLUT) InBits() int         { return g.Bits }
func (g PriLUT) Arity() int          { return 1 }
func (g PriLUT) OutWidths() []int    { return []int{g.Out} }
func (g PriLUT) Valid([]uint64) bool { return true }
func (g PriLUT) Ref(in []uint64) []uint64 {
	x := in[0] & mask(g.Bits)
	return []uint64{(g.Shares[0][x] + g.Shares[1][x]) & mask(g.Out)}
}

func (g PriLUT) Gen(src KeySource, rnd io.Reader, ops int) ([2]Material, error) {
	if err := checkBits("PriLUT", g.Bits, 1, 20); err != nil {
		return [2]Material{}, err
	}
	n := 1 << uint(g.Bits)
	if len(g.Shares[0]) != n || len(g.Shares[1]) != n {
		return [2]Material{}, fmt.Errorf("gates: PriLUT: table shares must have 2^%d entries", g.Bits)
	}
	m := newBatches(ops)
	p := fss.Params{Type: fss.DPF, InBits: g.Bits, OutBits: g.Out}
	var al, bt [2][]uint64
	for op := 0; op < ops; op++ {
		r, err := randWords(rnd, 2, g.Bits)
		if err != nil {
			return [2]Material{}, err
		}
		for b := 0; b < 2; b++ {
			m[b][op] = opMat{r: []uint64{r[b]}}
		}
		for i := 0; i < n; i++ {
			al[0] = append(al[0], (r[0]+uint64(i))&mask(g.Bits))
			al[1] = append(al[1], r[1])
			bt[0] = append(bt[0], g.Shares[0][i]&mask(g.Out))
			bt[1] = append(bt[1], g.Shares[1][i]&mask(g.Out))
		}
	}
	k, err := boundN(src, p, al, bt)
	if err != nil {
		return [2]Material{}, err
	}
	for b := 0; b < 2; b++ {
		for op := range m[b] {
			m[b][op].keys = k[b][op*n : (op+1)*n]
		}
	}
	return [2]Material{m[0], m[1]}, nil
}

func (g PriLUT) Eval(p *Party, mat Material, in [][]uint64) ([][]uint64, error) {
	m, xhat, err := openMasked(g, p, mat, in, 1<<uint(g.Bits))
	if err != nil {
		return nil, err
	}
	out := make([][]uint64, len(in))
	for i := range in {
		var y uint64
		for _, k := range m[i].keys {
			y += ev(k, xhat[i])
		}
		out[i] = []uint64{y & mask(g.Out)}
	}
	return out, nil
}
