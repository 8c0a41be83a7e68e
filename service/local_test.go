package service

import (
	"bytes"
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/kord-fss/kord/client"
	"github.com/kord-fss/kord/fss"
	"github.com/kord-fss/kord/internal/both"
	"github.com/kord-fss/kord/module/moduletest"
	"github.com/kord-fss/kord/module/msg"
	"github.com/kord-fss/kord/module/socket"
	pb "github.com/kord-fss/kord/proto/kordpb"
)

// localPair starts the two parties in process over paired durable modules.
func localPair(t *testing.T, c Config, tap func(*pb.PeerMsg)) *LocalPair {
	t.Helper()
	d := moduletest.DurablePair(t, 0)
	lp, err := NewLocalPair([2]socket.Module{socket.Local(d[0]), socket.Local(d[1])}, c, LocalLink{Tap: tap})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(lp.Close)
	return lp
}

// requestBoth asks both parties at once.
func requestBoth(t *testing.T, lp *LocalPair, reqs [2][]*pb.KeyRequest) [2][]Answer {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	return answerBoth(t, func(b int) ([]Answer, error) { return lp.Request(ctx, b, &pb.KeyRequests{Requests: reqs[b]}) })
}

// answerBoth runs ask(b) for both parties at once and returns their
// answers; an error fails t.
func answerBoth(t *testing.T, ask func(b int) ([]Answer, error)) [2][]Answer {
	t.Helper()
	out, err := both.Pair(ask)
	if err != nil {
		t.Fatalf("request: %v", err)
	}
	return out
}

func parseAnswer(t *testing.T, a Answer) *fss.Key {
	t.Helper()
	if a.ErrorClass != "" || len(a.Outputs) != 1 {
		t.Fatalf("request %d: class %q (%s), %d outputs", a.ID, a.ErrorClass, a.Error, len(a.Outputs))
	}
	k, err := fss.ParseKey(a.Outputs[0].Key)
	if err != nil {
		t.Fatalf("request %d: %v", a.ID, err)
	}
	return k
}

// TestLocalPairRunsTheSessionProtocol: the two parties' session (leader
// and follower) runs over the in-process link with no gRPC peer client,
// and every pair it delivers evaluates to its point function, on each
// tier and in derived mode.
func TestLocalPairRunsTheSessionProtocol(t *testing.T) {
	lp := localPair(t, Config{Batch: 16, InFlight: 2}, nil)
	if lp.Parties[0].peer != nil || lp.Parties[0].local == nil {
		t.Fatal("party 0 of a LocalPair has a gRPC peer client")
	}
	p := fss.Params{Type: fss.DCF, InBits: 16, OutBits: 16}
	base := uint64(1)
	for _, tier := range []string{"otp", "mac", "batchmac"} {
		ws, reqs := boundRequests(p, base, 40, tier)
		ans := requestBoth(t, lp, reqs)
		for i, w := range ws {
			k0, k1 := parseAnswer(t, ans[0][i]), parseAnswer(t, ans[1][i])
			if ans[0][i].Outputs[0].Counter != ans[1][i].Outputs[0].Counter || ans[0][i].Outputs[0].PairTag != ans[1][i].Outputs[0].PairTag {
				t.Fatalf("%s request %d: counters %d/%d or pair tags differ", tier, ans[0][i].ID,
					ans[0][i].Outputs[0].Counter, ans[1][i].Outputs[0].Counter)
			}
			checkPair(t, k0, k1, w.alpha, w.beta)
			ans[0][i].Wipe()
			ans[1][i].Wipe()
		}
		base += uint64(len(ws))
	}
	// Derived: α drawn inside both modules; the shares add up to it.
	dp := fss.Params{Type: fss.DPF, InBits: 12, OutBits: 8}
	var reqs [2][]*pb.KeyRequest
	for b := range 2 {
		reqs[b] = []*pb.KeyRequest{client.Derived(base, dp, 24, 0, true)}
	}
	ans := requestBoth(t, lp, reqs)
	o0, o1 := ans[0][0].Outputs, ans[1][0].Outputs
	if ans[0][0].ErrorClass != "" || ans[1][0].ErrorClass != "" || len(o0) != 24 || len(o1) != 24 {
		t.Fatalf("derived: %q / %q, %d / %d outputs", ans[0][0].Error, ans[1][0].Error, len(o0), len(o1))
	}
	ma, mb := uint64(1)<<dp.InBits-1, uint64(1)<<dp.OutBits-1
	for i := range o0 {
		k0, err0 := fss.ParseKey(o0[i].Key)
		k1, err1 := fss.ParseKey(o1[i].Key)
		if err0 != nil || err1 != nil {
			t.Fatal(err0, err1)
		}
		checkPair(t, k0, k1, (o0[i].AlphaShare+o1[i].AlphaShare)&ma, (o0[i].BetaShare+o1[i].BetaShare)&mb)
	}
	if r := lp.Parties[0].rounds.Load(); r == 0 {
		t.Fatal("party 0 counted no frame exchange")
	}
}

