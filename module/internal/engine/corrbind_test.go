package engine

import (
	"testing"

	"github.com/kord-fss/kord/fss"
	"github.com/kord-fss/kord/module/msg"
)

// drawCorr submits and collects one correlation at e's next counter.
func drawCorr(t *testing.T, e *Engine, c msg.Correlation) *msg.CorrShares {
	t.Helper()
	r, err := e.Submit(ctx, &msg.SubmitRequest{Kind: msg.SubmitCorrelation, Corr: &c})
	if err != nil {
		t.Fatal(err)
	}
	cr, err := e.Collect(ctx, &msg.CollectRequest{Counter: r.FirstCounter, Corr: true})
	if err != nil {
		t.Fatal(err)
	}
	return cr.Corr
}

// align moves the module that is behind to the other's next counter with
// derived filler keys, abandoned at once.
func align(t *testing.T, e [2]*Engine) {
	t.Helper()
	for b := range 2 {
		for e[b].ctr.Next < e[1-b].ctr.Next {
			submit(t, e[b], msg.MAC, msg.Share{Mode: msg.Derived, Type: fss.DPF, InBits: 1, OutBits: 1, DeriveBeta: true})
		}
		if _, err := e[b].Submit(ctx, &msg.SubmitRequest{Kind: msg.SubmitAbandon, Counter: e[b].ctr.Next - 1}); err != nil {
			t.Fatal(err)
		}
	}
}

// TestCorrRedrawOtherShapes is the attack of issue 32: a host 0 has its
// module draw other correlation shapes at the counters where party 1's
// module draws the honest one, to read party 1's masks among its own
// shares (party 0's shares are drawn words). Every word party 0's module
// hands out for another shape — weights, full and input correlations of
// other dimensions, rings, kinds, parts and weight references — is checked
// against every word of party 1's shares and of the honest draw itself
// (A, R and party 0's honest shares): none is in common.
func TestCorrRedrawOtherShapes(t *testing.T) {
	honestW := msg.Correlation{Kind: msg.CorrMatVec, Ring: 64, In: 8, Out: 2, Part: msg.CorrWeight}
	others := []msg.Correlation{
		{Kind: msg.CorrMatVec, Ring: 64, In: 8, Out: 2},                        // full, same dimensions
		{Kind: msg.CorrMatVec, Ring: 64, In: 2, Out: 8, Part: msg.CorrWeight},  // weight, dimensions swapped
		{Kind: msg.CorrMatVec, Ring: 63, In: 8, Out: 2, Part: msg.CorrWeight},  // another ring
		{Kind: msg.CorrMatVec, Ring: 64, In: 1, Out: 1},                        // tiny full ones
		{Kind: msg.CorrConv2D, Ring: 64, In: 1, Out: 2, K: 2, H: 3, W: 3},      // another kind
		{Kind: msg.CorrMatVec, Ring: 64, In: 32, Out: 1, Part: msg.CorrWeight}, // wider
	}
	for honestInput := range 2 {
		e := pair(t)
		// An attacker's kept weight for input correlations of its own (one
		// word of R: its Z0 share covers nearly all the draw).
		atkW := msg.Correlation{Kind: msg.CorrMatVec, Ring: 64, In: 1, Out: 30, Part: msg.CorrWeight}
		atkWAt := drawCorr(t, e[0], atkW).Counter
		align(t, e)
		// The honest party 1 draws its weight (and, honestInput, an input
		// correlation against it); party 0's module draws the honest weight
		// too, so that its kept weight exists at party 1's counter.
		honest := honestW
		var hw [2]*msg.CorrShares
		for b := range 2 {
			hw[b] = drawCorr(t, e[b], honestW)
		}
		if honestInput == 1 {
			honest = msg.Correlation{Kind: msg.CorrMatVec, Ring: 64, In: 8, Out: 2, Part: msg.CorrInput, WeightFrom: hw[1].Counter}
		}
		variants := append([]msg.Correlation{}, others...)
		variants = append(variants, msg.Correlation{Kind: msg.CorrMatVec, Ring: 64, In: 1, Out: 30, Part: msg.CorrInput, WeightFrom: atkWAt})
		for _, v := range variants {
			align(t, e)
			at := e[1].ctr.Next
			h := drawCorr(t, e[1], honest)
			// The honest party's masks: its shares, and the whole draw.
			secret := map[uint64]bool{}
			for _, s := range [][]uint64{h.A, h.R, h.Z, hw[1].A} {
				for _, w := range s {
					secret[w] = true
				}
			}
			blocks, _ := honest.Blocks()
			d := corrDesc(&honest, at, blocks)
			raw := make([]uint64, 2*blocks)
			e[1].prf.CorrWords(&d, raw)
			for _, w := range raw {
				secret[w] = true
			}
			// Party 0's module at the same counter, for another shape.
			// (Several in a row cover the honest draw's counters.)
			for e[0].ctr.Next < e[1].ctr.Next {
				a := drawCorr(t, e[0], v)
				for _, s := range [][]uint64{a.A, a.R, a.Z} {
					for _, w := range s {
						if secret[w] {
							t.Fatalf("honest %+v, other %+v at counter %d: party 0's module handed out a word of party 1's masks", honest, v, a.Counter)
						}
					}
				}
				if a.Counter == at && a.PairTag == h.PairTag {
					t.Fatalf("another shape %+v has the honest pair tag", v)
				}
			}
		}
	}
}
