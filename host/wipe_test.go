package host

import (
	"context"
	"testing"

	"github.com/kord-fss/kord/fss"
	"github.com/kord-fss/kord/module/msg"
)

// TestFailedCollectWipesBatch: when Collect fails part-way through a batch
// (here, a consume point outside the domain), the host abandons the batch,
// so no key or evaluation share stays ready inside either module, and the
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
