package socket

import (
	"bytes"
	"context"
	"errors"
	"slices"
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/kord-fss/kord/fss"
	"github.com/kord-fss/kord/internal/prg"
	"github.com/kord-fss/kord/module"
	"github.com/kord-fss/kord/module/msg"
	pb "github.com/kord-fss/kord/proto/modulepb"
)

// TestSocketBulk: bulk submissions and slab collects over the socket, in
// both modes: the slabs pair, a repeated collect gives the same bytes, and
// the keys evaluate to f.
func TestSocketBulk(t *testing.T) {
	cs, _ := servedPair(t)
	ctx := context.Background()
	p := fss.Params{Type: fss.DCF, InBits: 12, OutBits: 12}
	const n = 40
	// Derived.
	var s [2]*msg.Slab
	for b := range 2 {
		r, err := cs[b].Submit(ctx, &msg.SubmitRequest{Kind: msg.SubmitBulk,
			Bulk: &msg.Bulk{Mode: msg.Derived, Type: p.Type, InBits: 12, OutBits: 12, N: n, DeriveBeta: true}})
		if err != nil {
			t.Fatal(err)
		}
		c, err := cs[b].Collect(ctx, &msg.CollectRequest{Counter: r.FirstCounter, Count: n})
		if err != nil {
			t.Fatal(err)
		}
		again, err := cs[b].Collect(ctx, &msg.CollectRequest{Counter: r.FirstCounter, Count: n})
		if err != nil || !bytes.Equal(again.Slab.Keys, c.Slab.Keys) || !slices.Equal(again.Slab.AlphaShares, c.Slab.AlphaShares) {
			t.Fatalf("repeat slab collect differs: %v", err)
		}
		s[b] = c.Slab
	}
	checkSlabPair(t, s, func(i int) (uint64, uint64) {
		return (s[0].AlphaShares[i] + s[1].AlphaShares[i]) & prg.Mask(12), (s[0].BetaShares[i] + s[1].BetaShares[i]) & prg.Mask(12)
	})
	// Bound, each tier: one frame each way.
	for _, tier := range []msg.Tier{msg.Keystream, msg.MAC, msg.BatchMAC} {
		var bulk [2]*msg.Bulk
		for b := range 2 {
			bulk[b] = &msg.Bulk{Mode: msg.Bound, Type: p.Type, InBits: 12, OutBits: 12, N: n,
				AlphaShares: make([]uint64, n), BetaShares: make([]uint64, n)}
			for i := range n {
				bulk[b].AlphaShares[i], bulk[b].BetaShares[i] = uint64(i*(b+3))&0xfff, uint64(i+b)&0xfff
			}
		}
		var subs [2]*msg.SubmitResponse
		for b := range 2 {
			var err error
			if subs[b], err = cs[b].Submit(ctx, &msg.SubmitRequest{Kind: msg.SubmitBulk, Tier: tier, Bulk: bulk[b]}); err != nil {
				t.Fatal(err)
			}
			if len(subs[b].Frames) != 1 {
				t.Fatalf("%v: %d frames", tier, len(subs[b].Frames))
			}
		}
		for b := range 2 {
			r, err := cs[b].Submit(ctx, &msg.SubmitRequest{Kind: msg.SubmitPeerFrame, Frame: subs[1-b].Frames[0]})
			if err != nil || !r.Accepted {
				t.Fatalf("%v: bulk frame: %v %+v", tier, err, r)
			}
		}
		for b := range 2 {
			c, err := cs[b].Collect(ctx, &msg.CollectRequest{Counter: subs[b].FirstCounter, Count: n})
			if err != nil {
				t.Fatal(err)
			}
			s[b] = c.Slab
		}
		checkSlabPair(t, s, func(i int) (uint64, uint64) {
			return (bulk[0].AlphaShares[i] + bulk[1].AlphaShares[i]) & 0xfff, (bulk[0].BetaShares[i] + bulk[1].BetaShares[i]) & 0xfff
		})
	}
	// Bad bulk requests: ErrBadRequest naming the field, no counter moved.
	before, _ := cs[0].Poll(ctx, nil)
	for _, b := range []*msg.Bulk{
		{Mode: msg.Derived, Type: p.Type, InBits: 12, OutBits: 12, N: 0},
		{Mode: msg.Derived, Type: p.Type, InBits: 12, OutBits: 12, N: msg.MaxBulk + 1},
		{Mode: msg.Derived, Type: p.Type, InBits: 12, OutBits: 12, N: 1 << 30},
		{Mode: msg.Bound, Type: p.Type, InBits: 12, OutBits: 12, N: 2, AlphaShares: []uint64{1}, BetaShares: []uint64{1, 2}},
		{Mode: msg.Bound, Type: 7, InBits: 12, OutBits: 12, N: 1, AlphaShares: []uint64{1}, BetaShares: []uint64{1}},
		nil,
	} {
		_, err := cs[0].Submit(ctx, &msg.SubmitRequest{Kind: msg.SubmitBulk, Tier: msg.MAC, Bulk: b})
		if !errors.Is(err, module.ErrBadRequest) || !bytes.Contains([]byte(err.Error()), []byte("Bulk")) {
			t.Errorf("bulk %+v: %v", b, err)
		}
	}
	if _, err := cs[0].Collect(ctx, &msg.CollectRequest{Counter: 1 << 40, Count: 3}); !errors.Is(err, module.ErrBadRequest) {
		t.Errorf("collect of no bulk: %v", err)
	}
	after, _ := cs[0].Poll(ctx, nil)
	if after.NextCounter != before.NextCounter || after.PeerFloor != before.PeerFloor || after.Generated != before.Generated {
		t.Fatalf("bad bulk input moved counters: %+v → %+v", before, after)
	}
}

