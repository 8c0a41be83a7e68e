package engine

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/kord-fss/kord/fss"
	"github.com/kord-fss/kord/internal/prg"
	"github.com/kord-fss/kord/module/msg"
)

var ctx = context.Background()

// pair returns two paired engines. Being an internal test, it can reach
// the root PRF: the roots hook exists only here, never in a build.
func pair(t testing.TB) [2]*Engine {
	t.Helper()
	var e [2]*Engine
	for b := 0; b < 2; b++ {
		var err error
		if e[b], err = New(Config{Party: b, Secret: []byte("provisioning-secret-0123")}); err != nil {
			t.Fatal(err)
		}
	}
	r, err := e[0].Provision(ctx, &msg.ProvisionRequest{})
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; len(r.Message) > 0; i++ {
		if r, err = e[1-i%2].Provision(ctx, &msg.ProvisionRequest{Message: r.Message}); err != nil {
			t.Fatal(err)
		}
	}
	if !e[0].paired || !e[1].paired {
		t.Fatal("not paired")
	}
	return e
}

func submit(t testing.TB, e *Engine, tier msg.Tier, s ...msg.Share) *msg.SubmitResponse {
	t.Helper()
	r, err := e.Submit(ctx, &msg.SubmitRequest{Kind: msg.SubmitShares, Tier: tier, Shares: s})
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func frame(t testing.TB, e *Engine, f []byte) *msg.SubmitResponse {
	t.Helper()
	r, err := e.Submit(ctx, &msg.SubmitRequest{Kind: msg.SubmitPeerFrame, Frame: f})
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func collect(t testing.TB, e *Engine, c uint64) *fss.Key {
	t.Helper()
	r, err := e.Collect(ctx, &msg.CollectRequest{Counter: c})
	if err != nil {
		t.Fatal(err)
	}
	k, err := fss.ParseKey(r.Key)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

func split(rng *rand.Rand, v uint64, bits int) (uint64, uint64) {
	a := rng.Uint64() & prg.Mask(bits)
	return a, (v - a) & prg.Mask(bits)
}

// TestKeysEqualDealerGen: the protocol's keys are byte for byte the dealer's
// keys for the same (α, β) and the roots derived from kr and the counter.
func TestKeysEqualDealerGen(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	e := pair(t)
	for _, tier := range []msg.Tier{msg.Keystream, msg.MAC, msg.BatchMAC} {
		for _, typ := range []fss.Type{fss.DPF, fss.DCF} {
			for _, l := range []int{1, 8, 16, 32, 64} {
				n := 1 + rng.IntN(64)
				alpha, beta := rng.Uint64()&prg.Mask(l), rng.Uint64()&prg.Mask(n)
				a0, a1 := split(rng, alpha, l)
				b0, b1 := split(rng, beta, n)
				s := [2]msg.Share{
					{Mode: msg.Bound, Type: typ, InBits: l, OutBits: n, AlphaShare: a0, BetaShare: b0},
					{Mode: msg.Bound, Type: typ, InBits: l, OutBits: n, AlphaShare: a1, BetaShare: b1},
				}
				r0, r1 := submit(t, e[0], tier, s[0]), submit(t, e[1], tier, s[1])
				if r0.FirstCounter != r1.FirstCounter {
					t.Fatal("counters out of lockstep")
				}
				if !frame(t, e[1], r0.Frames[0]).Accepted || !frame(t, e[0], r1.Frames[0]).Accepted {
					t.Fatal("honest frame rejected")
				}
				c := r0.FirstCounter
				k0, k1 := collect(t, e[0], c), collect(t, e[1], c)
				pp := fss.Params{Type: typ, InBits: l, OutBits: n}
				root0, root1 := roots(e[0], c, msg.Bound, pp, alpha, beta)
				if q0, q1 := roots(e[1], c, msg.Bound, pp, alpha, beta); q0 != root0 || q1 != root1 {
					t.Fatal("modules derive different roots")
				}
				d0, d1, err := fss.GenWithRoots(pp, alpha, beta, root0, root1)
				if err != nil {
					t.Fatal(err)
				}
				if !k0.Equal(d0) || !k1.Equal(d1) {
					t.Fatalf("%v %v ℓ=%d n=%d: protocol keys differ from dealer Gen", tier, typ, l, n)
				}
			}
		}
	}
	// Derived mode: the same, with α and β from the PRF.
	for _, typ := range []fss.Type{fss.DPF, fss.DCF} {
		s := msg.Share{Mode: msg.Derived, Type: typ, InBits: 20, OutBits: 12, DeriveBeta: true}
		c := submit(t, e[0], 0, s).FirstCounter
		submit(t, e[1], 0, s)
		var k [2]*fss.Key
		var as, bs [2]uint64
		for b := 0; b < 2; b++ {
			r, err := e[b].Collect(ctx, &msg.CollectRequest{Counter: c})
			if err != nil {
				t.Fatal(err)
			}
			k[b], _ = fss.ParseKey(r.Key)
			as[b], bs[b] = r.AlphaShare, r.BetaShare
		}
		alpha, _, beta, _ := e[0].prf.Derived(c, derivedShape(msg.KordV1, typ, 20, 12, 1, true))
		alpha, beta = alpha&prg.Mask(20), beta&prg.Mask(12)
		if (as[0]+as[1])&prg.Mask(20) != alpha || (bs[0]+bs[1])&prg.Mask(12) != beta {
			t.Fatal("derived mask shares do not sum to the drawn α, β")
		}
		r0, r1 := roots(e[0], c, msg.Derived, s.Params(), alpha, beta)
		d0, d1, _ := fss.GenWithRoots(s.Params(), alpha, beta, r0, r1)
		if !k[0].Equal(d0) || !k[1].Equal(d1) {
			t.Fatal("derived keys differ from dealer Gen")
		}
	}
}

type snap struct {
	next, floor, gen, disp uint64
	pending, ready         int
}

func state(e *Engine) snap {
	p, _ := e.Poll(ctx, &msg.PollRequest{})
	return snap{p.NextCounter, p.PeerFloor, p.Generated, p.Dispatches, p.Pending, p.Ready}
}

// TestBadInput: each malformed request is refused with an error that names
// the field, and nothing moves.
func TestBadInput(t *testing.T) {
	e := pair(t)
	ok := msg.Share{Mode: msg.Bound, Type: fss.DPF, InBits: 16, OutBits: 16}
	with := func(f func(*msg.Share)) msg.Share { s := ok; f(&s); return s }
	cases := []struct {
		req   msg.SubmitRequest
		field string
	}{
		{msg.SubmitRequest{Kind: 9}, "Kind"},
		{msg.SubmitRequest{Kind: msg.SubmitShares, Tier: msg.MAC}, "Shares"},
		{msg.SubmitRequest{Kind: msg.SubmitShares, Tier: 7, Shares: []msg.Share{ok}}, "Tier"},
		{msg.SubmitRequest{Kind: msg.SubmitShares, Tier: msg.MAC, Shares: []msg.Share{with(func(s *msg.Share) { s.Mode = 9 })}}, "Mode"},
		{msg.SubmitRequest{Kind: msg.SubmitShares, Tier: msg.MAC, Shares: []msg.Share{with(func(s *msg.Share) { s.Type = 3 })}}, "Type"},
		{msg.SubmitRequest{Kind: msg.SubmitShares, Tier: msg.MAC, Shares: []msg.Share{with(func(s *msg.Share) { s.InBits = 0 })}}, "InBits"},
		{msg.SubmitRequest{Kind: msg.SubmitShares, Tier: msg.MAC, Shares: []msg.Share{with(func(s *msg.Share) { s.InBits = 65 })}}, "InBits"},
		{msg.SubmitRequest{Kind: msg.SubmitShares, Tier: msg.MAC, Shares: []msg.Share{with(func(s *msg.Share) { s.OutBits = 70 })}}, "OutBits"},
		{msg.SubmitRequest{Kind: msg.SubmitShares, Tier: msg.MAC, Shares: []msg.Share{ok, with(func(s *msg.Share) { s.AlphaShare = 1 << 16 })}}, "Shares[1].AlphaShare"},
		{msg.SubmitRequest{Kind: msg.SubmitShares, Tier: msg.MAC, Shares: []msg.Share{with(func(s *msg.Share) { s.BetaShare = 1 << 20 })}}, "BetaShare"},
		{msg.SubmitRequest{Kind: msg.SubmitShares, Tier: msg.MAC, Shares: []msg.Share{with(func(s *msg.Share) { s.Mode = msg.Derived; s.AlphaShare = 3 })}}, "AlphaShare"},
		{msg.SubmitRequest{Kind: msg.SubmitShares, Tier: msg.MAC, Shares: []msg.Share{with(func(s *msg.Share) { s.Mode = msg.Derived; s.Beta = 1 << 17 })}}, "Beta"},
		{msg.SubmitRequest{Kind: msg.SubmitShares, Tier: msg.MAC, Shares: []msg.Share{with(func(s *msg.Share) { s.Beta = 1 })}}, "Beta"},
	}
	for _, c := range cases {
		before := state(e[0])
		_, err := e[0].Submit(ctx, &c.req)
		if !errors.Is(err, ErrBadRequest) || !strings.Contains(err.Error(), c.field) {
			t.Errorf("want a bad-request error naming %s, got %v", c.field, err)
		}
		if state(e[0]) != before {
			t.Errorf("%s: state moved", c.field)
		}
	}
	if _, err := e[0].Collect(ctx, &msg.CollectRequest{Counter: 99}); !errors.Is(err, ErrBadRequest) || !strings.Contains(err.Error(), "Counter") {
		t.Errorf("collect of a missing counter: %v", err)
	}
	// Points out of range in consume mode.
	cs := msg.Share{Mode: msg.Consume, Type: fss.DPF, InBits: 8, OutBits: 8}
	r0, r1 := submit(t, e[0], msg.MAC, cs), submit(t, e[1], msg.MAC, cs)
	frame(t, e[1], r0.Frames[0])
	if _, err := e[1].Collect(ctx, &msg.CollectRequest{Counter: r1.FirstCounter, Points: []uint64{3, 256}}); err == nil || !strings.Contains(err.Error(), "Points[1]") {
		t.Errorf("out-of-range point: %v", err)
	}
	if _, err := e[1].Collect(ctx, &msg.CollectRequest{Counter: r1.FirstCounter, Points: []uint64{3}}); err != nil {
		t.Errorf("a bad collect consumed the key: %v", err)
	}
}

// TestKeystreamReflectionAndSwap: on the keystream tier a reflected or
// swapped frame is not caught, but it yields an unusable pair, and the
// reflected frame does not open to the module's own shares (so it cannot
// leak them back).
func TestKeystreamReflectionAndSwap(t *testing.T) {
	rng := rand.New(rand.NewPCG(8, 9))
	e := pair(t)
	const l = 32
	mk := func() ([2]msg.Share, uint64, uint64) {
		alpha, beta := rng.Uint64()&prg.Mask(l), 1+rng.Uint64()&prg.Mask(l-1)
		a0, a1 := split(rng, alpha, l)
		b0, b1 := split(rng, beta, l)
		return [2]msg.Share{
			{Mode: msg.Bound, Type: fss.DPF, InBits: l, OutBits: l, AlphaShare: a0, BetaShare: b0},
			{Mode: msg.Bound, Type: fss.DPF, InBits: l, OutBits: l, AlphaShare: a1, BetaShare: b1},
		}, alpha, beta
	}
	broken := func(k0, k1 *fss.Key, alpha, beta uint64) bool {
		y0, _ := k0.Eval(alpha)
		y1, _ := k1.Eval(alpha)
		return (y0+y1)&prg.Mask(l) != beta
	}
	// Reflection: module 1 gets its own frame back.
	s, alpha, beta := mk()
	r0, r1 := submit(t, e[0], msg.Keystream, s[0]), submit(t, e[1], msg.Keystream, s[1])
	d := desc(s[1])
	a, b, err := e[1].ch.OpenKeystream(r1.FirstCounter, d, r1.Frames[0])
	if err == nil && a == s[1].AlphaShare && b == s[1].BetaShare {
		t.Fatal("a reflected keystream frame opens to the module's own shares")
	}
	frame(t, e[1], r1.Frames[0])
	frame(t, e[0], r0.Frames[0])
	if !broken(collect(t, e[0], r0.FirstCounter), collect(t, e[1], r0.FirstCounter), alpha, beta) {
		t.Fatal("reflection produced a usable pair")
	}
	// Swap: frames of two consecutive keys delivered crosswise.
	sA, alA, beA := mk()
	sB, alB, beB := mk()
	rA0, rA1 := submit(t, e[0], msg.Keystream, sA[0]), submit(t, e[1], msg.Keystream, sA[1])
	rB0, rB1 := submit(t, e[0], msg.Keystream, sB[0]), submit(t, e[1], msg.Keystream, sB[1])
	frame(t, e[1], rB0.Frames[0])
	frame(t, e[1], rA0.Frames[0])
	frame(t, e[0], rA1.Frames[0])
	frame(t, e[0], rB1.Frames[0])
	if !broken(collect(t, e[0], rA0.FirstCounter), collect(t, e[1], rA0.FirstCounter), alA, beA) ||
		!broken(collect(t, e[0], rB0.FirstCounter), collect(t, e[1], rB0.FirstCounter), alB, beB) {
		t.Fatal("swapped frames produced a usable pair")
	}
}

// TestBatchMACFailClosed: one flipped bit anywhere in a batch envelope
// rejects the whole batch with no dispatch and no counter movement; the
// honest envelope is then accepted for all M keys.
func TestBatchMACFailClosed(t *testing.T) {
	e := pair(t)
	var s []msg.Share
	for i := 0; i < 8; i++ {
		s = append(s, msg.Share{Mode: msg.Bound, Type: fss.DCF, InBits: 16, OutBits: 16, AlphaShare: uint64(i)})
	}
	r0 := submit(t, e[0], msg.BatchMAC, s...)
	submit(t, e[1], msg.BatchMAC, s...)
	f := r0.Frames[0]
	if len(f) != 36+8*4 || len(r0.Frames) != 1 {
		t.Fatalf("batch envelope is %d bytes in %d frames", len(f), len(r0.Frames))
	}
	before := state(e[1])
	for i := range f {
		g := bytes.Clone(f)
		g[i] ^= 0x01
		if frame(t, e[1], g).Accepted {
			t.Fatalf("batch with byte %d flipped accepted", i)
		}
	}
	if state(e[1]) != before {
		t.Fatal("rejected batches moved state")
	}
	r := frame(t, e[1], f)
	if !r.Accepted || len(r.Counters) != 8 {
		t.Fatalf("honest batch: %+v", r)
	}
}

// TestCountersCommittedBeforeFrames: a store that fails refuses the
// submission and emits no frame.
func TestCountersCommittedBeforeFrames(t *testing.T) {
	e := pair(t)
	e[0].store = failStore{}
	_, err := e[0].Submit(ctx, &msg.SubmitRequest{Kind: msg.SubmitShares, Tier: msg.Keystream,
		Shares: []msg.Share{{Mode: msg.Bound, Type: fss.DPF, InBits: 8, OutBits: 8}}})
	if err == nil || state(e[0]).next != 0 {
		t.Fatal("a frame went out under an uncommitted counter")
	}
}

// TestGenErrorCarriesNoSecret: a failing Gen (here α and β too wide for
// the widths, which the reconstruction's masks normally rule out) must not
// name α or β in the error the module hands its host.
func TestGenErrorCarriesNoSecret(t *testing.T) {
	e := pair(t)[0]
	const alpha, beta = 0xA1F4A1F4, 0xB3B3B3B3
	p := fss.Params{Type: fss.DPF, InBits: 8, OutBits: 8}
	err := e.generate(msg.KordV1, p, []*output{{params: p, counter: 7, alpha: alpha, beta: beta}})
	if err == nil {
		t.Fatal("Gen accepted α and β wider than the key")
	}
	for _, v := range []uint64{alpha, beta} {
		for _, f := range []string{"%d", "%x", "%X", "%#x"} {
			if strings.Contains(err.Error(), fmt.Sprintf(f, v)) {
				t.Fatalf("error %q names a secret", err)
			}
		}
	}
}

// TestPendingKeysBatched: keys of several shapes, all accepted before any
// is collected (their generation waits for the first Collect, then runs in
// one batch per shape, in chunks), collected in a shuffled order, equal
// dealer Gen with the same roots; an abandon drops pending keys too.
func TestPendingKeysBatched(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	e := pair(t)
	type want struct {
		p           fss.Params
		alpha, beta uint64
	}
	wants := map[uint64]want{}
	shapes := []fss.Params{{Type: fss.DPF, InBits: 16, OutBits: 16}, {Type: fss.DCF, InBits: 32, OutBits: 7}, {Type: fss.DPF, InBits: 64, OutBits: 64}}
	for round := 0; round < 3; round++ {
		for _, tier := range []msg.Tier{msg.MAC, msg.BatchMAC, msg.Keystream} {
			var s [2][]msg.Share
			var ws []want
			k := 1 + rng.IntN(genChunk/2)
			if tier == msg.Keystream {
				k = 1 // one share per keystream submission
			}
			for range k {
				p := shapes[rng.IntN(len(shapes))]
				alpha, beta := rng.Uint64()&prg.Mask(p.InBits), rng.Uint64()&prg.Mask(p.OutBits)
				a0, a1 := split(rng, alpha, p.InBits)
				b0, b1 := split(rng, beta, p.OutBits)
				s[0] = append(s[0], msg.Share{Mode: msg.Bound, Type: p.Type, InBits: p.InBits, OutBits: p.OutBits, AlphaShare: a0, BetaShare: b0})
				s[1] = append(s[1], msg.Share{Mode: msg.Bound, Type: p.Type, InBits: p.InBits, OutBits: p.OutBits, AlphaShare: a1, BetaShare: b1})
				ws = append(ws, want{p, alpha, beta})
			}
			r0, r1 := submit(t, e[0], tier, s[0]...), submit(t, e[1], tier, s[1]...)
			for i := range r0.Frames {
				if !frame(t, e[1], r0.Frames[i]).Accepted || !frame(t, e[0], r1.Frames[i]).Accepted {
					t.Fatal("honest frame rejected")
				}
			}
			for i, w := range ws {
				wants[r0.FirstCounter+uint64(i)] = w
			}
		}
	}
	if e[0].pending != len(wants) || e[1].pending != len(wants) {
		t.Fatalf("pending %d/%d, want %d before any collect", e[0].pending, e[1].pending, len(wants))
	}
	// Drop the first two counters, then collect the rest in a random order.
	if _, err := e[0].Submit(ctx, &msg.SubmitRequest{Kind: msg.SubmitAbandon, Counter: 1}); err != nil {
		t.Fatal(err)
	}
	if _, err := e[0].Collect(ctx, &msg.CollectRequest{Counter: 1}); err == nil {
		t.Fatal("collected an abandoned key")
	}
	if e[0].pending != len(wants)-2 {
		t.Fatalf("pending %d after abandoning two, want %d", e[0].pending, len(wants)-2)
	}
	counters := make([]uint64, 0, len(wants))
	for c := range wants {
		if c > 1 {
			counters = append(counters, c)
		}
	}
	rng.Shuffle(len(counters), func(i, j int) { counters[i], counters[j] = counters[j], counters[i] })
	for _, c := range counters {
		w := wants[c]
		k0, k1 := collect(t, e[0], c), collect(t, e[1], c)
		root0, root1 := roots(e[0], c, msg.Bound, w.p, w.alpha, w.beta)
		d0, d1, err := fss.GenWithRoots(w.p, w.alpha, w.beta, root0, root1)
		if err != nil {
			t.Fatal(err)
		}
		if !k0.Equal(d0) || !k1.Equal(d1) {
			t.Fatalf("counter %d (%v): keys differ from dealer Gen", c, w.p)
		}
	}
	if e[0].pending != 0 || len(e[0].ready) != 0 || len(e[0].queue) != 0 {
		t.Fatalf("pending %d, ready %d, queued %d after collecting everything", e[0].pending, len(e[0].ready), len(e[0].queue))
	}
	// Outputs accepted and then all abandoned leave nothing queued.
	p := shapes[0]
	sh := msg.Share{Mode: msg.Bound, Type: p.Type, InBits: p.InBits, OutBits: p.OutBits}
	r0, r1 := submit(t, e[0], msg.MAC, sh, sh), submit(t, e[1], msg.MAC, sh, sh)
	for i := range r0.Frames {
		frame(t, e[1], r0.Frames[i])
		frame(t, e[0], r1.Frames[i])
	}
	if len(e[0].queue) != 2 {
		t.Fatalf("%d outputs queued, want 2", len(e[0].queue))
	}
	if _, err := e[0].Submit(ctx, &msg.SubmitRequest{Kind: msg.SubmitAbandon, Counter: r0.FirstCounter + 1}); err != nil {
		t.Fatal(err)
	}
	if e[0].pending != 0 || len(e[0].queue) != 0 {
		t.Fatalf("pending %d, queued %d after abandoning every output", e[0].pending, len(e[0].queue))
	}
}

// TestManyShapesBoundedGenerators: keys of more shapes than the module
// keeps batch generators for are all generated right, and the generator
// cache stays bounded.
func TestManyShapesBoundedGenerators(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 10))
	e := pair(t)
	for round := 0; round < 3; round++ {
		var s [2][]msg.Share
		var ps []fss.Params
		var ab [][2]uint64
		for l := 1; l <= maxGens+4; l++ {
			p := fss.Params{Type: fss.Type(1 + l%2), InBits: l, OutBits: 1 + (l*7)%64}
			alpha, beta := rng.Uint64()&prg.Mask(p.InBits), rng.Uint64()&prg.Mask(p.OutBits)
			a0, a1 := split(rng, alpha, p.InBits)
			b0, b1 := split(rng, beta, p.OutBits)
			s[0] = append(s[0], msg.Share{Mode: msg.Bound, Type: p.Type, InBits: l, OutBits: p.OutBits, AlphaShare: a0, BetaShare: b0})
			s[1] = append(s[1], msg.Share{Mode: msg.Bound, Type: p.Type, InBits: l, OutBits: p.OutBits, AlphaShare: a1, BetaShare: b1})
			ps, ab = append(ps, p), append(ab, [2]uint64{alpha, beta})
		}
		r0, r1 := submit(t, e[0], msg.BatchMAC, s[0]...), submit(t, e[1], msg.BatchMAC, s[1]...)
		if !frame(t, e[1], r0.Frames[0]).Accepted || !frame(t, e[0], r1.Frames[0]).Accepted {
			t.Fatal("honest frame rejected")
		}
		for i, p := range ps {
			c := r0.FirstCounter + uint64(i)
			k0, k1 := collect(t, e[0], c), collect(t, e[1], c)
			root0, root1 := roots(e[0], c, msg.Bound, p, ab[i][0], ab[i][1])
			d0, d1, err := fss.GenWithRoots(p, ab[i][0], ab[i][1], root0, root1)
			if err != nil {
				t.Fatal(err)
			}
			if !k0.Equal(d0) || !k1.Equal(d1) {
				t.Fatalf("%v: keys differ from dealer Gen", p)
			}
		}
		if len(e[0].gens) > maxGens {
			t.Fatalf("%d batch generators kept, want at most %d", len(e[0].gens), maxGens)
		}
	}
}

// Validate's fast accepting path and its error path agree on every share:
// random fields, biased toward the edges of each range.
func TestValidateFastPathAgrees(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 7))
	pick := func(vals ...uint64) uint64 {
		if r.IntN(4) == 0 {
			return r.Uint64()
		}
		return vals[r.IntN(len(vals))]
	}
	for range 200000 {
		in := int(pick(0, 1, 2, 31, 32, 63, 64, 65))
		out := int(pick(0, 1, 8, 63, 64, 65))
		s := msg.Share{
			Mode:       msg.Mode(pick(0, uint64(msg.Bound), uint64(msg.Derived), uint64(msg.Consume), 9)),
			Type:       fss.Type(pick(0, uint64(fss.DPF), uint64(fss.DCF), 3)),
			InBits:     in,
			OutBits:    out,
			AlphaShare: pick(0, 1, 1<<31, 1<<32, ^uint64(0)),
			BetaShare:  pick(0, 1, 255, 256, ^uint64(0)),
			DeriveBeta: r.IntN(3) == 0,
			Beta:       pick(0, 0, 1, 256, ^uint64(0)),
		}
		if fast, slow := validShare(s), invalidShare(0, s) == nil; fast != slow {
			t.Fatalf("%+v: fast path says valid=%v, the error path valid=%v", s, fast, slow)
		}
	}
}

