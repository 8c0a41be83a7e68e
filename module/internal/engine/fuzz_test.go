package engine

import (
	"bytes"
	"errors"
	"testing"

	"github.com/kord-fss/kord/fss"
	"github.com/kord-fss/kord/module/msg"
)

var fuzzShape = msg.Share{Mode: msg.Bound, Type: fss.DCF, InBits: 12, OutBits: 20, AlphaShare: 5, BetaShare: 9}

func tierOf(sel uint8) msg.Tier { return msg.Tier(1 + sel%3) }

// FuzzPeerFrame feeds arbitrary bytes as a peer frame to a module with a
// pending request of each tier. Whatever the bytes: no panic; a rejected
// frame moves no counter and dispatches nothing; on the mac tiers only the
// honest frame is accepted.
func FuzzPeerFrame(f *testing.F) {
	e := pair(f)
	for sel := uint8(0); sel < 3; sel++ {
		r := submit(f, e[0], tierOf(sel), fuzzShape, fuzzShape)
		submit(f, e[1], tierOf(sel), fuzzShape, fuzzShape)
		for _, fr := range r.Frames {
			f.Add(sel, fr)
			f.Add(sel, fr[:len(fr)-1])
			f.Add(sel, append(bytes.Clone(fr), 0))
			frame(f, e[1], fr)
		}
		e[1].Submit(ctx, &msg.SubmitRequest{Kind: msg.SubmitAbandon, Counter: 1 << 62})
		e[0].Submit(ctx, &msg.SubmitRequest{Kind: msg.SubmitAbandon, Counter: 1 << 62})
	}
	f.Add(uint8(1), []byte{})
	f.Fuzz(func(t *testing.T, sel uint8, data []byte) {
		tier := tierOf(sel)
		r0 := submit(t, e[0], tier, fuzzShape)
		r1 := submit(t, e[1], tier, fuzzShape)
		before := state(e[1])
		r := frame(t, e[1], data)
		if !r.Accepted {
			if state(e[1]) != before {
				t.Fatal("a rejected frame moved state")
			}
			if !frame(t, e[1], r0.Frames[0]).Accepted {
				t.Fatal("honest frame rejected after a rejected one")
			}
		} else if tier != msg.Keystream && !bytes.Equal(data, r0.Frames[0]) {
			t.Fatal("a forged mac-tier frame was accepted")
		}
		if !frame(t, e[0], r1.Frames[0]).Accepted {
			t.Fatal("honest frame rejected")
		}
		collect(t, e[0], r0.FirstCounter)
		collect(t, e[1], r0.FirstCounter)
	})
}

// FuzzProvision feeds arbitrary bytes as each of the three pairing
// messages. No panic; a module pairs only on the honest message.
func FuzzProvision(f *testing.F) {
	e := pair(f)
	_ = e
	f.Add(uint8(0), []byte("H\x01"))
	f.Add(uint8(1), []byte("R\x01"))
	f.Add(uint8(2), []byte("F\x01"))
	f.Fuzz(func(t *testing.T, step uint8, data []byte) {
		var d [2]*Engine
		for b := 0; b < 2; b++ {
			var err error
			if d[b], err = New(Config{Party: b, Secret: []byte("provisioning-secret-0123")}); err != nil {
				t.Fatal(err)
			}
		}
		step %= 3
		r, err := d[0].Provision(ctx, &msg.ProvisionRequest{})
		if err != nil {
			t.Fatal(err)
		}
		target := []*Engine{d[1], d[0], d[1]}
		for i := uint8(0); i < step; i++ {
			if r, err = target[i].Provision(ctx, &msg.ProvisionRequest{Message: r.Message}); err != nil {
				t.Fatal(err)
			}
		}
		out, err := target[step].Provision(ctx, &msg.ProvisionRequest{Message: data})
		if err == nil && out.Paired && !bytes.Equal(data, r.Message) {
			t.Fatal("paired on a forged message")
		}
		if err != nil && target[step].paired {
			t.Fatal("paired despite an error")
		}
	})
}

