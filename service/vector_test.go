package service

import (
	"context"
	"strings"
	"testing"

	"github.com/kord-fss/kord/client"
	"github.com/kord-fss/kord/fss"
	"github.com/kord-fss/kord/fss/llama"
	"github.com/kord-fss/kord/internal/both"
	"github.com/kord-fss/kord/internal/prg"
	"github.com/kord-fss/kord/module/msg"
	pb "github.com/kord-fss/kord/proto/kordpb"
)

// TestVectorRequests: llama requests with a payload vector (bound with
// shares of every element, derived with a public vector) between ordinary
// requests, on a session with runs (bulk transport) and on one without
// (the per-key path, where a vector request is still a bulk of its own):
// every pair evaluates to β_j·[x < α], each element.
func TestVectorRequests(t *testing.T) {
	for _, noBulk := range []bool{false, true} {
		s := pairOfSites(t, Config{Batch: 16, InFlight: 2, noBulk: noBulk})
		p := fss.Params{Type: fss.DCF, InBits: 14, OutBits: 12}
		m := prg.Mask(12)
		const g = 4
		type truth struct {
			alpha uint64
			beta  []uint64
		}
		ts := map[uint64]truth{}
		var reqs [2][]*pb.KeyRequest
		for i := range 12 {
			id := uint64(100 + i)
			switch i % 3 {
			case 0: // bound vector
				tr := truth{alpha: uint64(i*977) & prg.Mask(14)}
				var bs [2][]uint64
				for j := range g {
					v := uint64(i*131+j*17) & m
					tr.beta = append(tr.beta, v)
					bs[0], bs[1] = append(bs[0], uint64(j*5)&m), append(bs[1], (v-uint64(j*5))&m)
				}
				ts[id] = tr
				reqs[0] = append(reqs[0], client.BoundVector(id, 0, p, 3, bs[0]))
				reqs[1] = append(reqs[1], client.BoundVector(id, 0, p, (tr.alpha-3)&prg.Mask(14), bs[1]))
			case 1: // derived public vector
				vec := []uint64{1, uint64(i), m, 0}
				ts[id] = truth{beta: vec}
				for b := range 2 {
					reqs[b] = append(reqs[b], client.DerivedVector(id, p, 1+i%4, vec))
				}
			default: // an ordinary llama request between them
				ts[id] = truth{beta: []uint64{7}}
				for b := range 2 {
					reqs[b] = append(reqs[b], client.WithProfile(client.Derived(id, p, 3, 7, false), msg.Llama))
				}
			}
		}
		got := recvAllBoth(t, s, reqs)
		for id, tr := range ts {
			r0, r1 := got[0][id], got[1][id]
			if r0 == nil || r1 == nil || len(r0.Shares) == 0 || len(r0.Shares) != len(r1.Shares) {
				t.Fatalf("noBulk=%v request %d: replies %v / %v", noBulk, id, r0, r1)
			}
			lp := msg.LlamaParamsG(p, len(tr.beta))
			for k := range r0.Shares {
				a := tr.alpha
				if (id-100)%3 != 0 {
					a = (r0.Shares[k].AlphaShare + r1.Shares[k].AlphaShare) & prg.Mask(14)
				}
				if err := llama.CheckPair(lp, r0.Shares[k].Raw, r1.Shares[k].Raw, a, tr.beta); err != nil {
					t.Fatalf("noBulk=%v request %d key %d: %v", noBulk, id, k, err)
				}
			}
		}
	}
}

// TestVectorWeight: a payload vector's keys count G times against the
// party's pending bound, so a request of few keys but many elements is
// refused (resource_exhausted) where its key count alone would pass, and
// a fitting one is served.
func TestVectorWeight(t *testing.T) {
	s := pairOfSites(t, Config{Batch: 16, InFlight: 2, MaxPending: 100})
	p := fss.Params{Type: fss.DCF, InBits: 8, OutBits: 8}
	rep, err := s[0].app.Get(context.Background(), client.DerivedVector(1, p, 10, make([]uint64, 11)))
	if err == nil {
		err = rep.Err
	}
	if err == nil || !strings.Contains(err.Error(), "count as 110") {
		t.Fatalf("10 keys of 11 elements under a bound of 100: %v", err)
	}
	vec := []uint64{1, 2, 3, 4, 5, 6, 7, 8, 9, 10}
	if _, err := getBoth(context.Background(), s, func(int) *pb.KeyRequest { return client.DerivedVector(2, p, 10, vec) }); err != nil {
		t.Fatalf("10 keys of 10 elements under a bound of 100: %v", err)
	}
}

// TestDrawnVectorRequests: derived llama requests whose payload vector is
// drawn inside the modules (derive_beta with a group): each site's reply
// carries its share of α and of every element (never packed: through a
// stream, Recv, and through Get), the elements are the modules' draws
// (not all zero), and each pair evaluates to β_j·[x < α] with the
// reconstructed values.
func TestDrawnVectorRequests(t *testing.T) {
	s := pairOfSites(t, Config{Batch: 16, InFlight: 2})
	p := fss.Params{Type: fss.DCF, InBits: 16, OutBits: 24}
	const g = 6
	check := func(what string, r0, r1 *client.Reply, n int) {
		t.Helper()
		if r0 == nil || r1 == nil || len(r0.Shares) != n || len(r1.Shares) != n {
			t.Fatalf("%s: replies %v / %v, want %d keys", what, r0, r1, n)
		}
		var drawn uint64
		for k := range n {
			a := (r0.Shares[k].AlphaShare + r1.Shares[k].AlphaShare) & prg.Mask(16)
			b0, b1 := r0.Shares[k].BetaShares, r1.Shares[k].BetaShares
			if len(b0) != g || len(b1) != g {
				t.Fatalf("%s key %d: %d and %d β shares, want %d", what, k, len(b0), len(b1), g)
			}
			beta := make([]uint64, g)
			for j := range beta {
				beta[j] = (b0[j] + b1[j]) & prg.Mask(24)
				drawn |= beta[j]
			}
			if err := llama.CheckPair(msg.LlamaParamsG(p, g), r0.Shares[k].Raw, r1.Shares[k].Raw, a, beta); err != nil {
				t.Fatalf("%s key %d: %v", what, k, err)
			}
		}
		if drawn == 0 {
			t.Fatalf("%s: every drawn element is zero", what)
		}
	}
	var reqs [2][]*pb.KeyRequest
	for b := range 2 {
		reqs[b] = []*pb.KeyRequest{client.DerivedDrawnVector(1, p, 5, g), client.WithProfile(client.Derived(2, p, 20, 3, false), msg.Llama),
			client.DerivedDrawnVector(3, p, 9, g)}
	}
	got := recvAllBoth(t, s, reqs)
	check("stream request 1", got[0][1], got[1][1], 5)
	check("stream request 3", got[0][3], got[1][3], 9)
	reps, err := getBoth(context.Background(), s, func(int) *pb.KeyRequest { return client.DerivedDrawnVector(4, p, 2, g) })
	if err != nil {
		t.Fatal(err)
	}
	check("Get", reps[0], reps[1], 2)
}

// recvAllBoth runs recvAll at both sites at once.
func recvAllBoth(t *testing.T, s [2]*site, reqs [2][]*pb.KeyRequest) [2]map[uint64]*client.Reply {
	var got [2]map[uint64]*client.Reply
	both.Each(func(b int) error {
		got[b] = recvAll(t, s[b], reqs[b])
		return nil
	})
	return got
}
