package engine

import (
	"bytes"
	"errors"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/kord-fss/kord/fss"
	"github.com/kord-fss/kord/fss/llama"
	"github.com/kord-fss/kord/internal/prg"
	"github.com/kord-fss/kord/module/msg"
)

// llamaDealer is what a dealer running LLAMA's keyGenDCF makes for the key
// at counter c with the roots the module derives (profile byte included,
// root 1's control bit the complement of root 0's).
func llamaDealer(t *testing.T, e *Engine, c uint64, mode msg.Mode, p fss.Params, alpha, beta uint64) (k0, k1 []byte) {
	t.Helper()
	r0, r1 := e.prf.Roots(c, byte(mode), msg.TypeByte(msg.Llama, p.Type), byte(p.InBits), byte(p.OutBits), alpha, beta)
	r1[0] = r1[0]&^1 | ^r0[0]&1
	k0, k1, err := llama.Gen(msg.LlamaParams(p), alpha, []uint64{beta}, r0, r1)
	if err != nil {
		t.Fatal(err)
	}
	return k0, k1
}

// checkLlamaPair checks that two llama key files evaluate to β·[x < α].
func checkLlamaPair(t *testing.T, p fss.Params, k0, k1 []byte, alpha, beta uint64) {
	t.Helper()
	if err := llama.CheckPair(msg.LlamaParams(p), k0, k1, alpha, []uint64{beta}); err != nil {
		t.Fatal(err)
	}
}

// TestLlamaKeysEqualDealerGen: llama-profile keys made through the
// protocol (bound on every tier, derived) are byte for byte LLAMA's
// keyGenDCF output for the module's roots, and evaluate to β·[x < α].
func TestLlamaKeysEqualDealerGen(t *testing.T) {
	rng := rand.New(rand.NewPCG(11, 12))
	e := pair(t)
	for _, tier := range []msg.Tier{msg.Keystream, msg.MAC, msg.BatchMAC} {
		for _, l := range []int{1, 7, 16, 32, 64} {
			n := 1 + rng.IntN(64)
			alpha, beta := rng.Uint64()&prg.Mask(l), rng.Uint64()&prg.Mask(n)
			a0, a1 := split(rng, alpha, l)
			b0, b1 := split(rng, beta, n)
			s := [2]msg.Share{
				{Mode: msg.Bound, Profile: msg.Llama, Type: fss.DCF, InBits: l, OutBits: n, AlphaShare: a0, BetaShare: b0},
				{Mode: msg.Bound, Profile: msg.Llama, Type: fss.DCF, InBits: l, OutBits: n, AlphaShare: a1, BetaShare: b1},
			}
			r0, r1 := submit(t, e[0], tier, s[0]), submit(t, e[1], tier, s[1])
			if !frame(t, e[1], r0.Frames[0]).Accepted || !frame(t, e[0], r1.Frames[0]).Accepted {
				t.Fatal("honest frame rejected")
			}
			c := r0.FirstCounter
			var got [2][]byte
			var tags [2][msg.PairTagSize]byte
			for b := range 2 {
				r, err := e[b].Collect(ctx, &msg.CollectRequest{Counter: c})
				if err != nil {
					t.Fatal(err)
				}
				got[b], tags[b] = r.Key, r.PairTag
			}
			if tags[0] != tags[1] {
				t.Fatal("pair tags of one llama pair differ")
			}
			p := s[0].Params()
			d0, d1 := llamaDealer(t, e[0], c, msg.Bound, p, alpha, beta)
			if !bytes.Equal(got[0], d0) || !bytes.Equal(got[1], d1) {
				t.Fatalf("%v ℓ=%d n=%d: protocol keys differ from LLAMA's keyGenDCF", tier, l, n)
			}
			checkLlamaPair(t, p, got[0], got[1], alpha, beta)
		}
	}
	for _, deriveBeta := range []bool{false, true} {
		s := msg.Share{Mode: msg.Derived, Profile: msg.Llama, Type: fss.DCF, InBits: 24, OutBits: 40, DeriveBeta: deriveBeta}
		if !deriveBeta {
			s.Beta = 1
		}
		c := submit(t, e[0], 0, s).FirstCounter
		submit(t, e[1], 0, s)
		var keys [2][]byte
		var as, bs [2]uint64
		for b := range 2 {
			r, err := e[b].Collect(ctx, &msg.CollectRequest{Counter: c})
			if err != nil {
				t.Fatal(err)
			}
			keys[b], as[b], bs[b] = r.Key, r.AlphaShare, r.BetaShare
		}
		alpha := (as[0] + as[1]) & prg.Mask(24)
		beta := (bs[0] + bs[1]) & prg.Mask(40)
		if a, _, _, _ := e[0].prf.Derived(c, derivedShape(msg.Llama, fss.DCF, 24, 40, 1, deriveBeta)); a&prg.Mask(24) != alpha {
			t.Fatal("derived α shares do not sum to the drawn α")
		}
		d0, d1 := llamaDealer(t, e[0], c, msg.Derived, s.Params(), alpha, beta)
		if !bytes.Equal(keys[0], d0) || !bytes.Equal(keys[1], d1) {
			t.Fatal("derived llama keys differ from LLAMA's keyGenDCF")
		}
		checkLlamaPair(t, s.Params(), keys[0], keys[1], alpha, beta)
	}
}

