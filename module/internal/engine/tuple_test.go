package engine

import (
	"errors"
	"strings"
	"testing"

	"github.com/kord-fss/kord/module/msg"
)

// TestTuplesDerived: triples, squares, bits and matrix triples drawn by
// both modules reconstruct with their relation exactly (c = a·b, q = a²,
// r ∈ {0,1}, C = A·B mod 2^64); party 1's shares are not the values; a
// second request of the same shape draws fresh values.
func TestTuplesDerived(t *testing.T) {
	e := pair(t)
	for _, c := range []msg.Correlation{
		{Kind: msg.CorrTriples, Ring: 64, In: 101, Out: 1},
		{Kind: msg.CorrSquares, Ring: 64, In: 33, Out: 1},
		{Kind: msg.CorrBits, Ring: 64, In: 257, Out: 1},
		{Kind: msg.CorrMatMul, Ring: 64, Out: 3, In: 4, W: 5},
		{Kind: msg.CorrTriples, Ring: 20, In: 9, Out: 1},
	} {
		var prev []uint64
		for round := 0; round < 2; round++ {
			sh := corrPair(t, e, c)
			m := uint64(1)<<c.Ring - 1
			if c.Ring == 64 {
				m = ^uint64(0)
			}
			rec := func(x, y []uint64) []uint64 {
				out := make([]uint64, len(x))
				for i := range x {
					out[i] = (x[i] + y[i]) & m
				}
				return out
			}
			a, r, z := rec(sh[0].A, sh[1].A), rec(sh[0].R, sh[1].R), rec(sh[0].Z, sh[1].Z)
			ones := 0
			switch c.Kind {
			case msg.CorrTriples:
				for i := range a {
					if z[i] != a[i]*r[i]&m {
						t.Fatalf("%v: triple %d: c ≠ a·b", c.Kind, i)
					}
				}
			case msg.CorrSquares:
				if len(r) != 0 {
					t.Fatal("squares carry R")
				}
				for i := range a {
					if z[i] != a[i]*a[i]&m {
						t.Fatalf("square %d: q ≠ a²", i)
					}
				}
			case msg.CorrBits:
				if len(r) != 0 || len(z) != 0 {
					t.Fatal("bits carry R or Z")
				}
				for i := range a {
					if a[i] > 1 {
						t.Fatalf("bit %d is %d", i, a[i])
					}
					ones += int(a[i])
				}
				if ones < 64 || ones > 193 {
					t.Fatalf("%d ones among %d bits", ones, len(a))
				}
			case msg.CorrMatMul:
				want := make([]uint64, c.Out*c.W)
				matMul(c.Out, c.In, c.W, a, r, want)
				for i := range z {
					if z[i] != want[i] {
						t.Fatalf("matrix triple: C[%d] ≠ (A·B)[%d]", i, i)
					}
				}
			}
			same := 0
			for i := range a {
				if sh[1].A[i] == a[i] {
					same++
				}
			}
			if c.Kind != msg.CorrBits && same > 1 {
				t.Fatalf("%v: party 1's share equals the value in %d places", c.Kind, same)
			}
			if prev != nil && c.Kind != msg.CorrBits && a[0] == prev[0] && a[len(a)-1] == prev[len(prev)-1] {
				t.Fatalf("%v: a second request drew the same values", c.Kind)
			}
			prev = a
		}
	}
}

// TestTupleBadRequest: bad shapes and counts are refused with the field
// named, and move no counter.
func TestTupleBadRequest(t *testing.T) {
	e := pair(t)
	for _, tc := range []struct {
		c     msg.Correlation
		field string
	}{
		{msg.Correlation{Kind: msg.CorrTriples, Ring: 64, In: 0, Out: 1}, "Corr.In/Out"},
		{msg.Correlation{Kind: msg.CorrTriples, Ring: 64, In: msg.MaxCorrWords/3 + 1, Out: 1}, "Corr"},
		{msg.Correlation{Kind: msg.CorrSquares, Ring: 64, In: 5, Out: 2}, "Corr.Out/K/H/W"},
		{msg.Correlation{Kind: msg.CorrBits, Ring: 64, In: 5, Out: 1, W: 1}, "Corr.Out/K/H/W"},
		{msg.Correlation{Kind: msg.CorrBits, Ring: 0, In: 5, Out: 1}, "Corr.Ring"},
		{msg.Correlation{Kind: msg.CorrTriples, Ring: 64, In: 5, Out: 1, Part: msg.CorrWeight}, "Corr.Part"},
		{msg.Correlation{Kind: msg.CorrTriples, Ring: 64, In: 5, Out: 1, Part: msg.CorrInput, WeightFrom: 1}, "Corr.Part"},
		{msg.Correlation{Kind: msg.CorrMatMul, Ring: 64, Out: 2, In: 2, W: 0}, "Corr.Out/In/W"},
		{msg.Correlation{Kind: msg.CorrMatMul, Ring: 64, Out: 2, In: 1 << 17, W: 2}, "Corr.Out/In/W"},
		{msg.Correlation{Kind: msg.CorrMatMul, Ring: 64, Out: 2, In: 2, W: 2, K: 1}, "Corr.K/H"},
		{msg.Correlation{Kind: msg.CorrMatMul, Ring: 64, Out: 4096, In: 4096, W: 1}, "Corr"},
	} {
		before := e[0].ctr.Next
		_, err := e[0].Submit(ctx, &msg.SubmitRequest{Kind: msg.SubmitCorrelation, Corr: &tc.c})
		if !errors.Is(err, ErrBadRequest) || !strings.Contains(err.Error(), tc.field+":") {
			t.Fatalf("%+v: %v, want ErrBadRequest naming %s", tc.c, err, tc.field)
		}
		if e[0].ctr.Next != before {
			t.Fatalf("%+v: a refused request moved the counter", tc.c)
		}
	}
}
