package client_test

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/kord-fss/kord/client"
	"github.com/kord-fss/kord/fss"
	"github.com/kord-fss/kord/internal/prg"
	"github.com/kord-fss/kord/module/msg"
	pb "github.com/kord-fss/kord/proto/kordpb"
	"github.com/kord-fss/kord/service/servicetest"
)

// both runs f for each site concurrently and returns their replies.
func both(t *testing.T, f func(b int) (*client.Reply, error)) [2]*client.Reply {
	t.Helper()
	var out [2]*client.Reply
	var errs [2]error
	var wg sync.WaitGroup
	for b := 0; b < 2; b++ {
		wg.Add(1)
		go func() { defer wg.Done(); out[b], errs[b] = f(b) }()
	}
	wg.Wait()
	for b := range errs {
		if errs[b] != nil {
			t.Fatalf("site %d: %v", b, errs[b])
		}
	}
	return out
}

func addShares(a, b []uint64, ring int) []uint64 {
	out := make([]uint64, len(a))
	for i := range a {
		out[i] = (a[i] + b[i]) & prg.Mask(ring)
	}
	return out
}

// TestCorrelationsThroughParties: derived multiplication correlations
// through the deployment path — application → party daemon (gRPC) →
// module socket → durable module, ordered between the parties in batches
// — interleaved on one stream with derived keys. Each site gets only its
// own shares; opened, Z = A·R exactly, input masks are fresh per request,
// and the keys still pair.
func TestCorrelationsThroughParties(t *testing.T) {
	cl := servicetest.Start(t, 4096, nil).Apps
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	const ring = 32
	shape := msg.Correlation{Kind: msg.CorrMatVec, Ring: ring, In: 9, Out: 4, Part: msg.CorrWeight}
	w := both(t, func(b int) (*client.Reply, error) { return cl[b].Get(ctx, client.Correlation(1, shape)) })
	for b := range w {
		if w[b].Err != nil || len(w[b].Shares) != 1 || w[b].Shares[0].Corr == nil {
			t.Fatalf("site %d: weight mask reply %+v", b, w[b])
		}
	}
	if w[0].Shares[0].Counter != w[1].Shares[0].Counter {
		t.Fatalf("weight mask at counters %d and %d", w[0].Shares[0].Counter, w[1].Shares[0].Counter)
	}
	a := addShares(w[0].Shares[0].Corr.A, w[1].Shares[0].Corr.A, ring)
	in := shape
	in.Part, in.WeightFrom = msg.CorrInput, w[0].Shares[0].Counter
	dp := fss.Params{Type: fss.DCF, InBits: ring, OutBits: ring}
	reqs := []*pb.KeyRequest{client.Correlation(2, in), client.Derived(3, dp, 20, 0, true), client.Correlation(4, in)}
	var got [2]map[uint64]*client.Reply
	var streams [2]*client.Stream
	for b := range cl {
		st, err := cl[b].Stream(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if err := st.SendBatch(reqs); err != nil {
			t.Fatal(err)
		}
		defer st.CloseSend()
		streams[b] = st
	}
	// Read after both sites have sent: a request is served once both asked.
	for b := range cl {
		got[b] = map[uint64]*client.Reply{}
		for len(got[b]) < len(reqs) {
			r, err := streams[b].Recv()
			if err != nil {
				t.Fatalf("site %d: %v", b, err)
			}
			if r.Err != nil {
				t.Fatalf("site %d, request %d: %v", b, r.ID, r.Err)
			}
			got[b][r.ID] = r
		}
	}
	var rs [][]uint64
	for _, id := range []uint64{2, 4} {
		s0, s1 := got[0][id].Shares, got[1][id].Shares
		if len(s0) != 1 || len(s1) != 1 || s0[0].Corr == nil || s1[0].Corr == nil || s0[0].Counter != s1[0].Counter {
			t.Fatalf("request %d: replies %+v and %+v", id, s0, s1)
		}
		if len(s0[0].Corr.A) != 0 || len(s0[0].Corr.R) != in.In || len(s0[0].Corr.Z) != in.Out {
			t.Fatalf("request %d: %d, %d, %d words of A, R, Z", id, len(s0[0].Corr.A), len(s0[0].Corr.R), len(s0[0].Corr.Z))
		}
		r := addShares(s0[0].Corr.R, s1[0].Corr.R, ring)
		z := addShares(s0[0].Corr.Z, s1[0].Corr.Z, ring)
		for o := 0; o < in.Out; o++ {
			var want uint64
			for i := 0; i < in.In; i++ {
				want += a[o*in.In+i] * r[i]
			}
			if want&prg.Mask(ring) != z[o] {
				t.Fatalf("request %d: Z[%d] = %d, (A·R)[%d] = %d", id, o, z[o], o, want&prg.Mask(ring))
			}
		}
		rs = append(rs, r)
	}
	same := true
	for i := range rs[0] {
		same = same && rs[0][i] == rs[1][i]
	}
	if same {
		t.Fatal("two input correlations drew the same input mask")
	}
	k0, k1 := got[0][3].Shares, got[1][3].Shares
	if len(k0) != 20 || len(k1) != 20 {
		t.Fatalf("derived keys: %d and %d", len(k0), len(k1))
	}
	for i := range k0 {
		alpha := (k0[i].AlphaShare + k1[i].AlphaShare) & prg.Mask(ring)
		beta := (k0[i].BetaShare + k1[i].BetaShare) & prg.Mask(ring)
		if err := fss.CheckPair(k0[i].Key, k1[i].Key, alpha, beta, alpha, (alpha+1)&prg.Mask(ring), (alpha-1)&prg.Mask(ring)); err != nil {
			t.Fatalf("derived key %d: %v", i, err)
		}
	}
}

// Bad correlation requests get a bad_request reply naming the field; a
// shape that differs between the sites fails mismatch at both.
func TestCorrelationBadRequests(t *testing.T) {
	cl := servicetest.Start(t, 4096, nil).Apps
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	good := msg.Correlation{Kind: msg.CorrMatVec, Ring: 16, In: 3, Out: 2, Part: msg.CorrWeight}
	withType := client.Correlation(10, good)
	withType.Type = "dcf"
	noShape := &pb.KeyRequest{Id: 11, Mode: "correlation"}
	for _, c := range []struct {
		r    *pb.KeyRequest
		want string
	}{
		{client.Correlation(12, msg.Correlation{Kind: 9, Ring: 16, In: 3, Out: 2}), "Corr.Kind"},
		{client.Correlation(13, msg.Correlation{Kind: msg.CorrMatVec, Ring: 65, In: 3, Out: 2}), "Corr.Ring"},
		{client.Correlation(14, msg.Correlation{Kind: msg.CorrConv2D, Ring: 16, In: 1, Out: 1, K: 9, H: 4, W: 4}), "Corr.In/K/H/W"},
		{withType, "must be empty in a correlation request"},
		{noShape, "corr: missing"},
	} {
		r, err := cl[0].Get(ctx, c.r)
		if err != nil {
			t.Fatalf("request %d: %v", c.r.Id, err)
		}
		re, ok := r.Err.(*client.ReplyError)
		if !ok || re.Class != pb.ClassBadRequest || !strings.Contains(re.Msg, c.want) {
			t.Fatalf("request %d: got %v, want bad_request naming %q", c.r.Id, r.Err, c.want)
		}
	}
	other := good
	other.Out = 3
	r := both(t, func(b int) (*client.Reply, error) {
		return cl[b].Get(ctx, client.Correlation(20, []msg.Correlation{good, other}[b]))
	})
	for b := range r {
		re, ok := r[b].Err.(*client.ReplyError)
		if !ok || re.Class != pb.ClassMismatch {
			t.Fatalf("site %d: a shape that differs between the sites gave %v, want mismatch", b, r[b].Err)
		}
	}
	// An input correlation against a weight mask the module does not keep
	// is refused by party 0's module: answered bad_request at once, not
	// retried, and the session goes on.
	bogus := good
	bogus.Part, bogus.WeightFrom = msg.CorrInput, 1<<40
	r0, err := cl[0].Get(ctx, client.Correlation(30, bogus))
	if err != nil {
		t.Fatal(err)
	}
	if re, ok := r0.Err.(*client.ReplyError); !ok || re.Class != pb.ClassBadRequest || !strings.Contains(re.Msg, "WeightFrom") {
		t.Fatalf("input correlation against no weight mask: %v, want bad_request naming WeightFrom", r0.Err)
	}
	k := both(t, func(b int) (*client.Reply, error) {
		return cl[b].Get(ctx, client.Derived(31, fss.Params{Type: fss.DPF, InBits: 8, OutBits: 8}, 2, 1, false))
	})
	for b := range k {
		if k[b].Err != nil || len(k[b].Shares) != 2 {
			t.Fatalf("site %d: keys after a refused correlation: %+v", b, k[b])
		}
	}
}