// TestLlamaConsume: a consume-mode llama key evaluates inside the modules
// to shares of β·[x < α].
func TestLlamaConsume(t *testing.T) {
	e := pair(t)
	const l, n = 12, 20
	var alpha, beta uint64 = 1000, 0xabcde
	s0 := msg.Share{Mode: msg.Consume, Profile: msg.Llama, Type: fss.DCF, InBits: l, OutBits: n, AlphaShare: 3000, BetaShare: 5}
	s1 := s0
	s1.AlphaShare, s1.BetaShare = (alpha-3000)&prg.Mask(l), (beta-5)&prg.Mask(n)
	r0, r1 := submit(t, e[0], msg.MAC, s0), submit(t, e[1], msg.MAC, s1)
	if !frame(t, e[1], r0.Frames[0]).Accepted || !frame(t, e[0], r1.Frames[0]).Accepted {
		t.Fatal("honest frame rejected")
	}
	points := []uint64{0, alpha - 1, alpha, alpha + 1, 1<<l - 1}
	var ev [2][]uint64
	for b := range 2 {
		r, err := e[b].Collect(ctx, &msg.CollectRequest{Counter: r0.FirstCounter, Points: points})
		if err != nil {
			t.Fatal(err)
		}
		ev[b] = r.Evals
	}
	for i, x := range points {
		want := uint64(0)
		if x < alpha {
			want = beta
		}
		if got := (ev[0][i] + ev[1][i]) & prg.Mask(n); got != want {
			t.Fatalf("f(%d) = %d, want %d", x, got, want)
		}
	}
}

// TestProfileBound: the profile is part of the shape. A frame sealed for a
// llama key does not open for a kord-v1 request of the same type, widths
// and counter (mac tiers), and where nothing authenticates the frame
// (keystream tier, derived mode) the two modules' pair tags disagree.
func TestProfileBound(t *testing.T) {
	for _, tier := range []msg.Tier{msg.Keystream, msg.MAC, msg.BatchMAC} {
		e := pair(t)
		s := msg.Share{Mode: msg.Bound, Type: fss.DCF, InBits: 16, OutBits: 16, AlphaShare: 1, BetaShare: 1}
		sl := s
		sl.Profile = msg.Llama
		r0, r1 := submit(t, e[0], tier, sl), submit(t, e[1], tier, s)
		a1, a0 := frame(t, e[1], r0.Frames[0]), frame(t, e[0], r1.Frames[0])
		if tier != msg.Keystream {
			if a1.Accepted || a1.Reject != RejectAuth || a0.Accepted {
				t.Fatalf("%v: a frame of another profile was not rejected for authentication: %+v %+v", tier, a1, a0)
			}
			continue
		}
		var tags [2][msg.PairTagSize]byte
		for b := range 2 {
			r, err := e[b].Collect(ctx, &msg.CollectRequest{Counter: r0.FirstCounter})
			if err != nil {
				t.Fatal(err)
			}
			tags[b] = r.PairTag
		}
		if tags[0] == tags[1] {
			t.Fatal("keystream tier: pair tags agree across profiles")
		}
	}
	e := pair(t)
	s := msg.Share{Mode: msg.Derived, Type: fss.DCF, InBits: 16, OutBits: 16, Beta: 1}
	sl := s
	sl.Profile = msg.Llama
	c := submit(t, e[0], 0, s).FirstCounter
	submit(t, e[1], 0, sl)
	var tags [2][msg.PairTagSize]byte
	for b := range 2 {
		r, err := e[b].Collect(ctx, &msg.CollectRequest{Counter: c})
		if err != nil {
			t.Fatal(err)
		}
		tags[b] = r.PairTag
	}
	if tags[0] == tags[1] {
		t.Fatal("derived: pair tags agree across profiles")
	}
}

