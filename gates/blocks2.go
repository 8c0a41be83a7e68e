package gates

import (
	"fmt"
	"io"

	"github.com/kord-fss/kord/fss"
)

// maxFullDomain bounds ℓ for blocks that evaluate a key on the whole domain.
const maxFullDomain = 24

// ---------------------------------------------------------------- PubLUT

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

// ---------------------------------------------------------------- PriLUT

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

// ---------------------------------------------------------------- ReLU

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

// ---------------------------------------------------------------- Approx

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
