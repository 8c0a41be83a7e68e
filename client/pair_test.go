package client_test

import (
	"context"
	"errors"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/kord-fss/kord/client"
	"github.com/kord-fss/kord/fss"
	"github.com/kord-fss/kord/internal/prg"
	"github.com/kord-fss/kord/module/socket"
	pb "github.com/kord-fss/kord/proto/kordpb"
	"github.com/kord-fss/kord/service"
	"github.com/kord-fss/kord/service/servicetest"
)

// startParties runs two paired parties in process (servicetest: each
// with its durable module behind a module socket, served over gRPC on
// loopback) and returns a client of each.
func startParties(t *testing.T) [2]*client.Client {
	t.Helper()
	cl, _ := startPartiesWith(t, nil)
	return cl
}

// startPartiesWith is startParties with each party's config passed
// through tune (if not nil) before it starts; stop[b] stops party b (its
// gRPC server and the party; its module stays), as a crash would.
func startPartiesWith(t *testing.T, tune func(*service.Config)) (cl [2]*client.Client, stop [2]func()) {
	t.Helper()
	p := servicetest.StartWith(t, servicetest.Options{Tune: tune})
	return p.Apps, p.Stop
}

// siteKey is one received key share, kept in its live batch.
type siteKey struct {
	b client.Batch
	i int
}

// TestBatchesPairAcrossParties: both sites' applications read their
// replies from real parties as batches (message boundaries may differ
// between the sites); every key share's view pairs with the other site's
// — Eval(0,x)+Eval(1,x) = f(x) at α, α±1 and a random x — for bound keys
// (α, β from the sites' shares) and derived keys (α, β from the shares the
// batches carry). Released batches are refused. It runs with the
// parties taking their modules' bulk slabs as sealed memfds, read in place
// or handed on to the application on their Unix sockets (the default on
// Linux for such an application: the slabs must take that path), and as
// bytes.
func TestBatchesPairAcrossParties(t *testing.T) {
	for _, fds := range []bool{true, false} {
		t.Run(map[bool]string{true: "memfd", false: "bytes"}[fds], func(t *testing.T) {
			before := socket.MappedSlabs()
			batchesPair(t, fds)
			if mapped := socket.MappedSlabs() - before; fds && socket.SlabFDSupported && mapped == 0 {
				t.Fatal("no slab took the memfd path")
			} else if !fds && mapped != 0 {
				t.Fatalf("%d slabs mapped with memfds off", mapped)
			}
		})
	}
}

func batchesPair(t *testing.T, fds bool) {
	// Memfds go to an application that takes them: one on the parties'
	// Unix sockets, whose streams ask for slab_fds.
	cl := servicetest.StartWith(t, servicetest.Options{AppUnix: fds,
		Tune: func(c *service.Config) { c.Module.(*socket.Client).UseSlabFDs(fds) }}).Apps
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	r := rand.New(rand.NewPCG(11, 12))
	type want struct {
		p           fss.Params
		alpha, beta uint64 // bound
		derived     bool
	}
	wants := map[uint64]want{}
	var reqs [2][]*pb.KeyRequest
	id := uint64(1)
	for _, p := range []fss.Params{{Type: fss.DPF, InBits: 32, OutBits: 32}, {Type: fss.DCF, InBits: 16, OutBits: 20}} {
		for range 40 {
			w := want{p: p, alpha: r.Uint64() & prg.Mask(p.InBits), beta: r.Uint64()&prg.Mask(p.OutBits) | 1}
			a0, b0 := r.Uint64()&prg.Mask(p.InBits), r.Uint64()&prg.Mask(p.OutBits)
			reqs[0] = append(reqs[0], client.Bound(id, 0, p, a0, b0))
			reqs[1] = append(reqs[1], client.Bound(id, 0, p, (w.alpha-a0)&prg.Mask(p.InBits), (w.beta-b0)&prg.Mask(p.OutBits)))
			wants[id] = w
			id++
		}
		for b := range reqs {
			reqs[b] = append(reqs[b], client.Derived(id, p, 50, 0, true))
		}
		wants[id] = want{p: p, derived: true}
		id++
	}
	var got [2]map[uint64][]siteKey
	var batches [2][]client.Batch
	var streams [2]*client.Stream
	for b := range cl {
		st, err := cl[b].Stream(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if err := st.SendBatch(reqs[b]); err != nil {
			t.Fatal(err)
		}
		defer st.CloseSend()
		got[b] = map[uint64][]siteKey{}
		streams[b] = st
	}
	// Read after both sites have sent: a key is delivered once both asked.
	for b := range cl {
		for len(got[b]) < len(wants) {
			bt, err := streams[b].RecvBatch()
			if err != nil {
				t.Fatal(err)
			}
			batches[b] = append(batches[b], bt)
			for rr := 0; rr < bt.Replies(); rr++ {
				rep := bt.Reply(rr)
				if rep.Err != nil {
					t.Fatalf("site %d reply %d: %v", b, rep.ID, rep.Err)
				}
				for i := rep.First; i < rep.First+rep.N; i++ {
					got[b][rep.ID] = append(got[b][rep.ID], siteKey{bt, i})
				}
			}
		}
	}
	for id, w := range wants {
		k0, k1 := got[0][id], got[1][id]
		if len(k0) != len(k1) || len(k0) == 0 || w.derived && len(k0) != 50 || !w.derived && len(k0) != 1 {
			t.Fatalf("request %d: %d and %d keys", id, len(k0), len(k1))
		}
		for j := range k0 {
			s0, s1 := k0[j], k1[j]
			if s0.b.Counter(s0.i) != s1.b.Counter(s1.i) {
				t.Fatalf("request %d key %d: counters %d and %d", id, j, s0.b.Counter(s0.i), s1.b.Counter(s1.i))
			}
			alpha, beta := w.alpha, w.beta
			if w.derived {
				alpha = (s0.b.AlphaShare(s0.i) + s1.b.AlphaShare(s1.i)) & prg.Mask(w.p.InBits)
				beta = (s0.b.BetaShare(s0.i) + s1.b.BetaShare(s1.i)) & prg.Mask(w.p.OutBits)
			}
			v0, v1 := s0.b.Key(s0.i), s1.b.Key(s1.i)
			if v0.Params() != w.p || v0.Party() != 0 || v1.Party() != 1 {
				t.Fatalf("request %d: views of %v parties %d, %d", id, v0.Params(), v0.Party(), v1.Party())
			}
			m := prg.Mask(w.p.InBits)
			if err := fss.CheckPair(v0, v1, alpha, beta, alpha, (alpha+1)&m, (alpha-1)&m, r.Uint64()&m); err != nil {
				t.Fatalf("request %d key %d: %v", id, j, err)
			}
		}
	}
	for b := range batches {
		for _, bt := range batches[b] {
			v := bt.Key(0)
			bt.Release()
			if bt.Len() != 0 || !bt.Key(0).IsZero() {
				t.Fatal("released batch answers")
			}
			if _, err := v.Eval(0); !errors.Is(err, fss.ErrStaleView) {
				t.Fatalf("view of a released batch evaluates: %v", err)
			}
		}
	}
}
