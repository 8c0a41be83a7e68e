package host

import (
	"bytes"
	"context"
	"errors"
	"math/rand/v2"
	"testing"

	"github.com/kord-fss/kord/fss"
	"github.com/kord-fss/kord/internal/prg"
	"github.com/kord-fss/kord/module"
	"github.com/kord-fss/kord/module/msg"
)

func slabKeys(t *testing.T, s *msg.Slab, i int) *fss.Key {
	t.Helper()
	k, err := fss.ParseKey(s.Key(i))
	if err != nil {
		t.Fatal(err)
	}
	return k
}

// TestSlabAPI: DerivedSlab and BoundSlab (each tier) hand out slabs that
// pair key by key, and released slabs serve the next calls.
func TestSlabAPI(t *testing.T) {
	rng := rand.New(rand.NewPCG(11, 12))
	lp := newPair(t, 16)
	ctx := context.Background()
	for _, p := range []fss.Params{{Type: fss.DPF, InBits: 20, OutBits: 32}, {Type: fss.DCF, InBits: 16, OutBits: 8}} {
		for round := range 2 {
			s, err := lp.DerivedSlab(ctx, p, 50, 0, true)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(s[0].PairTags, s[1].PairTags) || s[0].N != 50 || s[0].Params != p {
				t.Fatalf("derived slabs: %d keys of %v", s[0].N, s[0].Params)
			}
			for i := range s[0].N {
				a := (s[0].AlphaShares[i] + s[1].AlphaShares[i]) & prg.Mask(p.InBits)
				b := (s[0].BetaShares[i] + s[1].BetaShares[i]) & prg.Mask(p.OutBits)
				checkPair(t, rng, slabKeys(t, s[0], i), slabKeys(t, s[1], i), a, b)
			}
			lp.Release(s)
			_ = round
		}
		for _, tier := range []msg.Tier{msg.Keystream, msg.MAC, msg.BatchMAC} {
			alphas, betas, as, bs := sharesOf(rng, p, 30)
			s, err := lp.BoundSlab(ctx, tier, p, as, bs)
			if err != nil {
				t.Fatal(err)
			}
			for i := range alphas {
				checkPair(t, rng, slabKeys(t, s[0], i), slabKeys(t, s[1], i), alphas[i], betas[i])
			}
			lp.Release(s)
		}
	}
	if _, err := lp.BoundSlab(ctx, msg.MAC, fss.Params{Type: fss.DPF, InBits: 8, OutBits: 8},
		[2][]uint64{{1}, {1, 2}}, [2][]uint64{{1}, {1}}); err == nil {
		t.Fatal("mismatched share counts accepted")
	}
	if _, err := lp.DerivedSlab(ctx, fss.Params{Type: fss.DPF, InBits: 8, OutBits: 8}, 0, 0, true); !errors.Is(err, module.ErrBadRequest) || !AlphaReusable(err) {
		t.Fatalf("N = 0: %v", err)
	}
	// The pair still works after a refused request.
	s, err := lp.DerivedSlab(ctx, fss.Params{Type: fss.DPF, InBits: 8, OutBits: 8}, 3, 0, true)
	if err != nil {
		t.Fatal(err)
	}
	lp.Release(s)
}

// TestSlabTamperedSpent: keystream frames altered in transit make slabs
// that do not pair: no slab is handed out, the error is ErrTampered and
// spent, and both modules count the mismatch.
func TestSlabTamperedSpent(t *testing.T) {
	rng := rand.New(rand.NewPCG(13, 14))
	lp, devs, tap := tamperedPair(t, 4, func(f []byte) { f[len(f)-1] ^= 1 })
	ctx := context.Background()
	p := fss.Params{Type: fss.DPF, InBits: 32, OutBits: 32}
	_, _, as, bs := sharesOf(rng, p, 8)
	tap.set(true)
	s, err := lp.BoundSlab(ctx, msg.Keystream, p, as, bs)
	tap.set(false)
	if !errors.Is(err, ErrTampered) || AlphaReusable(err) || s[0] != nil || s[1] != nil {
		t.Fatalf("got %v (reusable %v), want a spent ErrTampered and no slab", err, AlphaReusable(err))
	}
	checkMismatchAbandons(t, devs)
	alphas, betas, as, bs := sharesOf(rng, p, 4)
	s, err = lp.BoundSlab(ctx, msg.Keystream, p, as, bs)
	if err != nil {
		t.Fatal(err)
	}
	for i := range alphas {
		checkPair(t, rng, slabKeys(t, s[0], i), slabKeys(t, s[1], i), alphas[i], betas[i])
	}
}

