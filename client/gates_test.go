package client_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/kord-fss/kord/client"
	"github.com/kord-fss/kord/fss/llama"
	"github.com/kord-fss/kord/module/msg"
	pb "github.com/kord-fss/kord/proto/kordpb"
	"github.com/kord-fss/kord/service/servicetest"
)

// TestLlamaGatesThroughParties: LLAMA gate packs through the deployment
// path — application → party daemon (gRPC) → module socket → module —
// each site getting only its own packs and mask shares; the packs are
// byte-identical to kord's in-process dealer for the roots, masks and
// splits they hold, and evaluate to ReLU, the exact shift and the signed
// max. A request that differs between the sites (a peer that lies about
// the shift or a count) fails mismatch at both and delivers nothing; bad
// requests are refused naming the field.
func TestLlamaGatesThroughParties(t *testing.T) {
	cl := servicetest.Start(t, 4096, nil).Apps
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	for i, bits := range []int{16, 37, 64} {
		id := uint64(1 + i)
		r := both(t, func(b int) (*client.Reply, error) {
			return cl[b].Get(ctx, client.LlamaGates(id, bits, 2, 2, bits/3, 2))
		})
		var sh [2]*msg.CorrShares
		for b := range r {
			if r[b].Err != nil || len(r[b].Shares) != 1 || r[b].Shares[0].Corr == nil {
				t.Fatalf("site %d: %+v", b, r[b])
			}
			sh[b] = r[b].Shares[0].Corr
		}
		if sh[0].PairTag != sh[1].PairTag || sh[0].Counter != sh[1].Counter {
			t.Fatal("the sites' packs do not pair")
		}
		runs, err := msg.SplitGates(sh)
		if err != nil {
			t.Fatal(err)
		}
		for _, run := range runs {
			if err := llama.RedealGates(run); err != nil {
				t.Fatal(err)
			}
			if err := llama.CheckGates(run, 16); err != nil {
				t.Fatal(err)
			}
		}
	}
	// A peer that asks for another shift or count under the same id.
	good := msg.LlamaGates(16, 1, 1, 4, 1)
	for k, other := range []msg.Correlation{msg.LlamaGates(16, 1, 1, 5, 1), msg.LlamaGates(16, 1, 1, 4, 2)} {
		id := uint64(20 + k)
		r := both(t, func(b int) (*client.Reply, error) {
			return cl[b].Get(ctx, client.Correlation(id, []msg.Correlation{good, other}[b]))
		})
		for b := range r {
			re, ok := r[b].Err.(*client.ReplyError)
			if !ok || re.Class != pb.ClassMismatch || len(r[b].Shares) != 0 {
				t.Fatalf("site %d: a gates request that differs between the sites gave %v with %d shares, want mismatch and none", b, r[b].Err, len(r[b].Shares))
			}
		}
	}
	for _, c := range []struct {
		r    *pb.KeyRequest
		want string
	}{
		{client.LlamaGates(30, 7, 1, 0, 0, 0), "bits"},
		{client.LlamaGates(31, 16, 0, 1, 16, 0), "Shift"},
		{client.LlamaGates(32, 16, 0, 0, 0, 0), "packs"},
	} {
		r, err := cl[0].Get(ctx, c.r)
		if err != nil {
			t.Fatal(err)
		}
		re, ok := r.Err.(*client.ReplyError)
		if !ok || re.Class != pb.ClassBadRequest || !strings.Contains(re.Msg, c.want) {
			t.Fatalf("request %d: %v, want bad_request naming %s", c.r.Id, r.Err, c.want)
		}
	}
	// The session goes on.
	r := both(t, func(b int) (*client.Reply, error) { return cl[b].Get(ctx, client.LlamaGates(40, 8, 1, 0, 0, 0)) })
	for b := range r {
		if r[b].Err != nil {
			t.Fatalf("site %d after refusals: %v", b, r[b].Err)
		}
	}
}
