package engine

import (
	"errors"
	"testing"

	"github.com/kord-fss/kord/internal/prg"
	"github.com/kord-fss/kord/module/msg"
)

func corrPair(t *testing.T, e [2]*Engine, c msg.Correlation) [2]*msg.CorrShares {
	t.Helper()
	var out [2]*msg.CorrShares
	var first [2]uint64
	for b := 0; b < 2; b++ {
		r, err := e[b].Submit(ctx, &msg.SubmitRequest{Kind: msg.SubmitCorrelation, Corr: &c})
		if err != nil {
			t.Fatal(err)
		}
		if len(r.Frames) != 0 {
			t.Fatal("a derived correlation returned a frame")
		}
		first[b] = r.FirstCounter
		cr, err := e[b].Collect(ctx, &msg.CollectRequest{Counter: r.FirstCounter, Corr: true})
		if err != nil {
			t.Fatal(err)
		}
		out[b] = cr.Corr
	}
	if first[0] != first[1] || out[0].PairTag != out[1].PairTag {
		t.Fatal("the two modules' correlations do not pair")
	}
	return out
}

// TestCorrDerived: both modules draw one correlation; the shares
// reconstruct A, R and Z = map(A, R) exactly; party 1's shares are not
// the values themselves; the next correlation uses fresh counters and
// fresh masks; a correlation is collected once.
func TestCorrDerived(t *testing.T) {
	e := pair(t)
	for _, c := range []msg.Correlation{
		{Kind: msg.CorrMatVec, Ring: 32, In: 7, Out: 3},
		{Kind: msg.CorrMatVec, Ring: 64, In: 5, Out: 4},
		{Kind: msg.CorrConv2D, Ring: 17, In: 2, Out: 3, K: 3, H: 5, W: 6},
	} {
		sh := corrPair(t, e, c)
		m := prg.Mask(c.Ring)
		rec := func(x, y []uint64) []uint64 {
			out := make([]uint64, len(x))
			for i := range x {
				out[i] = (x[i] + y[i]) & m
			}
			return out
		}
		a, r, z := rec(sh[0].A, sh[1].A), rec(sh[0].R, sh[1].R), rec(sh[0].Z, sh[1].Z)
		want := make([]uint64, len(z))
		corrApply(&c, a, r, want)
		for i := range z {
			if z[i] != want[i] {
				t.Fatalf("%+v: Z[%d] = %d, want %d", c, i, z[i], want[i])
			}
		}
		nz := 0
		for i := range a {
			if a[i] != 0 && a[i] != sh[1].A[i] {
				nz++
			}
		}
		if nz == 0 {
			t.Fatalf("%+v: party 1's share of A equals A", c)
		}
		again := corrPair(t, e, c)
		if again[0].Counter <= sh[0].Counter || again[0].A[0] == sh[0].A[0] && again[0].R[0] == sh[0].R[0] {
			t.Fatalf("%+v: a second correlation reused counters or masks", c)
		}
		if _, err := e[0].Collect(ctx, &msg.CollectRequest{Counter: sh[0].Counter, Corr: true}); !errors.Is(err, ErrBadRequest) {
			t.Fatalf("second collect: %v, want ErrBadRequest", err)
		}
	}
}

// TestCorrCountersCommitted: the counters advance by the blocks drawn
// before the shares can be collected, and an abandon wipes an uncollected
// correlation.
func TestCorrCountersCommitted(t *testing.T) {
	e := pair(t)
	c := msg.Correlation{Kind: msg.CorrMatVec, Ring: 32, In: 10, Out: 2}
	before := e[0].ctr.Next
	r, err := e[0].Submit(ctx, &msg.SubmitRequest{Kind: msg.SubmitCorrelation, Corr: &c})
	if err != nil {
		t.Fatal(err)
	}
	words := 2*20 + 2*10 + 2
	if e[0].ctr.Next != before+uint64((words+1)/2) {
		t.Fatalf("counter moved %d, want %d", e[0].ctr.Next-before, (words+1)/2)
	}
	sh := e[0].corrs[r.FirstCounter]
	if _, err := e[0].Submit(ctx, &msg.SubmitRequest{Kind: msg.SubmitAbandon, Counter: r.FirstCounter}); err != nil {
		t.Fatal(err)
	}
	for _, v := range [][]uint64{sh.A, sh.R, sh.Z} {
		for _, x := range v {
			if x != 0 {
				t.Fatal("abandoned correlation not wiped")
			}
		}
	}
	if _, err := e[0].Collect(ctx, &msg.CollectRequest{Counter: r.FirstCounter, Corr: true}); !errors.Is(err, ErrBadRequest) {
		t.Fatalf("collect after abandon: %v", err)
	}
}

