package module_test

import (
	"bytes"
	"context"
	"testing"

	"github.com/kord-fss/kord/fss"
	"github.com/kord-fss/kord/module"
	"github.com/kord-fss/kord/module/moduletest"
	"github.com/kord-fss/kord/module/msg"
)

// TestRecollectOnlyForItsRequest (issue 33): a durable module hands out a
// remembered output again only for the request it was generated for —
// the same own shares, shape and payload — and refuses the whole call,
// emitting nothing, for any other request, for a counter it never handed
// out, or for one of several counters that does not match.
func TestRecollectOnlyForItsRequest(t *testing.T) {
	d := moduletest.DurablePair(t, 0)
	ctx := context.Background()
	reqs := [2][]msg.Share{}
	for b := range 2 {
		for i := range 3 {
			reqs[b] = append(reqs[b], msg.Share{Mode: msg.Bound, Type: fss.DPF, InBits: 16, OutBits: 8,
				AlphaShare: uint64(100*b + 7*i + 1), BetaShare: uint64(b + i + 1)})
		}
		reqs[b] = append(reqs[b], msg.Share{Mode: msg.Derived, Type: fss.DCF, InBits: 12, OutBits: 4, Beta: 1})
	}
	var fr [2][][]byte
	var first uint64
	for b := range 2 {
		r, err := d[b].Submit(ctx, &msg.SubmitRequest{Kind: msg.SubmitShares, Tier: msg.MAC, Shares: reqs[b]})
		if err != nil {
			t.Fatal(err)
		}
		fr[b], first = r.Frames, r.FirstCounter
	}
	for b := range 2 {
		for _, f := range fr[1-b] {
			if r, err := d[b].Submit(ctx, &msg.SubmitRequest{Kind: msg.SubmitPeerFrame, Frame: f}); err != nil || !r.Accepted {
				t.Fatalf("frame: %v %+v", err, r)
			}
		}
	}
	n := len(reqs[0])
	var keys [][]byte
	if err := d[0].CollectRange(ctx, first, n, nil, func(r *msg.CollectResponse) { keys = append(keys, bytes.Clone(r.Key)) }); err != nil {
		t.Fatal(err)
	}
	// The same requests: the same outputs.
	i := 0
	if err := d[0].RecollectRange(ctx, first, n, nil, reqs[0], func(r *msg.CollectResponse) {
		if !bytes.Equal(r.Key, keys[i]) {
			t.Errorf("counter %d: another key handed out again", first+uint64(i))
		}
		i++
	}); err != nil || i != n {
		t.Fatalf("re-collect for the same requests: %v (%d outputs)", err, i)
	}
	cases := map[string]func() ([]msg.Share, uint64, int){
		"other alpha share": func() ([]msg.Share, uint64, int) {
			ex := append([]msg.Share(nil), reqs[0]...)
			ex[1].AlphaShare++
			return ex, first, n
		},
		"other beta share": func() ([]msg.Share, uint64, int) {
			ex := append([]msg.Share(nil), reqs[0][:1]...)
			ex[0].BetaShare ^= 1
			return ex, first, 1
		},
		"other shape": func() ([]msg.Share, uint64, int) {
			ex := append([]msg.Share(nil), reqs[0][3:]...)
			ex[0].InBits++
			return ex, first + 3, 1
		},
		"another counter's request": func() ([]msg.Share, uint64, int) {
			return []msg.Share{reqs[0][0]}, first + 1, 1
		},
		"the peer's request": func() ([]msg.Share, uint64, int) {
			return reqs[1][:1], first, 1
		},
		"never handed out": func() ([]msg.Share, uint64, int) {
			return reqs[0][:1], first + 100, 1
		},
	}
	for name, c := range cases {
		ex, at, k := c()
		emitted := 0
		err := d[0].RecollectRange(ctx, at, k, nil, ex, func(*msg.CollectResponse) { emitted++ })
		if err == nil || emitted != 0 {
			t.Errorf("%s: err %v, %d outputs handed out", name, err, emitted)
		}
	}
	p, err := d[0].Poll(ctx, &msg.PollRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if p.Rejects[module.RejectRecollect] == 0 {
		t.Errorf("no refused re-collect counted: %v", p.Rejects)
	}
}
