package host

import (
	"context"
	"errors"
	"math/rand/v2"
	"testing"

	"github.com/kord-fss/kord/fss"
	"github.com/kord-fss/kord/internal/prg"
	"github.com/kord-fss/kord/module/msg"
)

func newPair(t *testing.T, inFlight int) *LocalPair {
	t.Helper()
	lp, err := NewLocalPair(context.Background(), LocalOptions{InFlight: inFlight})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(lp.Close)
	return lp
}

// checkPair verifies a key pair shares f_{α,β} at α, α±1 and random points.
func checkPair(t *testing.T, rng *rand.Rand, k0, k1 *fss.Key, alpha, beta uint64) {
	t.Helper()
	p := k0.Params()
	m := prg.Mask(p.InBits)
	if err := fss.CheckPair(k0, k1, alpha, beta, alpha, (alpha+1)&m, (alpha-1)&m, rng.Uint64()&m, rng.Uint64()&m); err != nil {
		t.Fatal(err)
	}
}

var widths = []int{1, 8, 16, 32, 64}

func TestBoundAllTiersWidthsTypes(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	lp := newPair(t, 8)
	for _, tier := range []msg.Tier{msg.Keystream, msg.MAC, msg.BatchMAC} {
		for _, typ := range []fss.Type{fss.DPF, fss.DCF} {
			for _, l := range widths {
				p := fss.Params{Type: typ, InBits: l, OutBits: l}
				const n = 5
				var as, bs [2][]uint64
				alphas, betas := make([]uint64, n), make([]uint64, n)
				for i := 0; i < n; i++ {
					alphas[i], betas[i] = rng.Uint64()&prg.Mask(l), rng.Uint64()&prg.Mask(l)
					a0, b0 := rng.Uint64()&prg.Mask(l), rng.Uint64()&prg.Mask(l)
					as[0], as[1] = append(as[0], a0), append(as[1], (alphas[i]-a0)&prg.Mask(l))
					bs[0], bs[1] = append(bs[0], b0), append(bs[1], (betas[i]-b0)&prg.Mask(l))
				}
				keys, err := lp.BoundKeys(context.Background(), tier, p, as, bs)
				if err != nil {
					t.Fatalf("%v %v: %v", tier, p, err)
				}
				for i := 0; i < n; i++ {
					if keys[0][i].Party() != 0 || keys[1][i].Party() != 1 {
						t.Fatal("wrong parties")
					}
					checkPair(t, rng, keys[0][i], keys[1][i], alphas[i], betas[i])
				}
			}
		}
	}
}

func TestDerivedAndConsume(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	lp := newPair(t, 0)
	ctx := context.Background()
	for _, typ := range []fss.Type{fss.DPF, fss.DCF} {
		for _, l := range widths {
			p := fss.Params{Type: typ, InBits: l, OutBits: l}
			for _, deriveBeta := range []bool{false, true} {
				beta := uint64(0)
				if !deriveBeta {
					beta = 1
				}
				out, err := lp.DerivedKeys(ctx, p, 3, beta, deriveBeta)
				if err != nil {
					t.Fatal(err)
				}
				for i := range out[0] {
					a := (out[0][i].AlphaShare + out[1][i].AlphaShare) & prg.Mask(l)
					b := (out[0][i].BetaShare + out[1][i].BetaShare) & prg.Mask(l)
					if !deriveBeta && b != beta {
						t.Fatalf("public β: shares sum to %d", b)
					}
					checkPair(t, rng, out[0][i].Key, out[1][i].Key, a, b)
				}
			}
			// consume: the key never leaves; evaluation shares come back.
			alpha, beta := rng.Uint64()&prg.Mask(l), rng.Uint64()&prg.Mask(l)
			a0, b0 := rng.Uint64()&prg.Mask(l), rng.Uint64()&prg.Mask(l)
			pts := []uint64{alpha, (alpha + 1) & prg.Mask(l), rng.Uint64() & prg.Mask(l)}
			var reqs [2][]Request
			sh := [2][2]uint64{{a0, b0}, {(alpha - a0) & prg.Mask(l), (beta - b0) & prg.Mask(l)}}
			for b := 0; b < 2; b++ {
				reqs[b] = []Request{{Share: msg.Share{Mode: msg.Consume, Type: typ, InBits: l, OutBits: l,
					AlphaShare: sh[b][0], BetaShare: sh[b][1]}, Points: pts}}
			}
			res, err := lp.Generate(ctx, msg.MAC, reqs)
			if err != nil {
				t.Fatal(err)
			}
			if res[0][0].Key != nil || res[1][0].Key != nil {
				t.Fatal("consume mode returned a key")
			}
			for j, x := range pts {
				if got := (res[0][0].Evals[j] + res[1][0].Evals[j]) & prg.Mask(l); got != fss.Truth(p, alpha, beta, x) {
					t.Fatalf("consume %v x=%d: %d", p, x, got)
				}
			}
		}
	}
}