// TestCorrBadRequest: malformed shapes are refused and move no counter.
func TestCorrBadRequest(t *testing.T) {
	e := pair(t)
	for _, c := range []*msg.Correlation{
		nil,
		{Kind: 9, Ring: 32, In: 1, Out: 1},
		{Kind: msg.CorrMatVec, Ring: 0, In: 1, Out: 1},
		{Kind: msg.CorrMatVec, Ring: 65, In: 1, Out: 1},
		{Kind: msg.CorrMatVec, Ring: 32, In: 0, Out: 1},
		{Kind: msg.CorrMatVec, Ring: 32, In: 1 << 20, Out: 1 << 10},
		{Kind: msg.CorrMatVec, Ring: 32, In: 3, Out: 1, K: 2},
		{Kind: msg.CorrConv2D, Ring: 32, In: 1, Out: 1, K: 4, H: 3, W: 3},
		{Kind: msg.CorrMatVec, Ring: 32, In: 1, Out: 1, Part: 7},
		{Kind: msg.CorrMatVec, Ring: 32, In: 1, Out: 1, WeightFrom: 3},
		{Kind: msg.CorrMatVec, Ring: 32, In: 1, Out: 1, Part: msg.CorrInput, WeightFrom: 3},
	} {
		before := e[0].ctr.Next
		if _, err := e[0].Submit(ctx, &msg.SubmitRequest{Kind: msg.SubmitCorrelation, Corr: c}); !errors.Is(err, ErrBadRequest) {
			t.Fatalf("%+v: %v, want ErrBadRequest", c, err)
		}
		if e[0].ctr.Next != before {
			t.Fatalf("%+v: a refused request moved the counter", c)
		}
	}
	un, err := New(Config{Party: 0, Secret: []byte("provisioning-secret-0123")})
	if err != nil {
		t.Fatal(err)
	}
	ok := &msg.Correlation{Kind: msg.CorrMatVec, Ring: 8, In: 1, Out: 1}
	if _, err := un.Submit(ctx, &msg.SubmitRequest{Kind: msg.SubmitCorrelation, Corr: ok}); !errors.Is(err, ErrNotPaired) {
		t.Fatalf("unpaired: %v", err)
	}
}

