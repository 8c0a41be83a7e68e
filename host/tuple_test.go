package host

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/kord-fss/kord/module/msg"
	pb "github.com/kord-fss/kord/proto/kordpb"
)

// shapeTap rewrites the correlation shape of the batch items party 0
// sends while on.
type shapeTap struct {
	mu    sync.Mutex
	on    bool
	apply func(kind, in *uint32)
	n     int
}

func (s *shapeTap) tap(m *pb.PeerMsg) {
	s.mu.Lock()
	defer s.mu.Unlock()
	b := m.GetBatch()
	if b == nil || !s.on {
		return
	}
	for _, it := range b.GetItems() {
		if c := it.GetCorr(); c != nil {
			s.apply(&c.Kind, &c.In)
			s.n++
		}
	}
	if p := b.GetPackedItems(); p != nil {
		for _, c := range p.GetCorrs() {
			s.apply(&c.Kind, &c.In)
			s.n++
		}
	}
}

// TestTupleShapeLie: party 0 tells party 1 another tuple kind or count
// than both applications asked for. Party 1 refuses the batch: no shares
// are handed out at either site; after a lied kind the pair goes on
// serving correct tuples.
func TestTupleShapeLie(t *testing.T) {
	for _, lie := range []struct {
		name    string
		apply   func(kind, in *uint32)
		recover bool
	}{
		{"kind", func(k, _ *uint32) { *k = uint32(msg.CorrSquares) }, true},
		{"kind bits", func(k, _ *uint32) { *k = uint32(msg.CorrBits) }, true},
		// A lied count (in+1) leaves party 1 waiting for a partner
		// request until the caller's deadline, as for a matrix-vector
		// correlation on main: no shares either, but slow to test here.
	} {
		t.Run(lie.name, func(t *testing.T) {
			tap := &shapeTap{apply: lie.apply}
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			lp, err := NewLocalPair(ctx, LocalOptions{tap: tap.tap})
			if err != nil {
				t.Fatal(err)
			}
			defer lp.Close()
			c := msg.Correlation{Kind: msg.CorrTriples, Ring: 64, In: 40, Out: 1}
			tap.mu.Lock()
			tap.on = true
			tap.mu.Unlock()
			sh, err := lp.Correlation(ctx, c)
			if err == nil || sh[0] != nil || sh[1] != nil {
				t.Fatalf("a lied shape delivered shares (err %v)", err)
			}
			tap.mu.Lock()
			tap.on = false
			n := tap.n
			tap.mu.Unlock()
			if n == 0 {
				t.Fatal("the tap altered no correlation item")
			}
			if !lie.recover {
				return
			}
			sh, err = lp.Correlation(ctx, c)
			if err != nil {
				t.Fatalf("after the lie: %v", err)
			}
			for i := range sh[0].A {
				a, b, z := sh[0].A[i]+sh[1].A[i], sh[0].R[i]+sh[1].R[i], sh[0].Z[i]+sh[1].Z[i]
				if z != a*b {
					t.Fatalf("triple %d after the lie: c ≠ a·b", i)
				}
			}
		})
	}
}