// TestLlamaBulk: llama bulks (derived and bound) give slabs of llama keys
// at LLAMA's stride, the same bytes and tags as the one-key path.
func TestLlamaBulk(t *testing.T) {
	rng := rand.New(rand.NewPCG(13, 14))
	const l, n, N = 20, 32, 300 // N > 2·llama.BatchKeys: the workers split it
	p := fss.Params{Type: fss.DCF, InBits: l, OutBits: n}
	for _, mode := range []msg.Mode{msg.Derived, msg.Bound} {
		e := pair(t)
		var b [2]msg.Bulk
		alpha, beta := make([]uint64, N), make([]uint64, N)
		for i := range b {
			b[i] = msg.Bulk{Mode: mode, Profile: msg.Llama, Type: fss.DCF, InBits: l, OutBits: n, N: N}
		}
		if mode == msg.Derived {
			b[0].Beta, b[1].Beta = 1, 1
		} else {
			for i := range N {
				alpha[i], beta[i] = rng.Uint64()&prg.Mask(l), rng.Uint64()&prg.Mask(n)
				a0, a1 := split(rng, alpha[i], l)
				b0, b1 := split(rng, beta[i], n)
				b[0].AlphaShares, b[1].AlphaShares = append(b[0].AlphaShares, a0), append(b[1].AlphaShares, a1)
				b[0].BetaShares, b[1].BetaShares = append(b[0].BetaShares, b0), append(b[1].BetaShares, b1)
			}
		}
		r0, r1 := bulkSubmit(t, e[0], msg.BatchMAC, b[0]), bulkSubmit(t, e[1], msg.BatchMAC, b[1])
		if mode == msg.Bound {
			if !frame(t, e[1], r0.Frames[0]).Accepted || !frame(t, e[0], r1.Frames[0]).Accepted {
				t.Fatal("honest bulk frame rejected")
			}
		}
		s0, s1 := slabOf(t, e[0], r0.FirstCounter, N), slabOf(t, e[1], r0.FirstCounter, N)
		if s0.Profile != msg.Llama || s0.Stride != msg.LlamaParams(p).KeySize() {
			t.Fatalf("slab profile %v stride %d", s0.Profile, s0.Stride)
		}
		if !bytes.Equal(s0.PairTags, s1.PairTags) {
			t.Fatal("the two slabs' pair tags differ")
		}
		for i := range N {
			if mode == msg.Derived {
				alpha[i] = (s0.AlphaShares[i] + s1.AlphaShares[i]) & prg.Mask(l)
				beta[i] = 1
			}
			c := s0.First + uint64(i)
			d0, d1 := llamaDealer(t, e[0], c, mode, p, alpha[i], beta[i])
			if !bytes.Equal(s0.Key(i), d0) || !bytes.Equal(s1.Key(i), d1) {
				t.Fatalf("%v key %d: slab bytes differ from LLAMA's keyGenDCF with the one-key roots", mode, i)
			}
			var tag [msg.PairTagSize]byte
			e[0].prf.PairTag(c, byte(mode), msg.TypeByte(msg.Llama, fss.DCF), l, n, alpha[i], beta[i], &tag)
			if !bytes.Equal(tag[:], s0.PairTag(i)) {
				t.Fatalf("key %d: slab pair tag differs from the one-key tag", i)
			}
			checkLlamaPair(t, p, s0.Key(i), s1.Key(i), alpha[i], beta[i])
		}
	}
}

// TestLlamaBadInput: a llama request the profile cannot serve is refused
// with an error naming the field, and nothing moves.
func TestLlamaBadInput(t *testing.T) {
	e := pair(t)
	before := state(e[0])
	cases := []struct {
		s    msg.Share
		want string
	}{
		{msg.Share{Mode: msg.Derived, Profile: msg.Llama, Type: fss.DPF, InBits: 8, OutBits: 8}, "Shares[0].Type: the llama profile has only DCF"},
		{msg.Share{Mode: msg.Derived, Profile: 9, Type: fss.DCF, InBits: 8, OutBits: 8}, "Shares[0].Profile: unknown key profile 9"},
		{msg.Share{Mode: msg.Bound, Profile: msg.Llama, Type: fss.DCF, InBits: 65, OutBits: 8}, "Shares[0].InBits"},
		{msg.Share{Mode: msg.Bound, Profile: msg.Llama, Type: fss.DCF, InBits: 8, OutBits: 8, BetaShare: 256}, "Shares[0].BetaShare"},
	}
	for _, c := range cases {
		_, err := e[0].Submit(ctx, &msg.SubmitRequest{Kind: msg.SubmitShares, Tier: msg.MAC, Shares: []msg.Share{c.s}})
		if !errors.Is(err, ErrBadRequest) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: got %v, want an error naming %q", c.s, err, c.want)
		}
	}
	for _, b := range []msg.Bulk{
		{Mode: msg.Derived, Profile: msg.Llama, Type: fss.DPF, InBits: 8, OutBits: 8, N: 2},
		{Mode: msg.Derived, Profile: 3, Type: fss.DCF, InBits: 8, OutBits: 8, N: 2},
	} {
		_, err := e[0].Submit(ctx, &msg.SubmitRequest{Kind: msg.SubmitBulk, Bulk: &b})
		if !errors.Is(err, ErrBadRequest) || !strings.Contains(err.Error(), "Bulk.") {
			t.Errorf("%+v: got %v", b, err)
		}
	}
	if state(e[0]) != before {
		t.Fatal("a refused request moved the module")
	}
}