// TestCorrWeightSession: a weight mask drawn once (CorrWeight) and two
// input correlations against it (CorrInput): each reconstructs
// Z = map(A, R) with the same A and a fresh R; an input correlation for a
// different shape or an unknown counter is refused.
func TestCorrWeightSession(t *testing.T) {
	e := pair(t)
	c := msg.Correlation{Kind: msg.CorrConv2D, Ring: 32, In: 2, Out: 2, K: 2, H: 4, W: 3, Part: msg.CorrWeight}
	w := corrPair(t, e, c)
	if len(w[0].A) != 16 || len(w[0].R) != 0 || len(w[0].Z) != 0 {
		t.Fatalf("weight part: %d A, %d R, %d Z words", len(w[0].A), len(w[0].R), len(w[0].Z))
	}
	m := prg.Mask(32)
	a := make([]uint64, len(w[0].A))
	for i := range a {
		a[i] = (w[0].A[i] + w[1].A[i]) & m
	}
	in := c
	in.Part, in.WeightFrom = msg.CorrInput, w[0].Counter
	var lastR uint64
	for round := 0; round < 2; round++ {
		sh := corrPair(t, e, in)
		if len(sh[0].A) != 0 {
			t.Fatal("an input correlation carried A")
		}
		r := make([]uint64, len(sh[0].R))
		for i := range r {
			r[i] = (sh[0].R[i] + sh[1].R[i]) & m
		}
		want := make([]uint64, len(sh[0].Z))
		corrApply(&in, a, r, want)
		for i := range want {
			if (sh[0].Z[i]+sh[1].Z[i])&m != want[i] {
				t.Fatalf("round %d: Z[%d] is not map(A, R) for the kept A", round, i)
			}
		}
		if r[0] == lastR {
			t.Fatal("input mask reused")
		}
		lastR = r[0]
	}
	other := in
	other.Out = 3
	for _, bad := range []msg.Correlation{other, {Kind: msg.CorrMatVec, Ring: 32, In: 2, Out: 2, Part: msg.CorrInput, WeightFrom: w[0].Counter}, func() msg.Correlation { x := in; x.WeightFrom++; return x }()} {
		if _, err := e[0].Submit(ctx, &msg.SubmitRequest{Kind: msg.SubmitCorrelation, Corr: &bad}); !errors.Is(err, ErrBadRequest) {
			t.Fatalf("%+v: %v, want ErrBadRequest", bad, err)
		}
	}
	// An abandon (e.g. of a later batch the hosts skipped) keeps a weight
	// mask that was handed out: its session goes on.
	for b := 0; b < 2; b++ {
		if _, err := e[b].Submit(ctx, &msg.SubmitRequest{Kind: msg.SubmitAbandon, Counter: w[0].Counter + 1000}); err != nil {
			t.Fatal(err)
		}
	}
	corrPair(t, e, in)
	// One never collected is forgotten with it.
	var first [2]uint64
	for b := 0; b < 2; b++ {
		r, err := e[b].Submit(ctx, &msg.SubmitRequest{Kind: msg.SubmitCorrelation, Corr: &c})
		if err != nil {
			t.Fatal(err)
		}
		first[b] = r.FirstCounter
		if _, err := e[b].Submit(ctx, &msg.SubmitRequest{Kind: msg.SubmitAbandon, Counter: first[b]}); err != nil {
			t.Fatal(err)
		}
	}
	lost := in
	lost.WeightFrom = first[0]
	if _, err := e[0].Submit(ctx, &msg.SubmitRequest{Kind: msg.SubmitCorrelation, Corr: &lost}); !errors.Is(err, ErrBadRequest) {
		t.Fatalf("input against an abandoned, uncollected weight mask: %v, want ErrBadRequest", err)
	}
}

// TestCorrWeightEviction: past MaxWeights kept weight masks, a new one
// makes both modules forget the oldest, the same one.
func TestCorrWeightEviction(t *testing.T) {
	e := pair(t)
	c := msg.Correlation{Kind: msg.CorrMatVec, Ring: 16, In: 1, Out: 1, Part: msg.CorrWeight}
	var firsts []uint64
	for range MaxWeights + 1 {
		firsts = append(firsts, corrPair(t, e, c)[0].Counter)
	}
	in := c
	in.Part = msg.CorrInput
	for b := 0; b < 2; b++ {
		in.WeightFrom = firsts[0]
		if _, err := e[b].Submit(ctx, &msg.SubmitRequest{Kind: msg.SubmitCorrelation, Corr: &in}); !errors.Is(err, ErrBadRequest) {
			t.Fatalf("module %d: the oldest weight mask is still kept: %v", b, err)
		}
	}
	in.WeightFrom = firsts[1]
	corrPair(t, e, in)
}

// TestCorrMemoryBound: uncollected correlations may not hold more than
// MaxCorrWordsHeld words; collecting frees the room.
func TestCorrMemoryBound(t *testing.T) {
	e := pair(t)
	big := msg.Correlation{Kind: msg.CorrMatVec, Ring: 32, In: 1 << 11, Out: 1 << 10} // 2^21 + 2^11 + 2^10 words: 3 fit in 2^23
	var firsts []uint64
	for {
		r, err := e[0].Submit(ctx, &msg.SubmitRequest{Kind: msg.SubmitCorrelation, Corr: &big})
		if err != nil {
			if !errors.Is(err, ErrBadRequest) {
				t.Fatal(err)
			}
			break
		}
		firsts = append(firsts, r.FirstCounter)
		if len(firsts) > 4 {
			t.Fatal("no memory bound")
		}
	}
	if len(firsts) != 3 {
		t.Fatalf("%d large correlations held, want 3", len(firsts))
	}
	if _, err := e[0].Collect(ctx, &msg.CollectRequest{Counter: firsts[0], Corr: true}); err != nil {
		t.Fatal(err)
	}
	if _, err := e[0].Submit(ctx, &msg.SubmitRequest{Kind: msg.SubmitCorrelation, Corr: &big}); err != nil {
		t.Fatalf("after collecting: %v", err)
	}
}
