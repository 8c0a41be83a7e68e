package socket

import (
	"bytes"
	"context"
	"testing"

	"github.com/kord-fss/kord/fss"
	"github.com/kord-fss/kord/fss/llama"
	"github.com/kord-fss/kord/internal/prg"
	"github.com/kord-fss/kord/module/msg"
)

// TestPackSharesProfile: a packed share carries its profile (the type
// byte's high nibble) and a kord-v1 share packs to the bytes it always did.
func TestPackSharesProfile(t *testing.T) {
	in := []msg.Share{
		{Mode: msg.Bound, Type: fss.DCF, InBits: 16, OutBits: 8, AlphaShare: 3, BetaShare: 4},
		{Mode: msg.Derived, Profile: msg.Llama, Type: fss.DCF, InBits: 32, OutBits: 32, Beta: 1},
	}
	b := PackShares(nil, in)
	if b[1] != byte(fss.DCF) || b[shareRecord+1] != 0x12 {
		t.Fatalf("type bytes %#x %#x, want %#x and 0x12", b[1], b[shareRecord+1], byte(fss.DCF))
	}
	out, err := UnpackShares(b)
	if err != nil {
		t.Fatal(err)
	}
	for i := range in {
		if out[i] != in[i] {
			t.Fatalf("share %d: %+v, want %+v", i, out[i], in[i])
		}
		if got := ShareFromPB(ShareToPB(in[i])); got != in[i] {
			t.Fatalf("share %d through pb: %+v", i, got)
		}
	}
}

// TestSocketLlama: llama-profile keys over real module sockets, per key
// (packed shares, bound) and as a derived bulk (a slab of LLAMA's stride):
// each pair evaluates to β·[x < α].
func TestSocketLlama(t *testing.T) {
	cs, _ := servedPair(t)
	ctx := context.Background()
	const l, n = 24, 16
	lp := llama.Params{InBits: l, OutBits: n, Group: 1}
	alpha, beta := uint64(0x123456), uint64(0xbeef)
	var frames [2][]byte
	var first uint64
	for b := range 2 {
		s := msg.Share{Mode: msg.Bound, Profile: msg.Llama, Type: fss.DCF, InBits: l, OutBits: n, AlphaShare: 77, BetaShare: 5}
		if b == 1 {
			s.AlphaShare, s.BetaShare = (alpha-77)&prg.Mask(l), (beta-5)&prg.Mask(n)
		}
		r, err := cs[b].Submit(ctx, &msg.SubmitRequest{Kind: msg.SubmitShares, Tier: msg.BatchMAC, Shares: []msg.Share{s}})
		if err != nil {
			t.Fatal(err)
		}
		frames[b], first = r.Frames[0], r.FirstCounter
	}
	var keys [2][]byte
	for b := range 2 {
		if r, err := cs[b].Submit(ctx, &msg.SubmitRequest{Kind: msg.SubmitPeerFrame, Frame: frames[1-b]}); err != nil || !r.Accepted {
			t.Fatalf("party %d: %v %+v", b, err, r)
		}
		c, err := cs[b].Collect(ctx, &msg.CollectRequest{Counter: first})
		if err != nil {
			t.Fatal(err)
		}
		keys[b] = c.Key
	}
	if err := llama.CheckPair(lp, keys[0], keys[1], alpha, []uint64{beta}); err != nil {
		t.Fatal(err)
	}
	const N = 30
	var slabs [2]*msg.Slab
	for b := range 2 {
		r, err := cs[b].Submit(ctx, &msg.SubmitRequest{Kind: msg.SubmitBulk,
			Bulk: &msg.Bulk{Mode: msg.Derived, Profile: msg.Llama, Type: fss.DCF, InBits: l, OutBits: n, N: N, Beta: 1}})
		if err != nil {
			t.Fatal(err)
		}
		c, err := cs[b].Collect(ctx, &msg.CollectRequest{Counter: r.FirstCounter, Count: N})
		if err != nil {
			t.Fatal(err)
		}
		// The durable module answers a repeated range collect with the
		// same slab, its profile included.
		again, err := cs[b].Collect(ctx, &msg.CollectRequest{Counter: r.FirstCounter, Count: N})
		if err != nil || again.Slab.Profile != msg.Llama || !bytes.Equal(again.Slab.Keys, c.Slab.Keys) {
			t.Fatalf("party %d: repeated llama slab collect differs: %v", b, err)
		}
		slabs[b] = c.Slab
	}
	if slabs[0].Profile != msg.Llama || slabs[0].Stride != lp.KeySize() {
		t.Fatalf("slab profile %v stride %d, want llama %d", slabs[0].Profile, slabs[0].Stride, lp.KeySize())
	}
	for i := range N {
		a := (slabs[0].AlphaShares[i] + slabs[1].AlphaShares[i]) & prg.Mask(l)
		if err := llama.CheckPair(lp, slabs[0].Key(i), slabs[1].Key(i), a, []uint64{1}); err != nil {
			t.Fatalf("key %d: %v", i, err)
		}
	}
}
