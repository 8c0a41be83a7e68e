package engine

import (
	"bytes"
	"errors"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"

	"github.com/kord-fss/kord/fss"
	"github.com/kord-fss/kord/fss/llama"
	"github.com/kord-fss/kord/internal/prg"
	"github.com/kord-fss/kord/module/msg"
)

// groupDealer is what LLAMA's keyGenDCF makes for n keys of a payload
// vector of g elements at counters first… with the roots the module
// derives (kdf's vector CBC-MAC, root 1's control bit the complement of
// root 0's): llama.GenBatch, both parties' files.
func groupDealer(t *testing.T, e *Engine, first uint64, mode msg.Mode, p fss.Params, g int, alpha, beta []uint64) (out0, out1 []byte) {
	t.Helper()
	n := len(alpha)
	r0, r1 := make([]prg.Block, n), make([]prg.Block, n)
	e.prf.RootsBatchG(first, byte(mode), msg.TypeByte(msg.Llama, p.Type), byte(p.InBits), byte(p.OutBits), g, alpha, beta, r0, r1)
	for i := range r1 {
		r1[i][0] = r1[i][0]&^1 | ^r0[i][0]&1
	}
	lp := msg.LlamaParamsG(p, g)
	out0, out1 = make([]byte, n*lp.KeySize()), make([]byte, n*lp.KeySize())
	if err := llama.GenBatch(lp, alpha, beta, asLlamaBlocks(r0), asLlamaBlocks(r1), out0, out1); err != nil {
		t.Fatal(err)
	}
	return out0, out1
}

// TestLlamaGroupBulk: llama bulks with a payload vector (G up to 19, as
// LLAMA's own vectors, and MaxGroup), bound on every tier and derived
// (public and drawn payloads), are byte for byte llama.GenBatch with the
// modules' roots, pair, and evaluate to β_j·[x < α] element by element.
func TestLlamaGroupBulk(t *testing.T) {
	rng := rand.New(rand.NewPCG(21, 22))
	for _, g := range []int{2, 3, 5, 19, msg.MaxGroup} {
		l, n := 1+rng.IntN(64), 1+rng.IntN(64)
		N := 1 + rng.IntN(80) // past llama.BatchKeys now and then
		if g == msg.MaxGroup {
			N = 3
		}
		p := fss.Params{Type: fss.DCF, InBits: l, OutBits: n}
		for _, c := range []struct {
			mode       msg.Mode
			tier       msg.Tier
			deriveBeta bool
		}{{msg.Bound, msg.Keystream, false}, {msg.Bound, msg.MAC, false}, {msg.Bound, msg.BatchMAC, false}, {msg.Derived, 0, false}, {msg.Derived, 0, true}} {
			e := pair(t)
			var b [2]msg.Bulk
			for i := range b {
				b[i] = msg.Bulk{Mode: c.mode, Profile: msg.Llama, Type: fss.DCF, InBits: l, OutBits: n, N: N, Group: g, DeriveBeta: c.deriveBeta}
			}
			alpha, beta := make([]uint64, N), make([]uint64, N*g)
			switch {
			case c.mode == msg.Bound:
				for i := range N {
					alpha[i] = rng.Uint64() & prg.Mask(l)
					a0, a1 := split(rng, alpha[i], l)
					b[0].AlphaShares, b[1].AlphaShares = append(b[0].AlphaShares, a0), append(b[1].AlphaShares, a1)
				}
				for k := range N * g {
					beta[k] = rng.Uint64() & prg.Mask(n)
					b0, b1 := split(rng, beta[k], n)
					b[0].BetaShares, b[1].BetaShares = append(b[0].BetaShares, b0), append(b[1].BetaShares, b1)
				}
			case !c.deriveBeta:
				pub := make([]uint64, g)
				for j := range pub {
					pub[j] = rng.Uint64() & prg.Mask(n)
				}
				b[0].Betas, b[1].Betas = pub, pub
			}
			r0, r1 := bulkSubmit(t, e[0], c.tier, b[0]), bulkSubmit(t, e[1], c.tier, b[1])
			if c.mode == msg.Bound {
				if !frame(t, e[1], r0.Frames[0]).Accepted || !frame(t, e[0], r1.Frames[0]).Accepted {
					t.Fatalf("g=%d %v: honest bulk frame rejected", g, c.tier)
				}
			}
			s0, s1 := slabOf(t, e[0], r0.FirstCounter, N), slabOf(t, e[1], r0.FirstCounter, N)
			if s0.Group != g || s0.Stride != msg.LlamaParamsG(p, g).KeySize() {
				t.Fatalf("g=%d: slab group %d stride %d", g, s0.Group, s0.Stride)
			}
			if !bytes.Equal(s0.PairTags, s1.PairTags) {
				t.Fatalf("g=%d %+v: the two slabs' pair tags differ", g, c)
			}
			if c.mode == msg.Derived {
				if len(s0.BetaShares) != N*g || len(s1.BetaShares) != N*g {
					t.Fatalf("g=%d: %d and %d β shares, want %d", g, len(s0.BetaShares), len(s1.BetaShares), N*g)
				}
				for i := range N {
					alpha[i] = (s0.AlphaShares[i] + s1.AlphaShares[i]) & prg.Mask(l)
				}
				drawn := uint64(0)
				for k := range N * g {
					beta[k] = (s0.BetaShares[k] + s1.BetaShares[k]) & prg.Mask(n)
					if k%g != 0 {
						drawn |= beta[k]
					}
					if !c.deriveBeta && beta[k] != b[0].Betas[k%g] {
						t.Fatalf("g=%d: public payload element %d reconstructs to another value", g, k%g)
					}
				}
				if c.deriveBeta && n > 8 && drawn == 0 {
					t.Fatalf("g=%d: the drawn payload elements after the first are all zero", g)
				}
			}
			d0, d1 := groupDealer(t, e[0], s0.First, c.mode, p, g, alpha, beta)
			if !bytes.Equal(s0.Keys, d0) || !bytes.Equal(s1.Keys, d1) {
				t.Fatalf("g=%d %+v: module keys differ from llama.GenBatch with the modules' roots", g, c)
			}
			for i := range N {
				if err := llama.CheckPair(msg.LlamaParamsG(p, g), s0.Key(i), s1.Key(i), alpha[i], beta[i*g:(i+1)*g]); err != nil {
					t.Fatalf("g=%d key %d: %v", g, i, err)
				}
			}
		}
	}
}

