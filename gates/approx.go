package gates

import (
	"fmt"
	"io"

	"github.com/kord-fss/kord/fss"
)

// Approx is a piecewise polynomial (spline): for unsigned x ∈ Z_{2^ℓ} and
// knots p_1 < … < p_m, piece j covers [p_j, p_{j+1}) (p_0 = 0,
// p_{m+1} = 2^ℓ) and the output is P_j(x) = Σ_t Coeffs[j][t]·x^t mod 2^n,
// n ≤ ℓ. (Fixed-point scaling is the caller's: apply TR afterwards.)
//
// Writing x ≡ x̂ − r (mod 2^n), P_j(x) = Σ_k A_{j,k}(r)·x̂^k with
// A_{j,k}(r) = Σ_e a_{j,k+e}·C(k+e,k)·(−r)^e. Selecting the piece needs
// c_i·r^e for the comparison bits c_i = 1{x < p_i}, and c_i·r^e is
// F_e(x̂−p_i) − F_e(x̂) + 1{x̂<p_i}·[r^e] for a DCF F_e at r with payload r^e.
// Complement: a derived DCF(ℓ→n) F_0 at r (β = 1), and bound DCF(ℓ→n) F_e
// at the same r with β = r^e for e = 1..d. Shares of r^e for e ≥ 2 come
// from F_0 itself: Σ_v ((v+1)^e − v^e)·F_0(v) telescopes to r^e, so degree
// ≥ 2 needs ℓ ≤ 24 (one full-domain evaluation offline) and no Beaver
// triple. Online: one round; m+1 evaluations of each of the d+1 keys.
type Approx struct {
	Bits, Out int
	Knots     []uint64
	Coeffs    [][]uint64 // len(Knots)+1 pieces, each of degree+1 coefficients, constant first
}

func (g Approx) degree() int { return len(g.Coeffs[0]) - 1 }

func (g Approx) Name() string { return "Approx" }
func (g Approx) Variant() string {
	return fmt.Sprintf("%d pieces, degree %d", len(g.Coeffs), g.degree())
}
func (g Approx) InBits() int { return g.Bits }
func (g Approx) Arity() int  { return 1 }
func (g Approx) OutWidths() []int {
	return []int{g.Out}
}
func (g Approx) Valid([]uint64) bool { return true }

func (g Approx) piece(x uint64) int {
	j := 0
	for _, p := range g.Knots {
		if x >= p {
			j++
		}
	}
	return j
}

func (g Approx) Ref(in []uint64) []uint64 {
	x := in[0] & mask(g.Bits)
	c := g.Coeffs[g.piece(x)]
	var y uint64
	for t := len(c) - 1; t >= 0; t-- {
		y = y*x + c[t]
	}
	return []uint64{y & mask(g.Out)}
}

func (g Approx) check() error {
	if err := checkBits("Approx", g.Bits, 1, 64); err != nil {
		return err
	}
	if g.Out < 1 || g.Out > g.Bits {
		return fmt.Errorf("gates: Approx: output width %d is outside 1..%d", g.Out, g.Bits)
	}
	if err := checkKnots("Approx", g.Bits, g.Knots); err != nil {
		return err
	}
	if len(g.Coeffs) != len(g.Knots)+1 || len(g.Coeffs[0]) == 0 {
		return fmt.Errorf("gates: Approx: want %d pieces of coefficients", len(g.Knots)+1)
	}
	for _, c := range g.Coeffs {
		if len(c) != len(g.Coeffs[0]) {
			return fmt.Errorf("gates: Approx: pieces have different degrees")
		}
	}
	if g.degree() > maxDegree {
		// binom's exact integer arithmetic overflows well past this.
		return fmt.Errorf("gates: Approx: degree %d exceeds %d", g.degree(), maxDegree)
	}
	if g.degree() >= 2 && g.Bits > maxFullDomain {
		return fmt.Errorf("gates: Approx: degree %d needs ℓ ≤ %d", g.degree(), maxFullDomain)
	}
	return nil
}

// maxDegree bounds an Approx polynomial's degree: binom is exact for
// t ≤ 62 (its running product stays below 2^64).
const maxDegree = 32

func binom(t, k int) uint64 {
	r := uint64(1)
	for i := 1; i <= k; i++ {
		r = r * uint64(t-k+i) / uint64(i)
	}
	return r
}

