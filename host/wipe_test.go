package host

import (
	"context"
	"math/rand/v2"
	"testing"

	"github.com/kord-fss/kord/fss"
	"github.com/kord-fss/kord/internal/prg"
	"github.com/kord-fss/kord/module/msg"
)

// TestFailedCollectWipesBatch: a request with a consume point outside the
// domain is refused by both parties; the call fails from it on, spent (the
// requests after it were answered, their frames opened, and are dropped),
// no key or evaluation share stays ready inside either module, and the
// pair keeps working.
func TestFailedCollectWipesBatch(t *testing.T) {
	lp := newPair(t, 4)
	ctx := context.Background()
	var reqs [2][]Request
	for b := 0; b < 2; b++ {
		s := msg.Share{Mode: msg.Consume, Type: fss.DPF, InBits: 8, OutBits: 8}
		reqs[b] = []Request{{Share: s, Points: []uint64{1}}, {Share: s, Points: []uint64{256}}, {Share: s, Points: []uint64{2}}}
	}
	_, err := lp.Generate(ctx, msg.MAC, reqs)
	if err == nil {
		t.Fatal("a point outside the domain was accepted")
	}
	if AlphaReusable(err) {
		t.Fatalf("%v: the collect failed after the frames were opened, so α is spent", err)
	}
	for b := 0; b < 2; b++ {
		p, err := lp.Devices[b].Poll(ctx, &msg.PollRequest{})
		if err != nil {
			t.Fatal(err)
		}
		if p.Ready != 0 || p.Pending != 0 {
			t.Fatalf("module %d still holds %d ready and %d pending outputs of the failed batch", b, p.Ready, p.Pending)
		}
	}
	for b := 0; b < 2; b++ {
		reqs[b][1].Points = []uint64{255}
	}
	if _, err := lp.Generate(ctx, msg.MAC, reqs); err != nil {
		t.Fatal(err)
	}
}

// TestDirectModuleUseResyncs: a caller that also uses the two modules
// directly (as infer.ModuleCorr does) moves their counters outside the
// parties' session; the parties notice at their next batch, resynchronise
// (witness exchange) and go on delivering pairs that verify.
func TestDirectModuleUseResyncs(t *testing.T) {
	rng := rand.New(rand.NewPCG(21, 22))
	lp := newPair(t, 8)
	ctx := context.Background()
	p := fss.Params{Type: fss.DPF, InBits: 16, OutBits: 16}
	for round := range 3 {
		d, err := lp.DerivedKeys(ctx, p, 12, 0, true)
		if err != nil {
			t.Fatalf("round %d: %v", round, err)
		}
		for i := range d[0] {
			a := (d[0][i].AlphaShare + d[1][i].AlphaShare) & prg.Mask(16)
			b := (d[0][i].BetaShare + d[1][i].BetaShare) & prg.Mask(16)
			checkPair(t, rng, d[0][i].Key, d[1][i].Key, a, b)
		}
		// Out of band: one derived key straight from both modules.
		var tags [2][msg.PairTagSize]byte
		for b := range 2 {
			s := msg.Share{Mode: msg.Derived, Type: fss.DPF, InBits: 8, OutBits: 8, DeriveBeta: true}
			sub, err := lp.Devices[b].Submit(ctx, &msg.SubmitRequest{Kind: msg.SubmitShares, Tier: msg.MAC, Shares: []msg.Share{s}})
			if err != nil {
				t.Fatal(err)
			}
			cr, err := lp.Devices[b].Collect(ctx, &msg.CollectRequest{Counter: sub.FirstCounter})
			if err != nil {
				t.Fatal(err)
			}
			tags[b] = cr.PairTag
			clear(cr.Key)
		}
		if tags[0] != tags[1] {
			t.Fatalf("round %d: the modules' direct outputs do not pair", round)
		}
	}
}