// TestLlamaGroupBound: a payload vector's group size and every element
// are part of the shape. Frames of two sites whose G differ are rejected
// on the mac tiers; where nothing authenticates a frame (keystream tier,
// derived mode) the pair tags of keys that differ in G or in any public
// element disagree.
func TestLlamaGroupBound(t *testing.T) {
	base := msg.Bulk{Mode: msg.Bound, Profile: msg.Llama, Type: fss.DCF, InBits: 8, OutBits: 8, N: 1, Group: 2,
		AlphaShares: []uint64{1}, BetaShares: []uint64{1, 2}}
	other := base
	other.InBits, other.OutBits, other.Group, other.BetaShares = 8, 16, 1, []uint64{3} // the same frame length
	for _, tier := range []msg.Tier{msg.Keystream, msg.MAC, msg.BatchMAC} {
		e := pair(t)
		r0, r1 := bulkSubmit(t, e[0], tier, base), bulkSubmit(t, e[1], tier, other)
		if len(r0.Frames[0]) != len(r1.Frames[0]) {
			t.Fatal("test shapes should give frames of one length")
		}
		a1, a0 := frame(t, e[1], r0.Frames[0]), frame(t, e[0], r1.Frames[0])
		if tier != msg.Keystream {
			if a1.Accepted || a1.Reject != RejectAuth || a0.Accepted {
				t.Fatalf("%v: a frame of another group was not rejected for authentication: %+v %+v", tier, a1, a0)
			}
			continue
		}
		if bytes.Equal(slabOf(t, e[0], r0.FirstCounter, 1).PairTags, slabOf(t, e[1], r0.FirstCounter, 1).PairTags) {
			t.Fatal("keystream tier: pair tags agree across group sizes")
		}
	}
	d := msg.Bulk{Mode: msg.Derived, Profile: msg.Llama, Type: fss.DCF, InBits: 8, OutBits: 8, N: 1, Group: 3, Betas: []uint64{1, 2, 3}}
	for _, alt := range []msg.Bulk{
		{Mode: msg.Derived, Profile: msg.Llama, Type: fss.DCF, InBits: 8, OutBits: 8, N: 1, Group: 3, Betas: []uint64{1, 2, 4}},
		{Mode: msg.Derived, Profile: msg.Llama, Type: fss.DCF, InBits: 8, OutBits: 8, N: 1, Group: 4, Betas: []uint64{1, 2, 3, 0}},
		{Mode: msg.Derived, Profile: msg.Llama, Type: fss.DCF, InBits: 8, OutBits: 8, N: 1, Beta: 1},
	} {
		e := pair(t)
		r0 := bulkSubmit(t, e[0], 0, d)
		bulkSubmit(t, e[1], 0, alt)
		if bytes.Equal(slabOf(t, e[0], r0.FirstCounter, 1).PairTags, slabOf(t, e[1], r0.FirstCounter, 1).PairTags) {
			t.Fatalf("derived: pair tags agree for payloads %v and %+v", d.Betas, alt)
		}
	}
}

