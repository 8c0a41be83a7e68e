package mpspdz

import (
	"fmt"

	"github.com/kord-fss/kord/module/msg"
)

// Shape is the module request (msg.SubmitCorrelation) for n tuples of
// kind k over Z_2^64: n elementwise triples, squares or bits in one
// request, or one matrix triple (n must be 1).
func Shape(k Kind, n int) (msg.Correlation, error) {
	if !k.valid() {
		return msg.Correlation{}, fmt.Errorf("mpspdz: unknown kind %+v", k)
	}
	c := msg.Correlation{Ring: 64, In: n, Out: 1}
	switch k.Name {
	case "Triples":
		c.Kind = msg.CorrTriples
	case "Squares":
		c.Kind = msg.CorrSquares
	case "Bits":
		c.Kind = msg.CorrBits
	case "Matrix":
		if n != 1 {
			return msg.Correlation{}, fmt.Errorf("mpspdz: a matrix request is one triple, not %d", n)
		}
		c = msg.Correlation{Kind: msg.CorrMatMul, Ring: 64, Out: k.M, In: k.K, W: k.N}
	}
	if _, _, _, err := c.Sizes(); err != nil {
		return msg.Correlation{}, fmt.Errorf("mpspdz: %d %s: %w", n, k, err)
	}
	return c, nil
}

// FromCorr lays one party's module shares of a Shape(k, n) request out in
// file order (a, b, c per triple; a, a² per square; r per bit; A, B, C per
// matrix triple), appending to dst.
func FromCorr(dst []uint64, k Kind, sh *msg.CorrShares) ([]uint64, error) {
	n := sh.Corr.In
	if k.Name == "Matrix" {
		n = 1
	}
	want, err := Shape(k, n)
	if err != nil {
		return dst, err
	}
	if sh.Corr != want {
		return dst, fmt.Errorf("mpspdz: shares of shape %+v for %s", sh.Corr, k)
	}
	switch k.Name {
	case "Triples":
		for i := range sh.A {
			dst = append(dst, sh.A[i], sh.R[i], sh.Z[i])
		}
	case "Squares":
		for i := range sh.A {
			dst = append(dst, sh.A[i], sh.Z[i])
		}
	case "Bits":
		dst = append(dst, sh.A...)
	case "Matrix":
		dst = append(append(append(dst, sh.A...), sh.R...), sh.Z...)
	}
	return dst, nil
}
