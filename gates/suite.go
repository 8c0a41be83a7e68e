package gates

import (
	"io"
)

// StandardGates returns the gates the cost table and tests measure at
// width ℓ: every block whose complement is practical at that width, with
// fixed public parameters (comparand ⌊(2^ℓ−1)/3⌋, modulus ⌊(2^ℓ−1)/7⌋+1,
// shift ⌊ℓ/2⌋, four evenly spaced knots, digit width ⌈ℓ/3⌉ capped at 8,
// a random public table, a random shared table, a 4-piece spline of
// degree 2, or degree 1 above ℓ = 24). tables supplies the random table
// entries (crypto/rand when nil).
func StandardGates(bits int, tables io.Reader) ([]Gate, error) {
	m := mask(bits)
	var knots []uint64
	for i := uint64(1); i <= 4; i++ {
		knots = append(knots, m/5*i)
	}
	d := min((bits+2)/3, 8)
	gs := []Gate{
		EQ{Bits: bits, Out: bits},
		CMP{Bits: bits, Out: bits, C: m / 3},
	}
	if bits <= 63 {
		gs = append(gs, CMPSecret{Bits: bits, Out: bits})
	}
	gs = append(gs,
		Mod{Bits: bits, M: m/7 + 1},
		TR{Bits: bits, Shift: bits / 2},
		Ctn{Bits: bits, Out: bits, Knots: knots},
		DigDec{Bits: bits, D: d},
	)
	if bits <= 18 {
		t, err := randWords(tables, 1<<uint(bits), bits)
		if err != nil {
			return nil, err
		}
		gs = append(gs, PubLUT{Bits: bits, Out: bits, Table: t})
	}
	if bits <= 8 {
		t0, err := randWords(tables, 1<<uint(bits), bits)
		if err != nil {
			return nil, err
		}
		t1, err := randWords(tables, 1<<uint(bits), bits)
		if err != nil {
			return nil, err
		}
		gs = append(gs, PriLUT{Bits: bits, Out: bits, Shares: [2][]uint64{t0, t1}})
	}
	deg := 2
	if bits > maxFullDomain {
		deg = 1
	}
	coeffs := make([][]uint64, len(knots)+1)
	for j := range coeffs {
		c, err := randWords(tables, deg+1, bits)
		if err != nil {
			return nil, err
		}
		coeffs[j] = c
	}
	gs = append(gs,
		Approx{Bits: bits, Out: bits, Knots: knots[:], Coeffs: coeffs},
		ReLU{Bits: bits},
		DReLU(bits, bits),
	)
	return gs, nil
}

// AllInputs returns every plaintext input of g (all 2^{ℓ·arity}
// combinations) that g.Valid accepts; ℓ·arity must be at most 20.
func AllInputs(g Gate) [][]uint64 {
	l, a := g.InBits(), g.Arity()
	total := uint64(1) << uint(l*a)
	var in [][]uint64
	for v := uint64(0); v < total; v++ {
		x := make([]uint64, a)
		for j := range x {
			x[j] = (v >> uint(l*j)) & mask(l)
		}
		if g.Valid(x) {
			in = append(in, x)
		}
	}
	return in
}

// RandomInputs returns count random valid inputs of g, with the edge
// values 0, 1, 2^{ℓ−1}−1, 2^{ℓ−1} and 2^ℓ−1 mixed in.
func RandomInputs(g Gate, rnd io.Reader, count int) ([][]uint64, error) {
	l, a := g.InBits(), g.Arity()
	edges := []uint64{0, 1, mask(l - 1), 1 << uint(l-1), mask(l)}
	var in [][]uint64
	for tries := 0; len(in) < count && tries < 64*count; tries++ {
		x, err := randWords(rnd, a, l)
		if err != nil {
			return nil, err
		}
		if tries < len(edges)*a {
			x[tries%a] = edges[tries/a]
		}
		if g.Valid(x) {
			in = append(in, x)
		}
	}
	return in, nil
}
