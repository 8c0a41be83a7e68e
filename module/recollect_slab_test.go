package module_test

import (
	"bytes"
	"context"
	"testing"

	"github.com/kord-fss/kord/fss"
	"github.com/kord-fss/kord/module"
	"github.com/kord-fss/kord/module/moduletest"
	"github.com/kord-fss/kord/module/msg"
)

// boundBulks submits a bound bulk of n keys at both modules (party b's
// shares differ), exchanges the frames and returns the requests and the
// first counter.
func boundBulks(t *testing.T, d [2]*module.Durable, n int) ([2]*msg.Bulk, uint64) {
	t.Helper()
	ctx := context.Background()
	var bs [2]*msg.Bulk
	var fr [2][]byte
	var first uint64
	for b := range 2 {
		bs[b] = &msg.Bulk{Mode: msg.Bound, Type: fss.DPF, InBits: 16, OutBits: 8, N: n}
		for i := range n {
			bs[b].AlphaShares = append(bs[b].AlphaShares, uint64(1000*b+13*i+5))
			bs[b].BetaShares = append(bs[b].BetaShares, uint64(b+3*i+1)&0xff)
		}
		// The module keeps its own copy: the caller's may change after.
		sub := *bs[b]
		sub.AlphaShares, sub.BetaShares = append([]uint64(nil), bs[b].AlphaShares...), append([]uint64(nil), bs[b].BetaShares...)
		r, err := d[b].Submit(ctx, &msg.SubmitRequest{Kind: msg.SubmitBulk, Tier: msg.MAC, Bulk: &sub})
		if err != nil {
			t.Fatal(err)
		}
		clear(sub.AlphaShares)
		fr[b], first = r.Frames[0], r.FirstCounter
	}
	for b := range 2 {
		if r, err := d[b].Submit(ctx, &msg.SubmitRequest{Kind: msg.SubmitPeerFrame, Frame: fr[1-b]}); err != nil || !r.Accepted {
			t.Fatalf("party %d: bulk frame: %v %+v", b, err, r)
		}
	}
	return bs, first
}

// cloneBulk copies b and its lists.
func cloneBulk(b *msg.Bulk) *msg.Bulk {
	c := *b
	c.AlphaShares = append([]uint64(nil), b.AlphaShares...)
	c.BetaShares = append([]uint64(nil), b.BetaShares...)
	c.Betas = append([]uint64(nil), b.Betas...)
	return &c
}

