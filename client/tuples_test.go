package client_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/kord-fss/kord/client"
	"github.com/kord-fss/kord/module/msg"
	"github.com/kord-fss/kord/service/servicetest"
)

// TestTuplesThroughParties: Beaver triples, squares, bits and a matrix
// triple through application → party daemon → module socket → durable
// module: each site gets only its own shares, which open to correct
// tuples; a bad count or shape is refused at both sites naming the field,
// with no module counter moved.
func TestTuplesThroughParties(t *testing.T) {
	cl := servicetest.Start(t, 4096, nil).Apps
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	id := uint64(0)
	for _, c := range []msg.Correlation{
		{Kind: msg.CorrTriples, Ring: 64, In: 300, Out: 1},
		{Kind: msg.CorrSquares, Ring: 64, In: 40, Out: 1},
		{Kind: msg.CorrBits, Ring: 64, In: 500, Out: 1},
		{Kind: msg.CorrMatMul, Ring: 64, Out: 3, In: 5, W: 2},
	} {
		id++
		req := client.Tuples(id, c.Kind, c.Ring, c.In)
		if c.Kind == msg.CorrMatMul {
			req = client.MatrixTriple(id, c.Ring, c.Out, c.In, c.W)
		}
		r := both(t, func(b int) (*client.Reply, error) { return cl[b].Get(ctx, req) })
		var sh [2]*msg.CorrShares
		for b := range r {
			if r[b].Err != nil || len(r[b].Shares) != 1 || r[b].Shares[0].Corr == nil {
				t.Fatalf("%v, site %d: %+v", c.Kind, b, r[b])
			}
			sh[b] = r[b].Shares[0].Corr
		}
		a, x, z := addShares(sh[0].A, sh[1].A, 64), addShares(sh[0].R, sh[1].R, 64), addShares(sh[0].Z, sh[1].Z, 64)
		switch c.Kind {
		case msg.CorrTriples:
			for i := range a {
				if z[i] != a[i]*x[i] {
					t.Fatalf("triple %d: c ≠ a·b", i)
				}
			}
		case msg.CorrSquares:
			for i := range a {
				if len(x) != 0 || z[i] != a[i]*a[i] {
					t.Fatalf("square %d: q ≠ a²", i)
				}
			}
		case msg.CorrBits:
			for i := range a {
				if a[i] > 1 || len(x)+len(z) != 0 {
					t.Fatalf("bit %d: %d", i, a[i])
				}
			}
		case msg.CorrMatMul:
			for i := 0; i < c.Out; i++ {
				for j := 0; j < c.W; j++ {
					var acc uint64
					for l := 0; l < c.In; l++ {
						acc += a[i*c.In+l] * x[l*c.W+j]
					}
					if z[i*c.W+j] != acc {
						t.Fatalf("matrix triple: C[%d][%d] ≠ (A·B)", i, j)
					}
				}
			}
		}
		if sh[1].A[0] == a[0] && sh[1].A[len(a)-1] == a[len(a)-1] && c.Kind != msg.CorrBits {
			t.Fatalf("%v: site 1 got the values, not shares", c.Kind)
		}
	}
	var before [2]uint64
	for b := range cl {
		st, err := cl[b].Status(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if before[b] = st.GetModule().GetNextCounter(); before[b] == 0 {
			t.Fatalf("site %d: module counter 0 after tuples were drawn", b)
		}
	}
	for _, bad := range []struct {
		c     msg.Correlation
		field string
	}{
		{msg.Correlation{Kind: msg.CorrTriples, Ring: 64, In: 0, Out: 1}, "Corr.In"},
		{msg.Correlation{Kind: msg.CorrBits, Ring: 64, In: 4, Out: 2}, "Corr.Out"},
		{msg.Correlation{Kind: msg.CorrSquares, Ring: 64, In: 4, Out: 1, Part: msg.CorrWeight}, "Corr.Part"},
		{msg.Correlation{Kind: msg.CorrMatMul, Ring: 64, Out: 2, In: 2, W: 1 << 17}, "Corr.Out/In/W"},
	} {
		id++
		r := both(t, func(b int) (*client.Reply, error) { return cl[b].Get(ctx, client.Correlation(id, bad.c)) })
		for b := range r {
			if r[b].Err == nil || !strings.Contains(r[b].Err.Error(), bad.field) {
				t.Fatalf("%+v, site %d: %v, want a refusal naming %s", bad.c, b, r[b].Err, bad.field)
			}
		}
	}
	for b := range cl {
		st, err := cl[b].Status(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if got := st.GetModule().GetNextCounter(); got != before[b] {
			t.Fatalf("site %d: refused requests moved the module counter %d → %d", b, before[b], got)
		}
	}
}
