package engine

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/kord-fss/kord/fss"
	"github.com/kord-fss/kord/module/msg"
)

// TestPendingSharesBounded: a host cannot make a module hold more than
// MaxPendingShares own shares waiting for peer frames. The submission that
// would pass the bound is refused as a bad request naming the limit and
// moves nothing (no counter, no slot); derived keys, which wait for no
// frame, still pass; an abandon frees room again.
func TestPendingSharesBounded(t *testing.T) {
	e := pair(t)[0]
	bound := msg.Share{Mode: msg.Bound, Type: fss.DPF, InBits: 8, OutBits: 8}
	full := make([]msg.Share, MaxBatch)
	for i := range full {
		full[i] = bound
	}
	for i := 0; i < MaxPendingShares/MaxBatch; i++ {
		submit(t, e, msg.BatchMAC, full...)
	}
	before, err := e.Poll(ctx, &msg.PollRequest{})
	if err != nil || before.Pending != MaxPendingShares {
		t.Fatalf("poll: %+v %v; want %d pending", before, err, MaxPendingShares)
	}
	for _, tier := range []msg.Tier{msg.MAC, msg.BatchMAC, msg.Keystream} {
		_, err := e.Submit(ctx, &msg.SubmitRequest{Kind: msg.SubmitShares, Tier: tier, Shares: []msg.Share{bound}})
		if !errors.Is(err, ErrBadRequest) || !strings.Contains(err.Error(), fmt.Sprint(MaxPendingShares)) {
			t.Fatalf("tier %v: share past the bound: %v, want a bad request naming %d", tier, err, MaxPendingShares)
		}
	}
	after, _ := e.Poll(ctx, &msg.PollRequest{})
	if after.NextCounter != before.NextCounter || after.Pending != before.Pending || after.Ready != before.Ready {
		t.Fatalf("refused submission moved state: before %+v, after %+v", before, after)
	}
	d := submit(t, e, msg.MAC, msg.Share{Mode: msg.Derived, Type: fss.DPF, InBits: 8, OutBits: 8, DeriveBeta: true})
	if d.FirstCounter != before.NextCounter {
		t.Fatalf("derived key got counter %d, want %d", d.FirstCounter, before.NextCounter)
	}
	if _, err := e.Submit(ctx, &msg.SubmitRequest{Kind: msg.SubmitAbandon, Counter: MaxBatch - 1}); err != nil {
		t.Fatal(err)
	}
	submit(t, e, msg.MAC, bound)
}