// TestWireBytes checks exact per-tier accounting of what crosses the link.
func TestWireBytes(t *testing.T) {
	ctx := context.Background()
	const n = 64
	cases := []struct {
		tier     msg.Tier
		mode     msg.Mode
		perBatch func(sz int) int // bytes per party for n keys of payload sz
	}{
		{msg.Keystream, msg.Bound, func(sz int) int { return n * sz }},
		{msg.MAC, msg.Bound, func(sz int) int { return n * (sz + 36) }},
		{msg.BatchMAC, msg.Bound, func(sz int) int { return n*sz + 36*(n/16) }},
		{msg.MAC, msg.Derived, func(int) int { return 0 }},
	}
	for _, c := range cases {
		for _, l := range []int{8, 16, 32, 64} {
			lp := newPair(t, 16)
			var reqs [2][]Request
			for b := 0; b < 2; b++ {
				for i := 0; i < n; i++ {
					s := msg.Share{Mode: c.mode, Type: fss.DPF, InBits: l, OutBits: l}
					reqs[b] = append(reqs[b], Request{Share: s})
				}
			}
			if _, err := lp.Generate(ctx, c.tier, reqs); err != nil {
				t.Fatal(err)
			}
			want := uint64(c.perBatch(2 * l / 8))
			for b := 0; b < 2; b++ {
				if got := lp.SentBytes(b); got != want {
					t.Errorf("%v %v ℓ=%d party %d: sent %d bytes, want %d", c.tier, c.mode, l, b, got, want)
				}
			}
			if l == 16 && c.tier == msg.Keystream && lp.SentBytes(0)/n != 4 {
				t.Error("DPF-16 keystream is not 4 bytes per key")
			}
			if l == 16 && c.tier == msg.MAC && c.mode == msg.Bound && lp.SentBytes(0)/n != 40 {
				t.Error("DPF-16 mac is not 40 bytes per key")
			}
			// One batch message and its reply per batch of 16, in either
			// mode (derived batches carry no frame, but their digests).
			if rounds := lp.Rounds(); rounds != n/16 {
				t.Errorf("%v %v: %d rounds for %d batches", c.tier, c.mode, rounds, n/16)
			}
		}
	}
}

// TestMismatchedRequestsRejected: hosts that disagree on a key's shape get
// a rejection (mac tier) and the batch is abandoned on both sides.
func TestMismatchedRequestsRejected(t *testing.T) {
	lp := newPair(t, 4)
	ctx := context.Background()
	reqs := [2][]Request{
		{{Share: msg.Share{Mode: msg.Bound, Type: fss.DPF, InBits: 16, OutBits: 16}}},
		{{Share: msg.Share{Mode: msg.Bound, Type: fss.DCF, InBits: 16, OutBits: 16}}},
	}
	_, err := lp.Generate(ctx, msg.MAC, reqs)
	if !errors.Is(err, ErrRejected) {
		t.Fatalf("want ErrRejected, got %v", err)
	}
	// Both recover: the next matching request works.
	reqs[1][0].Type = fss.DPF
	if _, err := lp.Generate(ctx, msg.MAC, reqs); err != nil {
		t.Fatal(err)
	}
}
