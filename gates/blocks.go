package gates

import (
	"fmt"
	"io"

	"github.com/kord-fss/kord/fss"
)

// opMat is one party's material for one operation: key shares, mask shares
// (one per opened value) and extra additive shares a gate may need.
type opMat struct {
	keys []*fss.Key
	r    []uint64
	w    []uint64
	used bool // taken by an Eval: its masks must never be opened again
}

// batch is a Material: one opMat per operation.
type batch []opMat

func (b batch) Ops() int { return len(b) }

func newBatches(ops int) [2]batch { return [2]batch{make(batch, ops), make(batch, ops)} }

// asBatch takes the material of one Eval: it checks its shape and marks it
// used, so a second Eval on the same material fails instead of opening a
// second value under the same masks.
func asBatch(m Material, ops, keys, masks int) (batch, error) {
	b, ok := m.(batch)
	if !ok || len(b) != ops {
		return nil, fmt.Errorf("%w: want %d operations", ErrMaterial, ops)
	}
	for i := range b {
		if len(b[i].keys) != keys || len(b[i].r) != masks {
			return nil, fmt.Errorf("%w: operation %d has %d keys and %d masks, want %d and %d", ErrMaterial, i, len(b[i].keys), len(b[i].r), keys, masks)
		}
		if b[i].used {
			return nil, fmt.Errorf("%w: operation %d's material was already used; a reused mask reveals the difference of two inputs", ErrMaterial, i)
		}
	}
	for i := range b {
		b[i].used = true
	}
	return b, nil
}

// derive appends one derived key (β = 1) to every operation of both
// parties and records the α shares as that operation's next mask.
func derive(src KeySource, p fss.Params, m [2]batch) error {
	k, a, _, err := derivedN(src, p, len(m[0]), false)
	if err != nil {
		return err
	}
	for b := 0; b < 2; b++ {
		for i := range m[b] {
			m[b][i].keys = append(m[b][i].keys, k[b][i])
			m[b][i].r = append(m[b][i].r, a[b][i])
		}
	}
	return nil
}

// bindAll requests, for every operation i, one bound key pair with α shares
// alpha(i) and β shares beta(i), and appends it to the operation's keys.
func bindAll(src KeySource, p fss.Params, m [2]batch, shares func(i int) (alpha, beta [2]uint64)) error {
	var al, bt [2][]uint64
	for i := range m[0] {
		a, c := shares(i)
		for b := 0; b < 2; b++ {
			al[b] = append(al[b], a[b])
			bt[b] = append(bt[b], c[b])
		}
	}
	k, err := boundN(src, p, al, bt)
	if err != nil {
		return err
	}
	for b := 0; b < 2; b++ {
		for i := range m[b] {
			m[b][i].keys = append(m[b][i].keys, k[b][i])
		}
	}
	return nil
}

// ---------------------------------------------------------------- EQ

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
	if err := evalPre(g, p, mat, in); err != nil {
		return nil, err
	}
	m, err := asBatch(mat, len(in), 1, 1)
	if err != nil {
		return nil, err
	}
	z := make([]uint64, len(in))
	for i, x := range in {
		z[i] = (x[0] - x[1] + m[i].r[0]) & mask(g.Bits)
	}
	o, err := p.open([]int{g.Bits}, z)
	if err != nil {
		return nil, err
	}
	out := make([][]uint64, len(in))
	for i := range in {
		out[i] = []uint64{ev(m[i].keys[0], o[0][i])}
	}
	return out, nil
}

func evalPre(g Gate, p *Party, m Material, in [][]uint64) error {
	if err := checkParty(p); err != nil {
		return err
	}
	return checkBatch(g, m, in)
}

// ---------------------------------------------------------------- CMP, public comparand; DReLU

// CMP is 1{x < C} for secret unsigned x ∈ Z_{2^ℓ} and public C
// (0 ≤ C ≤ 2^ℓ). Complement: one derived DCF(ℓ→n) at a random r, β = 1.
// Online: open x̂ = x + r; share = DCF(x̂−C) − DCF(x̂) + b·1{x̂ < C}.
// Output: shares in Z_{2^n}. DReLU is the same gate with C = 2^{ℓ−1}.
type CMP struct {
	Bits, Out int
	C         uint64
	drelu     bool
}

// DReLU returns the gate 1{x ≥ 0} for two's-complement x ∈ Z_{2^ℓ}, i.e.
// 1{x < 2^{ℓ−1}} unsigned; shares in Z_{2^n}.
func DReLU(bits, out int) CMP { return CMP{Bits: bits, Out: out, C: 1 << uint(bits-1), drelu: true} }

func (g CMP) Name() string {
	if g.drelu {
		return "DReLU"
	}
	return "CMP"
}
func (g CMP) Variant() string {
	if g.drelu {
		return "signed"
	}
	return fmt.Sprintf("x<c public, c=%d", g.C)
}
func (g CMP) InBits() int         { return g.Bits }
func (g CMP) Arity() int          { return 1 }
func (g CMP) OutWidths() []int    { return []int{g.Out} }
func (g CMP) Valid([]uint64) bool { return true }
func (g CMP) Ref(in []uint64) []uint64 {
	return []uint64{lt(in[0]&mask(g.Bits), g.C)}
}

func (g CMP) Gen(src KeySource, _ io.Reader, ops int) ([2]Material, error) {
	if err := checkBits(g.Name(), g.Bits, 1, 64); err != nil {
		return [2]Material{}, err
	}
	if g.Bits < 64 && g.C > 1<<uint(g.Bits) {
		return [2]Material{}, fmt.Errorf("gates: CMP: comparand %d exceeds 2^%d", g.C, g.Bits)
	}
	m := newBatches(ops)
	err := derive(src, fss.Params{Type: fss.DCF, InBits: g.Bits, OutBits: g.Out}, m)
	return [2]Material{m[0], m[1]}, err
}

func (g CMP) Eval(p *Party, mat Material, in [][]uint64) ([][]uint64, error) {
	m, xhat, err := openMasked(g, p, mat, in, 1)
	if err != nil {
		return nil, err
	}
	out := make([][]uint64, len(in))
	for i := range in {
		out[i] = []uint64{pubCmp(m[i].keys[0], g.Bits, xhat[i], g.C, oneShare(p.B)) & mask(g.Out)}
	}
	return out, nil
}

// ---------------------------------------------------------------- CMP, secret comparand

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

// ---------------------------------------------------------------- Mod

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

// ---------------------------------------------------------------- TR

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
	if err := evalPre(g, p, mat, in); err != nil {
		return nil, err
	}
	m, err := asBatch(mat, len(in), 1, 1)
	if err != nil {
		return nil, err
	}
	z := make([]uint64, len(in))
	for i, x := range in {
		z[i] = trPrep(x[0]&mask(g.Bits), g.Shift, m[i].r[0])
	}
	o, err := p.open([]int{g.Shift + 1}, z)
	if err != nil {
		return nil, err
	}
	out := make([][]uint64, len(in))
	for i, x := range in {
		out[i] = []uint64{trFinish(m[i].keys[0], p.B, x[0]&mask(g.Bits), g.Shift, g.Bits-g.Shift, o[0][i])}
	}
	return out, nil
}

// ---------------------------------------------------------------- DigDec

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

// ---------------------------------------------------------------- Ctn

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