// TestLocalPairTamperedFrameNeverDelivered: a keystream frame altered on
// the in-process link is caught by the session protocol exactly as on
// gRPC — no key of the batch is delivered at either site, each request
// fails tampered or spent (α spent) — and the session resynchronises:
// later requests are delivered.
func TestLocalPairTamperedFrameNeverDelivered(t *testing.T) {
	var flip atomic.Bool
	flip.Store(true)
	lp := localPair(t, Config{Batch: 8, InFlight: 1}, func(m *pb.PeerMsg) {
		if b := m.GetBatch(); b != nil && len(b.FrameData) > 0 && flip.CompareAndSwap(true, false) {
			b.FrameData[len(b.FrameData)/2] ^= 1
		}
	})
	p := fss.Params{Type: fss.DPF, InBits: 16, OutBits: 8}
	_, reqs := boundRequests(p, 1, 8, "otp")
	ans := requestBoth(t, lp, reqs)
	for b := range 2 {
		for _, a := range ans[b] {
			if a.ErrorClass != ErrClassTampered && a.ErrorClass != ErrClassSpent || len(a.Outputs) != 0 {
				t.Fatalf("party %d request %d: class %q with %d outputs, want tampered or spent and none", b, a.ID, a.ErrorClass, len(a.Outputs))
			}
			if pb.AlphaReusable(a.ErrorClass) {
				t.Fatalf("party %d request %d: class %q lets α be used again after its frames were opened", b, a.ID, a.ErrorClass)
			}
		}
	}
	if flip.Load() {
		t.Fatal("no frame was altered")
	}
	ws, reqs := boundRequests(p, 100, 8, "otp")
	ans = requestBoth(t, lp, reqs)
	for i, w := range ws {
		checkPair(t, parseAnswer(t, ans[0][i]), parseAnswer(t, ans[1][i]), w.alpha, w.beta)
	}
	if s := lp.Parties[0].sessions.Load(); s < 2 {
		t.Fatalf("party 0 had %d sessions, want a resync after the tampered batch", s)
	}
}

// TestTakeSlab: the answers of a bulk run hand over their slab whole, and
// it holds exactly what the answers' outputs held (the reference: keys,
// pair tags, counters, derived mask shares); answers that are not the
// whole slab keep their outputs.
func TestTakeSlab(t *testing.T) {
	lp := localPair(t, Config{Batch: 64, InFlight: 2}, nil)
	p := fss.Params{Type: fss.DCF, InBits: 16, OutBits: 16}
	derived := func(id uint64) [2][]*pb.KeyRequest {
		r := &pb.KeyRequest{Id: id, Mode: "derived", Type: "dcf", InBits: 16, OutBits: 16, Count: 32, Beta: 3}
		return [2][]*pb.KeyRequest{{r}, {r}}
	}
	_, bound := boundRequests(p, 100, 32, "mac")
	for _, c := range []struct {
		name string
		reqs [2][]*pb.KeyRequest
	}{{"derived", derived(1)}, {"bound", bound}} {
		ans := requestBoth(t, lp, c.reqs)
		for b := range 2 {
			type out struct {
				key          []byte
				tag          [msg.PairTagSize]byte
				counter      uint64
				alpha, betaS uint64
			}
			var ref []out
			for _, a := range ans[b] {
				for _, o := range a.Outputs {
					ref = append(ref, out{bytes.Clone(o.Key), o.PairTag, o.Counter, o.AlphaShare, o.BetaShare})
				}
			}
			if len(ref) != 32 {
				t.Fatalf("%s: %d outputs", c.name, len(ref))
			}
			if c.name == "bound" {
				if _, ok := TakeSlab(ans[b][1:]); ok {
					t.Fatal("answers without the slab's first key handed it over")
				}
				if _, ok := TakeSlab(ans[b][:len(ans[b])-1]); ok {
					t.Fatal("answers without the slab's last key handed it over")
				}
				if len(ans[b][0].Outputs) != 1 || !bytes.Equal(ans[b][0].Outputs[0].Key, ref[0].key) {
					t.Fatal("a refused TakeSlab changed the answers")
				}
			}
			s, ok := TakeSlab(ans[b])
			if !ok {
				t.Fatalf("%s: party %d: the whole slab was not handed over", c.name, b)
			}
			if s.N != len(ref) || s.First != ref[0].counter {
				t.Fatalf("%s: slab of %d keys at %d", c.name, s.N, s.First)
			}
			for i, r := range ref {
				if !bytes.Equal(s.Key(i), r.key) || !bytes.Equal(s.PairTags[i*msg.PairTagSize:(i+1)*msg.PairTagSize], r.tag[:]) ||
					s.First+uint64(i) != r.counter {
					t.Fatalf("%s: party %d: slab key %d differs from the answer's output", c.name, b, i)
				}
				if c.name == "derived" && (s.AlphaShares[i] != r.alpha || s.BetaShares[i] != r.betaS) {
					t.Fatalf("derived: party %d: slab mask shares %d differ", b, i)
				}
			}
			for _, a := range ans[b] {
				if a.Outputs != nil {
					t.Fatal("an answer kept its outputs after TakeSlab")
				}
				a.Wipe()
			}
			if !bytes.Equal(s.Key(0), ref[0].key) {
				t.Fatal("an emptied answer's Wipe wiped the taken slab")
			}
			s.Wipe()
		}
	}
}

