package socket

import (
	"context"
	"errors"
	"testing"

	"github.com/kord-fss/kord/module"
	"github.com/kord-fss/kord/module/msg"
)

// TestSlabCollectExpectOverSocket (issue 33): a slab collect that carries
// the bulk request it answers (CollectRequest.Expect) is checked by the
// module on every server path — the memfd one (party 0 here), the pinned
// one (party 1) and a plain Do — and refused whole, naming why, for
// another request.
func TestSlabCollectExpectOverSocket(t *testing.T) {
	cs, rec := servedPairFDs(t)
	ctx := context.Background()
	const n = 8
	first := derivedBulk(t, cs, n)
	truth := &msg.Bulk{Mode: msg.Derived, Type: 1, InBits: 12, OutBits: 12, N: n, DeriveBeta: true}
	other := *truth
	other.InBits = 13
	for b := range 2 {
		// Another request first: refused, the slab left for the true one.
		res, err := cs[b].DoMapped(ctx, []Call{{Collect: &msg.CollectRequest{Counter: first, Count: n, Expect: &other}}}, true)
		if err != nil || !errors.Is(res[0].Err, module.ErrBadRequest) {
			t.Fatalf("party %d: a slab collect for another request: %v %v, want refused", b, err, res[0].Err)
		}
		for k := range 2 { // the first collect, then a re-collect
			res, err := cs[b].DoMapped(ctx, []Call{{Collect: &msg.CollectRequest{Counter: first, Count: n, Expect: truth}}}, true)
			if err != nil || res[0].Err != nil || res[0].Collect.Slab == nil || res[0].Collect.Slab.N != n {
				t.Fatalf("party %d, collect %d for the true request: %v", b, k, errors.Join(err, res[0].Err))
			}
			res[0].Buf.Release()
		}
		res, err = cs[b].Do(ctx, []Call{{Poll: true}, {Collect: &msg.CollectRequest{Counter: first, Count: n, Expect: &other}}}, true)
		if err != nil || !errors.Is(res[1].Err, module.ErrBadRequest) {
			t.Fatalf("party %d: a re-collect for another request: %v %v, want refused", b, err, res[1].Err)
		}
	}
	if len(rec.made) != 1 {
		t.Fatalf("party 0 made %d memfds, want 1 (the true request's)", len(rec.made))
	}
}
