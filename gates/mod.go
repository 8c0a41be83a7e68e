package gates

import (
	"fmt"
	"io"

	"github.com/kord-fss/kord/fss"
)

// Mod is x mod M for public M and unsigned x ∈ Z_{2^ℓ}, valid for
// x < Span·M. With one derived DCF(ℓ→ℓ) at r, every comparison
// c_i = 1{x < i·M} (i = 1..Span−1) is a pair of evaluations of the same
// key, and x mod M = x − M·Σ_i (1 − c_i). Span = 0 picks ⌈2^ℓ/M⌉ (the whole
// domain) when that is at most 256, else 2 (Xing et al.'s range x < 2M).
// Output: shares in Z_{2^ℓ}.
type Mod struct {
	Bits int
	M    uint64
	Span uint64
}

func (g Mod) span() uint64 {
	if g.Span != 0 {
		return g.Span
	}
	if g.Bits < 64 {
		full := (uint64(1)<<uint(g.Bits) + g.M - 1) / g.M
		if full <= 256 {
			return full
		}
	}
	return 2
}

// cuts returns the multiples i·M (i ≥ 1, i < span) below 2^ℓ.
func (g Mod) cuts() []uint64 {
	var c []uint64
	for i := uint64(1); i < g.span(); i++ {
		v := i * g.M
		if v/g.M != i || (g.Bits < 64 && v >= 1<<uint(g.Bits)) {
			break
		}
		c = append(c, v)
	}
	return c
}

func (g Mod) Name() string     { return "Mod" }
func (g Mod) Variant() string  { return fmt.Sprintf("M=%d, x<%d·M", g.M, g.span()) }
func (g Mod) InBits() int      { return g.Bits }
func (g Mod) Arity() int       { return 1 }
func (g Mod) OutWidths() []int { return []int{g.Bits} }
func (g Mod) Valid(in []uint64) bool {
	x := in[0] & mask(g.Bits)
	hi, lo := mulFull(g.span(), g.M)
	return hi != 0 || x < lo
}
func (g Mod) Ref(in []uint64) []uint64 { return []uint64{(in[0] & mask(g.Bits)) % g.M} }

func mulFull(a, b uint64) (hi, lo uint64) {
	const m32 = 1<<32 - 1
	a0, a1, b0, b1 := a&m32, a>>32, b&m32, b>>32
	w0 := a0 * b0
	t := a1*b0 + w0>>32
	w1, w2 := t&m32, t>>32
	w1 += a0 * b1
	return a1*b1 + w2 + w1>>32, a * b
}

func (g Mod) Gen(src KeySource, _ io.Reader, ops int) ([2]Material, error) {
	if err := checkBits("Mod", g.Bits, 1, 64); err != nil {
		return [2]Material{}, err
	}
	if g.M == 0 || (g.Bits < 64 && g.M > 1<<uint(g.Bits)) {
		return [2]Material{}, fmt.Errorf("gates: Mod: modulus %d is outside 1..2^%d", g.M, g.Bits)
	}
	m := newBatches(ops)
	err := derive(src, fss.Params{Type: fss.DCF, InBits: g.Bits, OutBits: g.Bits}, m)
	return [2]Material{m[0], m[1]}, err
}

func (g Mod) Eval(p *Party, mat Material, in [][]uint64) ([][]uint64, error) {
	m, xhat, err := openMasked(g, p, mat, in, 1)
	if err != nil {
		return nil, err
	}
	cuts := g.cuts()
	out := make([][]uint64, len(in))
	for i, x := range in {
		var q uint64
		for _, c := range cuts {
			q += oneShare(p.B) - pubCmp(m[i].keys[0], g.Bits, xhat[i], c, oneShare(p.B))
		}
		out[i] = []uint64{(x[0] - g.M*q) & mask(g.Bits)}
	}
	return out, nil
}