// FuzzSubmitShares feeds arbitrary share requests: either a bad-request
// error and nothing moved, or frames for exactly the framed requests.
func FuzzSubmitShares(f *testing.F) {
	e := pair(f)
	f.Add(uint8(1), uint8(1), uint8(1), 16, 16, uint64(3), uint64(4), false, uint64(0))
	f.Add(uint8(2), uint8(2), uint8(2), 64, 1, uint64(0), uint64(0), true, uint64(0))
	f.Add(uint8(4), uint8(1), uint8(3), 0, 65, ^uint64(0), uint64(1), false, uint64(7))
	f.Add(uint8(2), uint8(1), uint8(0x12), 32, 32, uint64(3), uint64(4), false, uint64(0))
	f.Add(uint8(2), uint8(2), uint8(0x11), 32, 32, uint64(0), uint64(0), false, uint64(1))
	f.Fuzz(func(t *testing.T, tier, mode, typ uint8, l, n int, a, b uint64, db bool, beta uint64) {
		// typ's high nibble is the profile (msg.TypeByte): 0x12 is llama DCF.
		s := msg.Share{Mode: msg.Mode(mode), Profile: msg.Profile(typ >> 4), Type: fss.Type(typ & 15), InBits: l, OutBits: n, AlphaShare: a, BetaShare: b, DeriveBeta: db, Beta: beta}
		before := state(e[0])
		r, err := e[0].Submit(ctx, &msg.SubmitRequest{Kind: msg.SubmitShares, Tier: msg.Tier(tier), Shares: []msg.Share{s}})
		if err != nil {
			if state(e[0]) != before {
				t.Fatal("a refused request moved state")
			}
			return
		}
		if (s.Mode == msg.Derived) != (len(r.Frames) == 0) {
			t.Fatalf("%d frames for mode %v", len(r.Frames), s.Mode)
		}
		e[0].Submit(ctx, &msg.SubmitRequest{Kind: msg.SubmitAbandon, Counter: r.FirstCounter})
	})
}

// FuzzBulkFrame feeds arbitrary bytes as the peer's one frame of a bound
// bulk, each tier. No panic; a rejected frame moves nothing and the honest
// frame still opens; on the mac tiers only the honest frame is accepted.
func FuzzBulkFrame(f *testing.F) {
	e := pair(f)
	b := msg.Bulk{Mode: msg.Bound, Type: fss.DCF, InBits: 12, OutBits: 20, N: 3,
		AlphaShares: []uint64{5, 6, 7}, BetaShares: []uint64{9, 10, 11}}
	for sel := uint8(0); sel < 3; sel++ {
		r, err := e[0].Submit(ctx, &msg.SubmitRequest{Kind: msg.SubmitBulk, Tier: tierOf(sel), Bulk: &b})
		if err != nil {
			f.Fatal(err)
		}
		if _, err := e[1].Submit(ctx, &msg.SubmitRequest{Kind: msg.SubmitBulk, Tier: tierOf(sel), Bulk: &b}); err != nil {
			f.Fatal(err)
		}
		fr := r.Frames[0]
		f.Add(sel, fr)
		f.Add(sel, fr[:len(fr)-1])
		f.Add(sel, append(bytes.Clone(fr), 0))
		for x := range 2 {
			e[x].Submit(ctx, &msg.SubmitRequest{Kind: msg.SubmitAbandon, Counter: 1 << 62})
		}
	}
	f.Add(uint8(0), []byte{})
	f.Fuzz(func(t *testing.T, sel uint8, data []byte) {
		tier := tierOf(sel)
		r0, err := e[0].Submit(ctx, &msg.SubmitRequest{Kind: msg.SubmitBulk, Tier: tier, Bulk: &b})
		if err != nil {
			t.Fatal(err)
		}
		r1, err := e[1].Submit(ctx, &msg.SubmitRequest{Kind: msg.SubmitBulk, Tier: tier, Bulk: &b})
		if err != nil {
			t.Fatal(err)
		}
		before := state(e[1])
		r := frame(t, e[1], data)
		if !r.Accepted {
			if state(e[1]) != before {
				t.Fatal("a rejected bulk frame moved state")
			}
			if !frame(t, e[1], r0.Frames[0]).Accepted {
				t.Fatal("honest bulk frame rejected after a rejected one")
			}
		} else if tier != msg.Keystream && !bytes.Equal(data, r0.Frames[0]) {
			t.Fatal("a forged mac-tier bulk frame was accepted")
		}
		if !frame(t, e[0], r1.Frames[0]).Accepted {
			t.Fatal("honest bulk frame rejected")
		}
		for x := range 2 {
			c, err := e[x].Collect(ctx, &msg.CollectRequest{Counter: r0.FirstCounter, Count: b.N})
			if err != nil {
				t.Fatal(err)
			}
			c.Slab.Wipe()
		}
	})
}