// coef returns Σ over e of the public factor a_{k+e}·C(k+e,k)·(−1)^e
// applied to powers: it returns the vector f with A_k(r) = Σ_e f[e]·r^e.
func coefVec(a []uint64, k int) []uint64 {
	d := len(a) - 1
	f := make([]uint64, d+1)
	for e := 0; k+e <= d; e++ {
		v := a[k+e] * binom(k+e, k)
		if e%2 == 1 {
			v = -v
		}
		f[e] = v
	}
	return f
}

func (g Approx) Gen(src KeySource, _ io.Reader, ops int) ([2]Material, error) {
	if err := g.check(); err != nil {
		return [2]Material{}, err
	}
	d := g.degree()
	p := fss.Params{Type: fss.DCF, InBits: g.Bits, OutBits: g.Out}
	m := newBatches(ops)
	if err := derive(src, p, m); err != nil {
		return [2]Material{}, err
	}
	var full []uint64
	if d >= 2 {
		full = make([]uint64, 1<<uint(g.Bits))
	}
	for i := range m[0] {
		r := [2]uint64{m[0][i].r[0], m[1][i].r[0]}
		for b := 0; b < 2; b++ {
			w := make([]uint64, d+1)
			w[0] = oneShare(b)
			if d >= 1 {
				w[1] = r[b] & mask(g.Out)
			}
			if d >= 2 {
				if err := m[b][i].keys[0].EvalAll(full); err != nil {
					return [2]Material{}, err
				}
				for e := 2; e <= d; e++ {
					var s uint64
					for v := range full {
						s += (pow(uint64(v+1), e) - pow(uint64(v), e)) * full[v]
					}
					w[e] = s & mask(g.Out)
				}
			}
			m[b][i].w = w
		}
	}
	for e := 1; e <= d; e++ {
		err := bindAll(src, p, m, func(i int) (a, c [2]uint64) {
			return [2]uint64{m[0][i].r[0], m[1][i].r[0]}, [2]uint64{m[0][i].w[e], m[1][i].w[e]}
		})
		if err != nil {
			return [2]Material{}, err
		}
	}
	return [2]Material{m[0], m[1]}, nil
}

func pow(x uint64, e int) uint64 {
	r := uint64(1)
	for ; e > 0; e-- {
		r *= x
	}
	return r
}

func (g Approx) Eval(p *Party, mat Material, in [][]uint64) ([][]uint64, error) {
	if err := g.check(); err != nil {
		return nil, err
	}
	d := g.degree()
	m, xhat, err := openMasked(g, p, mat, in, d+1)
	if err != nil {
		return nil, err
	}
	nk := len(g.Knots)
	// Public factors: base[k] gives A_{m,k}(r) = Σ_e base[k][e]·r^e; delta[i][k]
	// gives A_{i−1,k} − A_{i,k} for knot i (1-based in the doc, 0-based here).
	base := make([][]uint64, d+1)
	delta := make([][][]uint64, nk)
	for k := 0; k <= d; k++ {
		base[k] = coefVec(g.Coeffs[nk], k)
	}
	for i := 0; i < nk; i++ {
		delta[i] = make([][]uint64, d+1)
		for k := 0; k <= d; k++ {
			lo, hi := coefVec(g.Coeffs[i], k), coefVec(g.Coeffs[i+1], k)
			delta[i][k] = make([]uint64, d+1)
			for e := range lo {
				delta[i][k][e] = lo[e] - hi[e]
			}
		}
	}
	out := make([][]uint64, len(in))
	cr := make([][]uint64, nk) // cr[i][e] = share of c_i·r^e
	for i := range cr {
		cr[i] = make([]uint64, d+1)
	}
	for op := range in {
		xh := xhat[op]
		w := m[op].w
		if d == 0 {
			w = []uint64{oneShare(p.B)}
		}
		for e := 0; e <= d; e++ {
			fx := ev(m[op].keys[e], xh)
			for i, pk := range g.Knots {
				u := (xh - pk) & mask(g.Bits)
				cr[i][e] = ev(m[op].keys[e], u) - fx + lt(xh, pk)*w[e]
			}
		}
		var y, xk uint64 = 0, 1
		for k := 0; k <= d; k++ {
			var wk uint64
			for e := 0; e <= d; e++ {
				wk += base[k][e] * w[e]
				for i := 0; i < nk; i++ {
					wk += delta[i][k][e] * cr[i][e]
				}
			}
			y += xk * wk
			xk *= xh
		}
		out[op] = []uint64{y & mask(g.Out)}
	}
	return out, nil
}