// TestLlamaGroupBadInput: a bad payload vector is refused with an error
// naming the field, and nothing moves.
func TestLlamaGroupBadInput(t *testing.T) {
	e := pair(t)
	before := state(e[0])
	llamaBulk := func(mode msg.Mode, g int) msg.Bulk {
		return msg.Bulk{Mode: mode, Profile: msg.Llama, Type: fss.DCF, InBits: 8, OutBits: 8, N: 2, Group: g}
	}
	cases := []struct {
		b    msg.Bulk
		want string
	}{}
	add := func(b msg.Bulk, want string) {
		cases = append(cases, struct {
			b    msg.Bulk
			want string
		}{b, want})
	}
	b := llamaBulk(msg.Derived, msg.MaxGroup+1)
	add(b, "Bulk.Group: payload group 65 is outside 1..64")
	b = llamaBulk(msg.Derived, -1)
	add(b, "Bulk.Group")
	b = llamaBulk(msg.Derived, 2)
	b.Profile = msg.KordV1
	add(b, "Bulk.Group: a payload vector (group 2) needs the llama profile")
	b = llamaBulk(msg.Derived, 3)
	b.Betas = []uint64{1, 2}
	add(b, "Bulk.Betas: 2 elements, want Group = 3")
	b = llamaBulk(msg.Derived, 2)
	b.Betas = []uint64{1, 256}
	add(b, "Bulk.Betas[1]: does not fit in 8 output bits")
	b = llamaBulk(msg.Derived, 2)
	b.Beta, b.Betas = 1, []uint64{1, 2}
	add(b, "Bulk.Beta: must be zero with a payload vector")
	b = llamaBulk(msg.Derived, 2)
	b.DeriveBeta, b.Betas = true, []uint64{1, 2}
	add(b, "Bulk.Beta/Betas: must be empty when DeriveBeta is set")
	b = llamaBulk(msg.Derived, 1)
	b.Betas = []uint64{1}
	add(b, "Bulk.Betas: 1 elements for a one-element payload")
	b = llamaBulk(msg.Bound, 3)
	b.AlphaShares, b.BetaShares = []uint64{1, 2}, []uint64{1, 2, 3, 4, 5}
	add(b, "Bulk.BetaShares: 5 shares, want N·Group = 2·3 = 6")
	b = llamaBulk(msg.Bound, 3)
	b.AlphaShares, b.BetaShares = []uint64{1, 2}, []uint64{1, 2, 3, 4, 300, 6}
	add(b, "Bulk.BetaShares[4] (key 1, element 1): does not fit in 8 output bits")
	b = llamaBulk(msg.Bound, 2)
	b.AlphaShares, b.BetaShares, b.Betas = []uint64{1, 2}, []uint64{1, 2, 3, 4}, []uint64{1, 2}
	add(b, "Bulk.DeriveBeta/Beta/Betas: only for derived mode")
	b = llamaBulk(msg.Derived, msg.MaxGroup)
	b.InBits, b.OutBits, b.N, b.DeriveBeta = 64, 64, msg.MaxBulk, true
	add(b, "pass the bulk limit")
	for _, c := range cases {
		_, err := e[0].Submit(ctx, &msg.SubmitRequest{Kind: msg.SubmitBulk, Tier: msg.MAC, Bulk: &c.b})
		if !errors.Is(err, ErrBadRequest) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: got %v, want an error naming %q", c.b, err, c.want)
		}
	}
	if state(e[0]) != before {
		t.Fatal("a refused request moved the module")
	}
}

// BenchmarkLlamaGroupBulk: one party's derived llama bulk (1024 keys,
// Bin = Bout = 32, public payload) for payloads of G elements: what a
// vector costs the module against one element (keys/s of one module;
// both modules of a pair do the same work).
func BenchmarkLlamaGroupBulk(b *testing.B) {
	for _, g := range []int{1, 2, 19, 64} {
		b.Run("g="+strconv.Itoa(g), func(b *testing.B) {
			e := pair(b)
			const n = 1024
			bulk := msg.Bulk{Mode: msg.Derived, Profile: msg.Llama, Type: fss.DCF, InBits: 32, OutBits: 32, N: n, Group: g}
			if g == 1 {
				bulk.Beta = 1
			} else {
				bulk.Betas = make([]uint64, g)
			}
			b.ResetTimer()
			for range b.N {
				r := bulkSubmit(b, e[0], 0, bulk)
				e[0].Recycle(slabOf(b, e[0], r.FirstCounter, n))
			}
			b.ReportMetric(float64(n*b.N)/b.Elapsed().Seconds(), "keys/s")
		})
	}
}
