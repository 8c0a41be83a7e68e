package engine

import (
	"errors"
	"strings"
	"testing"

	"github.com/kord-fss/kord/module/msg"
)

// TestGatesRefusedNoCounter: a bad LLAMA gates submission is refused by
// the module itself, naming the field, and moves no counter.
func TestGatesRefusedNoCounter(t *testing.T) {
	e := pair(t)
	corrPair(t, e, msg.LlamaGates(16, 1, 1, 2, 1)) // counters off their start
	before := e[0].ctr.Next
	for _, c := range []struct {
		c    msg.Correlation
		want string
	}{
		{msg.LlamaGates(7, 1, 0, 0, 0), "bits"},
		{msg.LlamaGates(16, 0, 2, 0, 0), "Shift"},
		{msg.LlamaGates(16, 0, 2, 16, 0), "Shift"},
		{msg.LlamaGates(16, 2, 0, 1, 0), "Shift"},
		{msg.LlamaGates(16, -1, 0, 0, 2), "counts"},
		{msg.LlamaGates(16, 0, 0, 0, 0), "packs"},
		{msg.LlamaGates(16, msg.MaxGatePacks, 1, 3, 0), "packs"},
		{msg.Correlation{Kind: msg.CorrLlamaGates, Ring: 16, Relu: 1, Part: msg.CorrWeight}, "Part"},
	} {
		_, err := e[0].Submit(ctx, &msg.SubmitRequest{Kind: msg.SubmitCorrelation, Corr: &c.c})
		if !errors.Is(err, ErrBadRequest) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: %v, want a bad request naming %s", c.c, err, c.want)
		}
	}
	if e[0].ctr.Next != before {
		t.Fatalf("refused submissions moved the counter from %d to %d", before, e[0].ctr.Next)
	}
}

// TestGatesBoundToDescription: two modules at the same counter asked for
// gates that differ in any field (width, shift, a count) answer with
// different pair tags, so a host never pairs them; the same request twice takes fresh counters and gives fresh masks.
func TestGatesBoundToDescription(t *testing.T) {
	base := msg.LlamaGates(32, 2, 1, 5, 1)
	for _, other := range []msg.Correlation{
		msg.LlamaGates(33, 2, 1, 5, 1),
		msg.LlamaGates(32, 2, 1, 6, 1),
		msg.LlamaGates(32, 1, 2, 5, 1),
		msg.LlamaGates(32, 2, 1, 5, 2),
	} {
		e := pair(t)
		var sh [2]*msg.CorrShares
		for b, c := range []msg.Correlation{base, other} {
			r, err := e[b].Submit(ctx, &msg.SubmitRequest{Kind: msg.SubmitCorrelation, Corr: &c})
			if err != nil {
				t.Fatal(err)
			}
			cr, err := e[b].Collect(ctx, &msg.CollectRequest{Counter: r.FirstCounter, Corr: true})
			if err != nil {
				t.Fatal(err)
			}
			sh[b] = cr.Corr
		}
		if sh[0].Counter != sh[1].Counter {
			t.Fatal("not at the same counter")
		}
		if sh[0].PairTag == sh[1].PairTag {
			t.Fatalf("%+v and %+v at one counter have the same pair tag", base, other)
		}
	}
	e := pair(t)
	a, b := corrPair(t, e, base), corrPair(t, e, base)
	if a[0].Counter == b[0].Counter || a[0].R[0] == b[0].R[0] || string(a[0].Packs[:16]) == string(b[0].Packs[:16]) {
		t.Fatal("a repeated request reused counters or draws")
	}
	// Collected once.
	if _, err := e[0].Collect(ctx, &msg.CollectRequest{Counter: a[0].Counter, Corr: true}); err == nil {
		t.Fatal("gates collected twice")
	}
}