// TestRecollectSlabOnlyForItsRequest (issue 33): a durable module hands a
// bulk's slab out again only for the bulk request it was generated for —
// shape, N, public payload and (bound) the own shares of the keys the
// caller names — checked from what the module committed; any other
// expectation is refused whole, emits nothing and is counted.
func TestRecollectSlabOnlyForItsRequest(t *testing.T) {
	d := moduletest.DurablePair(t, 0)
	ctx := context.Background()
	const n = 4
	bs, first := boundBulks(t, d, n)
	der := &msg.Bulk{Mode: msg.Derived, Type: fss.DCF, InBits: 12, OutBits: 6, N: 3, Beta: 9}
	var dfirst uint64
	for b := range 2 {
		r, err := d[b].Submit(ctx, &msg.SubmitRequest{Kind: msg.SubmitBulk, Bulk: cloneBulk(der)})
		if err != nil {
			t.Fatal(err)
		}
		dfirst = r.FirstCounter
	}
	// The first collect, as the party's serving does (no expectation).
	keys := map[uint64][]byte{}
	for _, c := range []struct {
		at uint64
		n  int
	}{{first, n}, {dfirst, der.N}} {
		r, err := d[0].Collect(ctx, &msg.CollectRequest{Counter: c.at, Count: c.n})
		if err != nil || r.Slab == nil {
			t.Fatalf("slab collect at %d: %v", c.at, err)
		}
		keys[c.at] = bytes.Clone(r.Slab.Keys)
	}
	sub := func(b *msg.Bulk, from, to int) *msg.Bulk {
		c := cloneBulk(b)
		c.AlphaShares, c.BetaShares = c.AlphaShares[from:to], c.BetaShares[from:to]
		return c
	}
	// The true requests: the same slab, whole or naming some of its keys.
	for _, c := range []struct {
		name  string
		at    uint64
		count int
		ex    *msg.Bulk
		exAt  int
	}{
		{"the whole bound bulk", first, n, cloneBulk(bs[0]), 0},
		{"keys 1..2 of it", first, n, sub(bs[0], 1, 3), 1},
		{"its last key", first, n, sub(bs[0], 3, 4), 3},
		{"the derived bulk", dfirst, der.N, cloneBulk(der), 0},
	} {
		r, err := d[0].Collect(ctx, &msg.CollectRequest{Counter: c.at, Count: c.count, Expect: c.ex, ExpectAt: c.exAt})
		if err != nil || r.Slab == nil || !bytes.Equal(r.Slab.Keys, keys[c.at]) {
			t.Fatalf("%s: re-collect for the true request: %v", c.name, err)
		}
		if err := d[0].CheckSlab(ctx, c.at, c.count, c.ex, c.exAt); err != nil {
			t.Fatalf("%s: CheckSlab: %v", c.name, err)
		}
	}
	cases := map[string]func() (*msg.Bulk, int, uint64, int){
		"other alpha share": func() (*msg.Bulk, int, uint64, int) {
			x := cloneBulk(bs[0])
			x.AlphaShares[2]++
			return x, 0, first, n
		},
		"other beta share": func() (*msg.Bulk, int, uint64, int) {
			x := sub(bs[0], 1, 2)
			x.BetaShares[0] ^= 1
			return x, 1, first, n
		},
		"the right shares at another key": func() (*msg.Bulk, int, uint64, int) { return sub(bs[0], 0, 2), 1, first, n },
		"the peer's request":              func() (*msg.Bulk, int, uint64, int) { return cloneBulk(bs[1]), 0, first, n },
		"other shape": func() (*msg.Bulk, int, uint64, int) {
			x := cloneBulk(bs[0])
			x.InBits++
			return x, 0, first, n
		},
		"other key type": func() (*msg.Bulk, int, uint64, int) {
			x := cloneBulk(bs[0])
			x.Type = fss.DCF
			return x, 0, first, n
		},
		"other count": func() (*msg.Bulk, int, uint64, int) {
			x := sub(bs[0], 0, 3)
			x.N = 3
			return x, 0, first, n
		},
		"no own shares named": func() (*msg.Bulk, int, uint64, int) { return sub(bs[0], 0, 0), 0, first, n },
		"shares past the bulk": func() (*msg.Bulk, int, uint64, int) {
			return sub(bs[0], 2, 4), 3, first, n
		},
		"negative key index": func() (*msg.Bulk, int, uint64, int) { return sub(bs[0], 0, 1), -1, first, n },
		"derived: other beta": func() (*msg.Bulk, int, uint64, int) {
			x := cloneBulk(der)
			x.Beta++
			return x, 0, dfirst, der.N
		},
		"derived: drawn beta": func() (*msg.Bulk, int, uint64, int) {
			x := cloneBulk(der)
			x.Beta, x.DeriveBeta = 0, true
			return x, 0, dfirst, der.N
		},
		"derived: other count": func() (*msg.Bulk, int, uint64, int) {
			x := cloneBulk(der)
			x.N++
			return x, 0, dfirst, der.N
		},
		"derived: as bound": func() (*msg.Bulk, int, uint64, int) {
			x := cloneBulk(der)
			x.Mode = msg.Bound
			return x, 0, dfirst, der.N
		},
		"the bound request for the derived bulk": func() (*msg.Bulk, int, uint64, int) { return cloneBulk(bs[0]), 0, dfirst, der.N },
	}
	rejects := func() uint64 {
		p, err := d[0].Poll(ctx, &msg.PollRequest{})
		if err != nil {
			t.Fatal(err)
		}
		return p.Rejects[module.RejectRecollect]
	}
	for name, c := range cases {
		ex, exAt, at, count := c()
		before := rejects()
		if r, err := d[0].Collect(ctx, &msg.CollectRequest{Counter: at, Count: count, Expect: ex, ExpectAt: exAt}); err == nil || r != nil {
			t.Errorf("%s: re-collect handed out (%v)", name, err)
		}
		if err := d[0].CheckSlab(ctx, at, count, ex, exAt); err == nil {
			t.Errorf("%s: CheckSlab passed", name)
		}
		if got := rejects(); got != before+2 {
			t.Errorf("%s: %d refused re-collects counted, want 2", name, got-before)
		}
	}
	// Refusals moved nothing: the true request still gets the slab.
	if r, err := d[0].Collect(ctx, &msg.CollectRequest{Counter: first, Count: n, Expect: cloneBulk(bs[0])}); err != nil || !bytes.Equal(r.Slab.Keys, keys[first]) {
		t.Fatalf("after the refusals: %v", err)
	}
}

// TestCollectSlabExpectFirstTime: an expectation also holds for a slab's
// first collect (the slab still waiting in the module): refused for
// another request, leaving the slab there for the true one.
func TestCollectSlabExpectFirstTime(t *testing.T) {
	d := moduletest.DurablePair(t, 0)
	ctx := context.Background()
	bs, first := boundBulks(t, d, 3)
	x := cloneBulk(bs[1])
	if _, err := d[1].Collect(ctx, &msg.CollectRequest{Counter: first, Count: 3, Expect: bs[0]}); err == nil {
		t.Fatal("party 1 handed out its slab for party 0's request")
	}
	if err := d[1].CheckSlab(ctx, first, 3, bs[0], 0); err == nil {
		t.Fatal("CheckSlab passed another request for a waiting slab")
	}
	if err := d[1].CheckSlab(ctx, first, 3, x, 0); err != nil {
		t.Fatalf("CheckSlab of a waiting slab for its request: %v", err)
	}
	if r, err := d[1].Collect(ctx, &msg.CollectRequest{Counter: first, Count: 3, Expect: x}); err != nil || r.Slab == nil || r.Slab.N != 3 {
		t.Fatalf("first collect for the true request: %v", err)
	}
}
