// MP-SPDZ tuples (Beaver triples, squares, random bits, matrix triples) on
// the correlation path, drawn fresh under their description.

package engine

import (
	"github.com/kord-fss/kord/internal/prg"
	"github.com/kord-fss/kord/module/internal/kdf"
	"github.com/kord-fss/kord/module/msg"
)

// Preprocessing tuples (msg.CorrKind.Tuple: Beaver triples, squares,
// random bits, matrix triples). Both modules draw, by the rule of every
// derived correlation (kdf.CorrWords under the request's whole
// description and first counter), the words A, A0, R, R0, Z0; each computes Z = map(A, R) itself and
// keeps only its own party's shares (party 0: A0, R0, Z0; party 1: A − A0,
// R − R0, Z − Z0). A tuple is always fresh: no weight mask is kept or used.

// tupleShares derives the shares of tuple request c at counters first…
// (blocks of them, already committed).
func (e *Engine) tupleShares(c *msg.Correlation, first uint64, blocks int) (*msg.CorrShares, error) {
	na, nr, nz, err := c.Sizes()
	if err != nil {
		return nil, bad("%v", err)
	}
	// The same rule as every correlation (kdf.CorrWords under the whole
	// description corrDesc): words a, a0, b, b0, c0, in that order.
	desc := corrDesc(c, first, blocks)
	buf := make([]uint64, 2*na+2*nr+nz)
	defer clear(buf)
	e.prf.CorrWords(&desc, buf)
	a, a0 := buf[:na], buf[na:2*na]
	r, r0 := buf[2*na:2*na+nr], buf[2*na+nr:2*na+2*nr]
	z0 := buf[2*na+2*nr:]
	z := make([]uint64, nz)
	defer clear(z)
	m := prg.Mask(c.Ring)
	for _, v := range [][]uint64{a, a0, r, r0, z0} {
		for i := range v {
			v[i] &= m
		}
	}
	switch c.Kind {
	case msg.CorrTriples:
		for i := range z {
			z[i] = a[i] * r[i] & m
		}
	case msg.CorrSquares:
		for i := range z {
			z[i] = a[i] * a[i] & m
		}
	case msg.CorrBits:
		for i := range a {
			a[i] &= 1
		}
	case msg.CorrMatMul:
		matMul(c.Out, c.In, c.W, a, r, z)
		for i := range z {
			z[i] &= m
		}
	}
	split := func(v, v0 []uint64) []uint64 { return e.ownShare(v, v0, m) }
	sh := &msg.CorrShares{Counter: first, Blocks: blocks, Corr: *c, A: split(a, a0), R: split(r, r0), Z: split(z, z0)}
	e.prf.CorrTag(&desc, (*[kdf.TagSize]byte)(sh.PairTag[:]))
	return sh, nil
}

// matMul adds the m×k by k×n product of a and b (row-major) into z.
func matMul(m, k, n int, a, b, z []uint64) {
	for i := 0; i < m; i++ {
		zr := z[i*n : (i+1)*n]
		for l, av := range a[i*k : (i+1)*k] {
			for j, bv := range b[l*n : (l+1)*n] {
				zr[j] += av * bv
			}
		}
	}
}
