package service

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/kord-fss/kord/client"
	"github.com/kord-fss/kord/fss"
	pb "github.com/kord-fss/kord/proto/kordpb"
)

// TestFieldRules: the rules of docs/api.md ("Field rules") apply to every
// field alike. The names of modes, types and tiers are read without
// regard to case (a request in capitals pairs with one in lower case);
// derived count 0 means one key; an id already accepted on a stream is
// refused on that stream, at either site, and the stream goes on.
func TestFieldRules(t *testing.T) {
	s := pairOfSites(t, Config{Batch: 8})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	p := fss.Params{Type: fss.DCF, InBits: 12, OutBits: 8}
	ws, reqs := boundRequests(p, 1, 1, "mac")
	reqs[0][0].Mode, reqs[0][0].Type, reqs[0][0].Tier = "BOUND", "DCF", "MAC"
	reqs[1][0].Mode, reqs[1][0].Type = "Bound", "dcf"
	d := [2]*pb.KeyRequest{client.Derived(2, p, 0, 5, false), client.Derived(2, p, 0, 5, false)}
	d[0].Mode = "DERIVED"
	var st [2]*client.Stream
	for b := range 2 {
		var err error
		if st[b], err = s[b].app.Stream(ctx); err != nil {
			t.Fatal(err)
		}
		if err := st[b].SendBatch([]*pb.KeyRequest{reqs[b][0], d[b]}); err != nil {
			t.Fatal(err)
		}
	}
	reps := recvBoth(t, st, 2)
	checkBoundReplies(t, [2][]*client.Reply{reps[0][:1], reps[1][:1]}, 1, ws)
	for b := range 2 {
		if r := reps[b][1]; r.Err != nil || len(r.Shares) != 1 {
			t.Fatalf("site %d: derived count 0: %v, %d keys; want 1", b, r.Err, len(r.Shares))
		}
	}
	// Id 1 again on the same streams: refused at each site, nothing queued.
	_, again := boundRequests(p, 1, 1, "mac")
	_, next := boundRequests(p, 3, 1, "mac")
	for b := range 2 {
		if err := st[b].SendBatch([]*pb.KeyRequest{again[b][0], next[b][0]}); err != nil {
			t.Fatal(err)
		}
	}
	reps = recvBoth(t, st, 2)
	for b := range 2 {
		r := reps[b][0]
		if c := replyClass(t, r); r.ID != 1 || c != ErrClassBadRequest || !strings.Contains(r.Err.Error(), "already used on this stream") {
			t.Fatalf("site %d: reused id: %d %v", b, r.ID, r.Err)
		}
		if r := reps[b][1]; r.ID != 3 || r.Err != nil {
			t.Fatalf("site %d: the request after a reused id: %d %v", b, r.ID, r.Err)
		}
	}
}