// TestPairTags: the two shares of one key pair carry the same pair tag in
// every mode, and a pair whose (α, β) differ between the modules — a
// keystream-tier frame modified in flight, which no module can detect —
// carries different tags, so hosts comparing tags never hand it out.
func TestPairTags(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	e := pair(t)
	tags := func(c uint64, points []uint64) (t0, t1 [msg.PairTagSize]byte) {
		for b := 0; b < 2; b++ {
			r, err := e[b].Collect(ctx, &msg.CollectRequest{Counter: c, Points: points})
			if err != nil {
				t.Fatal(err)
			}
			if b == 0 {
				t0 = r.PairTag
			} else {
				t1 = r.PairTag
			}
		}
		return
	}
	seen := map[[msg.PairTagSize]byte]bool{}
	for _, mode := range []msg.Mode{msg.Bound, msg.Consume} {
		for _, tier := range []msg.Tier{msg.Keystream, msg.MAC, msg.BatchMAC} {
			for _, tamper := range []bool{false, true} {
				if tamper && tier != msg.Keystream {
					continue // the mac tiers reject a modified frame (module/attack)
				}
				alpha, beta := rng.Uint64()&prg.Mask(16), rng.Uint64()&prg.Mask(16)
				a0, a1 := split(rng, alpha, 16)
				b0, b1 := split(rng, beta, 16)
				s0 := msg.Share{Mode: mode, Type: fss.DPF, InBits: 16, OutBits: 16, AlphaShare: a0, BetaShare: b0}
				s1 := s0
				s1.AlphaShare, s1.BetaShare = a1, b1
				r0, r1 := submit(t, e[0], tier, s0), submit(t, e[1], tier, s1)
				f := bytes.Clone(r0.Frames[0])
				if tamper {
					f[0] ^= 1 // party 0's α share, low bit: still in range
				}
				if !frame(t, e[1], f).Accepted || !frame(t, e[0], r1.Frames[0]).Accepted {
					t.Fatal("frame rejected")
				}
				var points []uint64
				if mode == msg.Consume {
					points = []uint64{alpha}
				}
				t0, t1 := tags(r0.FirstCounter, points)
				if tamper == (t0 == t1) {
					t.Fatalf("%v %v tampered=%v: tags equal=%v", mode, tier, tamper, t0 == t1)
				}
				if seen[t0] {
					t.Fatal("a pair tag repeated across counters")
				}
				seen[t0] = true
			}
		}
	}
	s := msg.Share{Mode: msg.Derived, Type: fss.DCF, InBits: 20, OutBits: 12, DeriveBeta: true}
	c := submit(t, e[0], 0, s).FirstCounter
	submit(t, e[1], 0, s)
	if t0, t1 := tags(c, nil); t0 != t1 || seen[t0] {
		t.Fatal("derived pair: tags differ or repeat")
	}
}

