package host

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/kord-fss/kord/fss/llama"
	"github.com/kord-fss/kord/module/msg"
)

func gateRuns(t *testing.T, sh [2]*msg.CorrShares) []*llama.GateRun {
	t.Helper()
	runs, err := msg.SplitGates(sh)
	if err != nil {
		t.Fatal(err)
	}
	return runs
}

// TestLlamaGatesLocalPair: LLAMA gate packs from the in-process module
// pair — each module emits only its own party's packs and mask shares —
// are byte-identical to kord's in-process dealer given the same roots,
// masks and share splits, and evaluate (LLAMA's online step) to ReLU, the
// exact shift and the signed max, at widths 8, 16, 37 and 64.
func TestLlamaGatesLocalPair(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	lp, err := NewLocalPair(ctx, LocalOptions{Workers: 3})
	if err != nil {
		t.Fatal(err)
	}
	defer lp.Close()
	seen := map[uint64]bool{}
	for _, c := range []msg.Correlation{
		msg.LlamaGates(8, 3, 2, 1, 2),
		msg.LlamaGates(16, 2, 3, 7, 2),
		msg.LlamaGates(37, 1, 2, 12, 1),
		msg.LlamaGates(64, 2, 2, 63, 2),
		msg.LlamaGates(64, 0, 0, 0, 1),
		msg.LlamaGates(24, 300, 200, 9, 150), // runs over llama.BatchKeys: the module's workers
	} {
		sh, err := lp.Correlation(ctx, c)
		if err != nil {
			t.Fatalf("%+v: %v", c, err)
		}
		if sh[0].Corr != c || sh[0].Blocks != c.Packs() {
			t.Fatalf("answer for %+v is for %+v (%d counters)", c, sh[0].Corr, sh[0].Blocks)
		}
		if string(sh[0].Packs) == string(sh[1].Packs) {
			t.Fatal("both parties got the same packs")
		}
		for _, r := range gateRuns(t, sh) {
			if err := llama.RedealGates(r); err != nil {
				t.Fatal(err)
			}
			if err := llama.CheckGates(r, max(2, 1200/r.N)); err != nil {
				t.Fatal(err)
			}
			// Masks are fresh per pack and per request.
			for i := range r.N {
				k := uint64(r.G.Bits)<<56 ^ (r.RIn[0][i*r.G.Masks()] + r.RIn[1][i*r.G.Masks()])
				if seen[k] && r.G.Bits > 16 {
					t.Fatalf("%v: an input mask repeats", r.G)
				}
				seen[k] = true
			}
		}
		sh[0].Wipe()
		sh[1].Wipe()
	}
}

// TestLlamaGatesRefused: a bad gates request is refused naming the field,
// and moves no counter at either module.
func TestLlamaGatesRefused(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	lp, err := NewLocalPair(ctx, LocalOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer lp.Close()
	next := func() [2]uint64 {
		var n [2]uint64
		for b := range 2 {
			p, err := lp.Devices[b].Poll(ctx, &msg.PollRequest{})
			if err != nil {
				t.Fatal(err)
			}
			n[b] = p.NextCounter
		}
		return n
	}
	// One good request first, so the counters are not at their start.
	sh, err := lp.Correlation(ctx, msg.LlamaGates(16, 1, 1, 3, 1))
	if err != nil {
		t.Fatal(err)
	}
	sh[0].Wipe()
	sh[1].Wipe()
	before := next()
	for _, c := range []struct {
		c    msg.Correlation
		want string
	}{
		{msg.LlamaGates(7, 1, 0, 0, 0), "bits"},
		{msg.LlamaGates(65, 1, 0, 0, 0), "bits"},
		{msg.LlamaGates(16, 0, 1, 0, 0), "Shift"},
		{msg.LlamaGates(16, 0, 1, 16, 0), "Shift"},
		{msg.LlamaGates(16, 1, 0, 3, 0), "Shift"},
		{msg.LlamaGates(16, 0, 0, 0, 0), "packs"},
		{msg.LlamaGates(16, msg.MaxGatePacks, 0, 0, 1), "packs"},
		{msg.Correlation{Kind: msg.CorrLlamaGates, Ring: 16, Relu: 1, In: 4}, "In/Out"},
		{msg.Correlation{Kind: msg.CorrMatVec, Ring: 16, In: 2, Out: 2, Relu: 1}, "Relu"},
	} {
		_, err := lp.Correlation(ctx, c.c)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: %v, want an error naming %s", c.c, err, c.want)
		}
	}
	if after := next(); after != before {
		t.Fatalf("refused requests moved the counters from %v to %v", before, after)
	}
}