// TestSlabRefusedFrameNotDelivered: a mac or batchmac frame of party 0
// altered once is refused by party 1's module, and no key of the altered
// batch is handed out. Either party 0's module had already opened party
// 1's frames of the batch (early frames): then the call fails, α spent;
// or no module had opened any frame yet: then the parties retry the
// requests in a fresh batch (the tap alters only one), and the call's
// slabs are of that batch and pair. Which one happens is timing; neither
// may hand out a slab that does not pair. Fresh shares then give pairs.
func TestSlabRefusedFrameNotDelivered(t *testing.T) {
	rng := rand.New(rand.NewPCG(15, 16))
	lp, _, tap := tamperedPair(t, 4, func(f []byte) { f[len(f)/2] ^= 0x40 })
	tap.once = true
	ctx := context.Background()
	p := fss.Params{Type: fss.DCF, InBits: 16, OutBits: 16}
	for _, tier := range []msg.Tier{msg.MAC, msg.BatchMAC} {
		alphas, betas, as, bs := sharesOf(rng, p, 6)
		tap.set(true)
		s, err := lp.BoundSlab(ctx, tier, p, as, bs)
		switch {
		case err == nil: // retried: the slabs must be the fresh batch's, and pair
			for i := range alphas {
				checkPair(t, rng, slabKeys(t, s[0], i), slabKeys(t, s[1], i), alphas[i], betas[i])
			}
			lp.Release(s)
		case AlphaReusable(err) || s[0] != nil || s[1] != nil:
			t.Fatalf("%v: got %v (reusable %v, slabs %v %v), want a spent error and no slab", tier, err, AlphaReusable(err), s[0] != nil, s[1] != nil)
		}
	}
	if tap.n != 2 {
		t.Fatalf("%d batches altered, want 2", tap.n)
	}
	alphas, betas, as, bs := sharesOf(rng, p, 6)
	s, err := lp.BoundSlab(ctx, msg.BatchMAC, p, as, bs)
	if err != nil {
		t.Fatal(err)
	}
	for i := range alphas {
		checkPair(t, rng, slabKeys(t, s[0], i), slabKeys(t, s[1], i), alphas[i], betas[i])
	}
}

// TestMeasureDelivered: every pair it delivers checks out.
func TestMeasureDelivered(t *testing.T) {
	ctx := context.Background()
	for _, c := range []struct {
		mode msg.Mode
		tier msg.Tier
	}{{msg.Derived, 0}, {msg.Bound, msg.Keystream}, {msg.Bound, msg.BatchMAC}} {
		rate, ok, bad, err := MeasureDelivered(ctx, fss.Params{Type: fss.DCF, InBits: 16, OutBits: 16}, c.mode, c.tier, 2000)
		if err != nil || bad != 0 || ok < 2000 || rate <= 0 {
			t.Fatalf("%v %v: rate %v, %d verified, %d failed, %v", c.mode, c.tier, rate, ok, bad, err)
		}
	}
	if _, _, _, err := MeasureDelivered(ctx, fss.Params{Type: fss.DPF, InBits: 8, OutBits: 8}, msg.Consume, 0, 10); err == nil {
		t.Fatal("consume mode accepted")
	}
}

// TestGenerateMixedModes: the *fss.Key API over the bulk path, derived
// then bound batches on one pair (their slabs recycled between them).
func TestGenerateMixedModes(t *testing.T) {
	rng := rand.New(rand.NewPCG(17, 18))
	lp := newPair(t, 8)
	ctx := context.Background()
	p := fss.Params{Type: fss.DPF, InBits: 16, OutBits: 16}
	for range 2 {
		d, err := lp.DerivedKeys(ctx, p, 20, 5, false)
		if err != nil {
			t.Fatal(err)
		}
		for i := range d[0] {
			a := (d[0][i].AlphaShare + d[1][i].AlphaShare) & prg.Mask(16)
			b := (d[0][i].BetaShare + d[1][i].BetaShare) & prg.Mask(16)
			if b != 5 {
				t.Fatal("public β lost")
			}
			checkPair(t, rng, d[0][i].Key, d[1][i].Key, a, b)
		}
		alphas, betas, as, bs := sharesOf(rng, p, 20)
		k, err := lp.BoundKeys(ctx, msg.MAC, p, as, bs)
		if err != nil {
			t.Fatal(err)
		}
		for i := range alphas {
			checkPair(t, rng, k[0][i], k[1][i], alphas[i], betas[i])
		}
	}
}