// TestRequestBulk: a bound bulk request is one job of N keys whose pairs
// evaluate to their point functions, on each tier; malformed ones (N = 0,
// N over MaxCount, share counts that differ, an unknown tier or shape, a
// share out of range) are answered bad_request with no counter taken.
func TestRequestBulk(t *testing.T) {
	lp := localPair(t, Config{Batch: 64, InFlight: 2}, nil)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	p := fss.Params{Type: fss.DPF, InBits: 12, OutBits: 12}
	const n = 40
	bulkBoth := func(rs [2][]BoundBulk) [2][]Answer {
		return answerBoth(t, func(b int) ([]Answer, error) { return lp.RequestBulk(ctx, b, rs[b]) })
	}
	id := uint64(1)
	for _, tier := range []msg.Tier{msg.Keystream, msg.MAC, msg.BatchMAC} {
		var rs [2][]BoundBulk
		alpha, beta := make([]uint64, n), make([]uint64, n)
		for b := range 2 {
			rs[b] = []BoundBulk{{ID: id, Tier: tier, Params: p, AlphaShares: make([]uint64, n), BetaShares: make([]uint64, n)}}
		}
		for i := range n {
			alpha[i], beta[i] = uint64(i*97)&0xfff, uint64(i+1)
			rs[0][0].AlphaShares[i], rs[0][0].BetaShares[i] = uint64(i*13)&0xfff, uint64(i*7)&0xfff
			rs[1][0].AlphaShares[i] = (alpha[i] - rs[0][0].AlphaShares[i]) & 0xfff
			rs[1][0].BetaShares[i] = (beta[i] - rs[0][0].BetaShares[i]) & 0xfff
		}
		id++
		ans := bulkBoth(rs)
		for b := range 2 {
			if ans[b][0].ErrorClass != "" || len(ans[b][0].Outputs) != n {
				t.Fatalf("%v: party %d: %s %s, %d outputs", tier, b, ans[b][0].ErrorClass, ans[b][0].Error, len(ans[b][0].Outputs))
			}
		}
		for i := range n {
			k0, err0 := fss.ParseKey(ans[0][0].Outputs[i].Key)
			k1, err1 := fss.ParseKey(ans[1][0].Outputs[i].Key)
			if err0 != nil || err1 != nil {
				t.Fatal(err0, err1)
			}
			if err := fss.CheckPair(k0, k1, alpha[i], beta[i], (alpha[i]-1)&0xfff, alpha[i], (alpha[i]+1)&0xfff); err != nil {
				t.Fatalf("%v: key %d: %v", tier, i, err)
			}
		}
		for b := range 2 {
			ans[b][0].Wipe()
		}
	}
	next := func() (c [2]uint64) {
		for b := range 2 {
			r, err := lp.Parties[b].mod.Poll(ctx, &msg.PollRequest{})
			if err != nil {
				t.Fatal(err)
			}
			c[b] = r.NextCounter
		}
		return c
	}
	before := next()
	big := make([]uint64, MaxCount+1)
	bad := []BoundBulk{
		{Tier: msg.MAC, Params: p},
		{Tier: msg.MAC, Params: p, AlphaShares: big, BetaShares: big},
		{Tier: msg.MAC, Params: p, AlphaShares: make([]uint64, 3), BetaShares: make([]uint64, 2)},
		{Tier: 0, Params: p, AlphaShares: make([]uint64, 3), BetaShares: make([]uint64, 3)},
		{Tier: msg.MAC, Params: fss.Params{Type: fss.DPF, InBits: 0, OutBits: 8}, AlphaShares: make([]uint64, 3), BetaShares: make([]uint64, 3)},
		{Tier: msg.MAC, Params: p, AlphaShares: []uint64{1 << 12}, BetaShares: []uint64{0}},
	}
	var rs [2][]BoundBulk
	for i := range bad {
		bad[i].ID = id + uint64(i)
	}
	rs[0], rs[1] = bad, bad
	ans := bulkBoth(rs)
	for b := range 2 {
		for i, a := range ans[b] {
			if a.ErrorClass != ErrClassBadRequest || a.Outputs != nil {
				t.Fatalf("party %d: malformed bulk %d answered %q (%s)", b, i, a.ErrorClass, a.Error)
			}
		}
	}
	if after := next(); after != before {
		t.Fatalf("malformed bulks moved the counters: %v → %v", before, after)
	}
}