func checkSlabPair(t *testing.T, s [2]*msg.Slab, point func(int) (uint64, uint64)) {
	t.Helper()
	if !bytes.Equal(s[0].PairTags, s[1].PairTags) {
		t.Fatal("slabs do not pair")
	}
	for i := range s[0].N {
		alpha, beta := point(i)
		k0, err0 := fss.ParseKey(s[0].Key(i))
		k1, err1 := fss.ParseKey(s[1].Key(i))
		if err0 != nil || err1 != nil {
			t.Fatal(err0, err1)
		}
		if err := fss.CheckPair(k0, k1, alpha, beta, alpha, (alpha+1)&0xfff, 0); err != nil {
			t.Fatalf("key %d: %v", i, err)
		}
	}
}

// FuzzSlabFromPB feeds arbitrary bytes as a collect answer: the client's
// slab parser must refuse what does not hold together, never panic, and
// what it accepts passes Slab.Check.
func FuzzSlabFromPB(f *testing.F) {
	good, _ := proto.Marshal(&pb.CollectResponse{Slab: &pb.Slab{First: 3, N: 1, Mode: 2, Type: 1, InBits: 8, OutBits: 8,
		Stride: uint32(fss.Params{Type: fss.DPF, InBits: 8, OutBits: 8}.KeySize()),
		Keys:   make([]byte, fss.Params{Type: fss.DPF, InBits: 8, OutBits: 8}.KeySize()), PairTags: make([]byte, 16),
		AlphaShares: []uint64{1}, BetaShares: []uint64{2}}})
	f.Add(good)
	f.Add([]byte{0x42, 0x02, 0x10, 0x01})
	f.Fuzz(func(t *testing.T, b []byte) {
		var r pb.CollectResponse
		if proto.Unmarshal(b, &r) != nil {
			return
		}
		c, err := collectRespFromPB(&r)
		if err != nil || c.Slab == nil {
			return
		}
		if err := c.Slab.Check(); err != nil {
			t.Fatalf("accepted a slab that fails Check: %v", err)
		}
		_ = c.Slab.Key(c.Slab.N - 1)
		_ = c.Slab.PairTag(c.Slab.N - 1)
	})
}

// TestSocketBulkDo: a bulk submission and its slab collect in one round
// trip (Client.Do), and a refused slab collect at the end of a batch.
func TestSocketBulkDo(t *testing.T) {
	cs, _ := servedPair(t)
	ctx := context.Background()
	for b := range 2 {
		st, err := cs[b].Poll(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		res, err := cs[b].Do(ctx, []Call{
			{Submit: &msg.SubmitRequest{Kind: msg.SubmitBulk, Bulk: &msg.Bulk{Mode: msg.Derived, Type: fss.DPF, InBits: 10, OutBits: 10, N: 5, DeriveBeta: true}}},
			{Collect: &msg.CollectRequest{Counter: st.NextCounter, Count: 5}},
		}, true)
		if err != nil || res[0].Err != nil || res[1].Err != nil {
			t.Fatalf("Do: %v %v %v", err, res[0].Err, res[1].Err)
		}
		if s := res[1].Collect.Slab; s == nil || s.N != 5 || s.First != st.NextCounter || len(s.AlphaShares) != 5 {
			t.Fatalf("slab %+v", s)
		}
		res, err = cs[b].Do(ctx, []Call{{Poll: true}, {Collect: &msg.CollectRequest{Counter: st.NextCounter, Count: 4}}}, false)
		if err != nil || res[0].Err != nil || !errors.Is(res[1].Err, module.ErrBadRequest) {
			t.Fatalf("partial slab collect: %v %v %v", err, res[0].Err, res[1].Err)
		}
	}
}