// TestKeyBuffersReused: key buffers go back to the pool only when every
// key in them was collected or dropped, and a reused buffer never changes
// a key still waiting to be collected.
func TestKeyBuffersReused(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	e := pair(t)
	p := fss.Params{Type: fss.DPF, InBits: 20, OutBits: 16}
	type want struct{ alpha, beta uint64 }
	wants := map[uint64]want{}
	// batch submits and accepts n keys and returns their counters.
	batch := func(n int) []uint64 {
		var s [2][]msg.Share
		var ws []want
		for range n {
			alpha, beta := rng.Uint64()&prg.Mask(p.InBits), rng.Uint64()&prg.Mask(p.OutBits)
			a0, a1 := split(rng, alpha, p.InBits)
			b0, b1 := split(rng, beta, p.OutBits)
			s[0] = append(s[0], msg.Share{Mode: msg.Bound, Type: p.Type, InBits: p.InBits, OutBits: p.OutBits, AlphaShare: a0, BetaShare: b0})
			s[1] = append(s[1], msg.Share{Mode: msg.Bound, Type: p.Type, InBits: p.InBits, OutBits: p.OutBits, AlphaShare: a1, BetaShare: b1})
			ws = append(ws, want{alpha, beta})
		}
		r0, r1 := submit(t, e[0], msg.BatchMAC, s[0]...), submit(t, e[1], msg.BatchMAC, s[1]...)
		if !frame(t, e[1], r0.Frames[0]).Accepted || !frame(t, e[0], r1.Frames[0]).Accepted {
			t.Fatal("honest frame rejected")
		}
		var cs []uint64
		for i, w := range ws {
			c := r0.FirstCounter + uint64(i)
			wants[c] = w
			cs = append(cs, c)
		}
		return cs
	}
	check := func(c uint64) {
		t.Helper()
		w := wants[c]
		k0, k1 := collect(t, e[0], c), collect(t, e[1], c)
		root0, root1 := roots(e[0], c, msg.Bound, p, w.alpha, w.beta)
		d0, d1, err := fss.GenWithRoots(p, w.alpha, w.beta, root0, root1)
		if err != nil {
			t.Fatal(err)
		}
		if !k0.Equal(d0) || !k1.Equal(d1) {
			t.Fatalf("counter %d: keys differ from dealer Gen", c)
		}
	}
	a := batch(40)
	for _, c := range a[:20] { // generates all of a, collects half
		check(c)
	}
	if n := len(e[0].keys.free); n != 0 {
		t.Fatalf("%d buffers free while half of a batch is uncollected", n)
	}
	b := batch(40)
	check(b[0]) // generates b into a new buffer
	for _, c := range a[20:] {
		check(c)
	}
	if n := len(e[0].keys.free); n != 1 {
		t.Fatalf("%d buffers free after a whole batch was collected, want 1", n)
	}
	c := batch(40)
	check(c[0]) // generates c into a's buffer
	if n := len(e[0].keys.free); n != 0 {
		t.Fatalf("%d buffers free after reuse, want 0", n)
	}
	for _, x := range append(b[1:], c[1:]...) {
		check(x)
	}
}

// roots are the root seeds a module derives for the key at counter c.
func roots(e *Engine, c uint64, mode msg.Mode, p fss.Params, alpha, beta uint64) (prg.Block, prg.Block) {
	return e.prf.Roots(c, byte(mode), byte(p.Type), byte(p.InBits), byte(p.OutBits), alpha, beta)
}
