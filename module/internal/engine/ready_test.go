package engine

import (
	"bytes"
	"errors"
	"log/slog"
	"strings"
	"testing"

	"github.com/kord-fss/kord/fss"
	"github.com/kord-fss/kord/module/msg"
)

// TestReadyCap: own shares waiting for frames plus uncollected outputs
// (derived ones included) never pass the cap; a submission that would is
// refused before any counter moves, naming the numbers, and loses nothing;
// collecting or abandoning makes room again.
func TestReadyCap(t *testing.T) {
	e := pair(t)
	if MaxReady < 2*MaxPendingShares || e[0].maxReady != MaxReady {
		t.Fatalf("MaxReady %d (module %d), want the documented cap of at least 2 × %d", MaxReady, e[0].maxReady, MaxPendingShares)
	}
	const limit = 10
	e[0].maxReady, e[1].maxReady = limit, limit
	derived := msg.Share{Mode: msg.Derived, Type: fss.DPF, InBits: 8, OutBits: 8, DeriveBeta: true}
	bound := msg.Share{Mode: msg.Bound, Type: fss.DPF, InBits: 8, OutBits: 8}
	rep := func(s msg.Share, n int) []msg.Share {
		out := make([]msg.Share, n)
		for i := range out {
			out[i] = s
		}
		return out
	}
	// 6 derived outputs and 3 bound shares waiting for frames: 9 of 10.
	submit(t, e[0], 0, rep(derived, 6)...)
	r0 := submit(t, e[0], msg.BatchMAC, rep(bound, 3)...)
	before := state(e[0])
	for _, req := range []*msg.SubmitRequest{
		{Kind: msg.SubmitShares, Tier: msg.MAC, Shares: rep(bound, 2)},
		{Kind: msg.SubmitShares, Shares: rep(derived, 2)},
		{Kind: msg.SubmitShares, Tier: msg.Keystream, Shares: append(rep(derived, 1), bound)},
	} {
		_, err := e[0].Submit(ctx, req)
		if !errors.Is(err, ErrBadRequest) {
			t.Fatalf("a submission past the cap: %v", err)
		}
		for _, want := range []string{"3 shares wait for peer frames", "6 outputs wait to be collected", "2 more", "limit of 10"} {
			if !strings.Contains(err.Error(), want) {
				t.Fatalf("error %q does not say %q", err, want)
			}
		}
		if state(e[0]) != before {
			t.Fatal("a refused submission moved the module")
		}
	}
	// Nothing was lost: the pending batch still completes and every
	// output is still there.
	submit(t, e[1], 0, rep(derived, 6)...)
	r1 := submit(t, e[1], msg.BatchMAC, rep(bound, 3)...)
	if !frame(t, e[0], r1.Frames[0]).Accepted || !frame(t, e[1], r0.Frames[0]).Accepted {
		t.Fatal("the pending batch was lost")
	}
	if p, _ := e[0].Poll(ctx, nil); p.Ready != 9 || p.Pending != 0 {
		t.Fatalf("ready %d, pending %d; want 9 and 0", p.Ready, p.Pending)
	}
	submit(t, e[0], 0, derived) // exactly at the cap
	if _, err := e[0].Submit(ctx, &msg.SubmitRequest{Kind: msg.SubmitShares, Shares: rep(derived, 1)}); !errors.Is(err, ErrBadRequest) {
		t.Fatalf("one past the cap: %v", err)
	}
	collect(t, e[0], 0)
	collect(t, e[0], 1)
	submit(t, e[0], 0, rep(derived, 2)...) // room made by collecting
	if _, err := e[0].Submit(ctx, &msg.SubmitRequest{Kind: msg.SubmitAbandon, Counter: 4}); err != nil {
		t.Fatal(err)
	}
	submit(t, e[0], msg.MAC, rep(bound, 3)...) // room made by abandoning counters 2-4
}

// TestMismatchCounted: an abandon whose host reports disagreeing pair tags
// is counted under pair_mismatch and logged as a warning that names
// counters only; a plain abandon is not counted.
func TestMismatchCounted(t *testing.T) {
	e := pair(t)
	var logs bytes.Buffer
	e[0].log = slog.New(slog.NewTextHandler(&logs, nil))
	s := msg.Share{Mode: msg.Derived, Type: fss.DCF, InBits: 16, OutBits: 16, DeriveBeta: true}
	c := submit(t, e[0], 0, s, s).FirstCounter
	if _, err := e[0].Submit(ctx, &msg.SubmitRequest{Kind: msg.SubmitAbandon, Counter: c}); err != nil {
		t.Fatal(err)
	}
	if p, _ := e[0].Poll(ctx, nil); p.Rejects[RejectPairMismatch] != 0 {
		t.Fatal("a plain abandon was counted as a mismatch")
	}
	r, err := e[0].Submit(ctx, &msg.SubmitRequest{Kind: msg.SubmitAbandon, Counter: c + 1, Mismatch: true})
	if err != nil || r.Count != 1 {
		t.Fatalf("abandon: %v %+v", err, r)
	}
	if p, _ := e[0].Poll(ctx, nil); p.Rejects[RejectPairMismatch] != 1 || p.Ready != 0 {
		t.Fatalf("rejects %v, ready %d after a mismatch abandon", p.Rejects, p.Ready)
	}
	// One warning, whose attributes are the party and counters only.
	line := logs.String()
	if strings.Count(line, "\n") != 1 || !strings.Contains(line, "level=WARN") || !strings.Contains(line, "pair tags disagreed") ||
		!strings.HasSuffix(line, `" party=0 through_counter=1 pair_mismatches=1`+"\n") {
		t.Fatalf("log: %q", line)
	}
}
