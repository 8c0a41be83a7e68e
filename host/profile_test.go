package host

import (
	"context"
	"math/rand/v2"
	"testing"

	"github.com/kord-fss/kord/fss"
	"github.com/kord-fss/kord/fss/llama"
	"github.com/kord-fss/kord/internal/prg"
	"github.com/kord-fss/kord/module/msg"
)

// TestLocalPairLlama: llama-profile keys from an in-process pair through
// Generate (bound per key, derived as one bulk, and a batch mixing both
// profiles, which is not bulkable) and GenerateSlabs: every pair evaluates
// to β·[x < α] with LLAMA's own evaluation.
func TestLocalPairLlama(t *testing.T) {
	rng := rand.New(rand.NewPCG(31, 32))
	ctx := context.Background()
	lp := newPair(t, 16)
	const l, n, count = 32, 32, 20
	lpar := llama.Params{InBits: l, OutBits: n, Group: 1}
	var reqs [2][]Request
	alphas, betas := make([]uint64, count), make([]uint64, count)
	for i := range count {
		alphas[i], betas[i] = rng.Uint64()&prg.Mask(l), rng.Uint64()&prg.Mask(n)
		a0, b0 := rng.Uint64()&prg.Mask(l), rng.Uint64()&prg.Mask(n)
		s := msg.Share{Mode: msg.Bound, Profile: msg.Llama, Type: fss.DCF, InBits: l, OutBits: n, AlphaShare: a0, BetaShare: b0}
		if i%5 == 4 {
			s.Profile = msg.KordV1 // a mixed batch goes per key
		}
		reqs[0] = append(reqs[0], Request{Share: s})
		s.AlphaShare, s.BetaShare = (alphas[i]-a0)&prg.Mask(l), (betas[i]-b0)&prg.Mask(n)
		reqs[1] = append(reqs[1], Request{Share: s})
	}
	res, err := lp.Generate(ctx, msg.MAC, reqs)
	if err != nil {
		t.Fatal(err)
	}
	for i := range count {
		if reqs[0][i].Profile == msg.KordV1 {
			if res[0][i].Key == nil || res[0][i].Raw != nil {
				t.Fatal("a kord-v1 result without its parsed key")
			}
			checkPair(t, rng, res[0][i].Key, res[1][i].Key, alphas[i], betas[i])
			continue
		}
		if res[0][i].Key != nil {
			t.Fatal("a llama result carries a kord-v1 key")
		}
		if err := llama.CheckPair(lpar, res[0][i].Raw, res[1][i].Raw, alphas[i], []uint64{betas[i]}); err != nil {
			t.Fatalf("request %d: %v", i, err)
		}
	}
	// Derived, bulkable: one bulk per batch.
	var dreqs [2][]Request
	for range count {
		s := msg.Share{Mode: msg.Derived, Profile: msg.Llama, Type: fss.DCF, InBits: l, OutBits: n, Beta: 1}
		dreqs[0], dreqs[1] = append(dreqs[0], Request{Share: s}), append(dreqs[1], Request{Share: s})
	}
	if res, err = lp.Generate(ctx, 0, dreqs); err != nil {
		t.Fatal(err)
	}
	for i := range count {
		a := (res[0][i].AlphaShare + res[1][i].AlphaShare) & prg.Mask(l)
		if err := llama.CheckPair(lpar, res[0][i].Raw, res[1][i].Raw, a, []uint64{1}); err != nil {
			t.Fatalf("derived %d: %v", i, err)
		}
	}
	b := &msg.Bulk{Mode: msg.Derived, Profile: msg.Llama, Type: fss.DCF, InBits: l, OutBits: n, N: 50, Beta: 3}
	slabs, err := lp.GenerateSlabs(ctx, 0, [2]*msg.Bulk{b, b})
	if err != nil {
		t.Fatal(err)
	}
	defer lp.Release(slabs)
	if slabs[0].Profile != msg.Llama || slabs[0].Stride != lpar.KeySize() {
		t.Fatalf("slab profile %v stride %d", slabs[0].Profile, slabs[0].Stride)
	}
	for i := range b.N {
		a := (slabs[0].AlphaShares[i] + slabs[1].AlphaShares[i]) & prg.Mask(l)
		if err := llama.CheckPair(lpar, slabs[0].Key(i), slabs[1].Key(i), a, []uint64{3}); err != nil {
			t.Fatalf("slab key %d: %v", i, err)
		}
	}
}

// BenchmarkDerivedSlabProfiles: dealerless derived DCF 32/32 keys per
// second from an in-process pair, one bulk of 4096 keys a round, kord-v1
// and llama in the same run (both modules generate; the pair tags are
// compared).
func BenchmarkDerivedSlabProfiles(b *testing.B) {
	lp, err := NewLocalPair(context.Background(), LocalOptions{})
	if err != nil {
		b.Fatal(err)
	}
	defer lp.Close()
	for _, pr := range []msg.Profile{msg.KordV1, msg.Llama} {
		b.Run(pr.String(), func(b *testing.B) {
			const n = 4096
			bulk := &msg.Bulk{Mode: msg.Derived, Profile: pr, Type: fss.DCF, InBits: 32, OutBits: 32, N: n, Beta: 1}
			for b.Loop() {
				slabs, err := lp.GenerateSlabs(context.Background(), 0, [2]*msg.Bulk{bulk, bulk})
				if err != nil {
					b.Fatal(err)
				}
				lp.Release(slabs)
			}
			b.ReportMetric(float64(n*b.N)/b.Elapsed().Seconds(), "keys/s")
		})
	}
}