// FuzzSubmitBulk feeds arbitrary bulk requests. No panic; a refused one is
// ErrBadRequest and moves nothing; an accepted one moves the next counter
// by exactly N and its outputs can be collected (derived) or abandoned.
func FuzzSubmitBulk(f *testing.F) {
	e := pair(f)
	f.Add(uint8(2), uint8(1), uint8(8), uint8(8), uint16(3), uint8(0), uint8(0), true, uint64(0), uint8(3))
	f.Add(uint8(1), uint8(2), uint8(12), uint8(20), uint16(2), uint8(2), uint8(2), false, uint64(0), uint8(2))
	f.Add(uint8(1), uint8(2), uint8(12), uint8(20), uint16(2), uint8(1), uint8(2), false, uint64(0), uint8(1))
	f.Add(uint8(2), uint8(1), uint8(8), uint8(8), uint16(0), uint8(0), uint8(0), false, uint64(7), uint8(0))
	f.Add(uint8(2), uint8(0x12), uint8(32), uint8(32), uint16(9), uint8(0), uint8(0), false, uint64(1), uint8(0))
	f.Add(uint8(1), uint8(0x12), uint8(12), uint8(20), uint16(2), uint8(2), uint8(2), false, uint64(0), uint8(2))
	f.Fuzz(func(t *testing.T, mode, typ, in, out uint8, n uint16, na, nb uint8, deriveBeta bool, beta uint64, tier uint8) {
		b := &msg.Bulk{Mode: msg.Mode(mode), Profile: msg.Profile(typ >> 4), Type: fss.Type(typ & 15), InBits: int(in), OutBits: int(out), N: int(n) % 64,
			AlphaShares: make([]uint64, na%70), BetaShares: make([]uint64, nb%70), DeriveBeta: deriveBeta, Beta: beta}
		for i := range b.AlphaShares {
			b.AlphaShares[i] = uint64(i) * 0x9e3779b97f4a7c15 >> (64 - min(63, max(1, int(in))))
		}
		before := state(e[0])
		r, err := e[0].Submit(ctx, &msg.SubmitRequest{Kind: msg.SubmitBulk, Tier: msg.Tier(tier % 5), Bulk: b})
		if err != nil {
			if !errors.Is(err, ErrBadRequest) {
				t.Fatalf("refused with %v, not ErrBadRequest", err)
			}
			if state(e[0]) != before {
				t.Fatal("a refused bulk moved state")
			}
			return
		}
		if st := state(e[0]); st.next != before.next+uint64(b.N) || r.Count != b.N {
			t.Fatalf("an accepted bulk of %d moved next %d → %d", b.N, before.next, st.next)
		}
		if b.Mode == msg.Derived {
			c, err := e[0].Collect(ctx, &msg.CollectRequest{Counter: r.FirstCounter, Count: b.N})
			if err != nil {
				t.Fatal(err)
			}
			c.Slab.Wipe()
		} else {
			e[0].Submit(ctx, &msg.SubmitRequest{Kind: msg.SubmitAbandon, Counter: 1 << 62})
		}
	})
}
