package client_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/kord-fss/kord/client"
	"github.com/kord-fss/kord/fss"
	"github.com/kord-fss/kord/internal/prg"
	"github.com/kord-fss/kord/module/socket"
	pb "github.com/kord-fss/kord/proto/kordpb"
	"github.com/kord-fss/kord/service"
	"github.com/kord-fss/kord/service/servicetest"
	"google.golang.org/grpc"
)

// TestGetSlabFDs: a unary Get of a bulk's worth of derived keys from an
// application that also has a stream taking slabs as memfds, so that the
// parties take their modules' slabs for it as sealed memfds: the party
// copies the keys out of its read-only mapping for the reply (the codec
// wipes a reply's keys once encoded, which on the mapping would fault),
// and every pair evaluates to f.
func TestGetSlabFDs(t *testing.T) {
	if !socket.SlabFDSupported {
		t.Skip("slab memfds need Linux")
	}
	// kord's codec, as the daemon runs it: it wipes a KeyReply's keys.
	p0 := servicetest.StartWith(t, servicetest.Options{AppUnix: true, ServerOptions: []grpc.ServerOption{grpc.ForceServerCodecV2(pb.Codec())},
		Tune: func(c *service.Config) { c.Module.(*socket.Client).UseSlabFDs(true) }})
	cl := p0.Apps
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	// A stream at each site that asks for slab_fds, answered once and
	// kept open: the application now takes memfds.
	var sts [2]*client.Stream
	for b := range cl {
		st, err := cl[b].Stream(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if err := st.Send(client.Derived(1000, fss.Params{Type: fss.DPF, InBits: 8, OutBits: 8}, 2, 0, true)); err != nil {
			t.Fatal(err)
		}
		defer st.CloseSend()
		sts[b] = st
	}
	for b, st := range sts {
		if r, err := st.Recv(); err != nil || r.Err != nil {
			t.Fatalf("party %d's stream: %v %v", b, err, r.Err)
		}
	}
	p := fss.Params{Type: fss.DPF, InBits: 32, OutBits: 32}
	before := socket.MappedSlabs()
	for id := uint64(1); id <= 3; id++ {
		r := both(t, func(b int) (*client.Reply, error) { return cl[b].Get(ctx, client.Derived(id, p, 100, 0, true)) })
		if r[0].Err != nil || r[1].Err != nil || len(r[0].Shares) != 100 || len(r[1].Shares) != 100 {
			t.Fatalf("request %d: %v %v, %d and %d keys", id, r[0].Err, r[1].Err, len(r[0].Shares), len(r[1].Shares))
		}
		for i := range r[0].Shares {
			s0, s1 := r[0].Shares[i], r[1].Shares[i]
			alpha := (s0.AlphaShare + s1.AlphaShare) & prg.Mask(32)
			beta := (s0.BetaShare + s1.BetaShare) & prg.Mask(32)
			if err := fss.CheckPair(s0.Key, s1.Key, alpha, beta, alpha, (alpha+1)&prg.Mask(32), 0); err != nil {
				t.Fatalf("request %d key %d: %v", id, i, err)
			}
		}
	}
	if socket.MappedSlabs() == before {
		t.Fatal("no slab took the memfd path")
	}
}

// TestStreamSlabHandOff: an application on a party's Unix socket asks for
// slab_fds; the parties take their modules' slabs as sealed memfds and
// hand each whole one on as the message's keys, which the client reads
// from it. Every pair evaluates to f, some messages did take the memfd
// path, and views kept past Release are refused (their bytes wiped).
func TestStreamSlabHandOff(t *testing.T) {
	if !socket.SlabFDSupported {
		t.Skip("slab memfds need Linux")
	}
	ps := servicetest.StartWith(t, servicetest.Options{AppUnix: true, ServerOptions: []grpc.ServerOption{grpc.ForceServerCodecV2(pb.Codec())},
		Tune: func(c *service.Config) { c.Module.(*socket.Client).UseSlabFDs(true) }})
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	var st [2]*client.Stream
	for b := range st {
		s, err := ps.Apps[b].Stream(ctx)
		if err != nil {
			t.Fatal(err)
		}
		st[b] = s
	}
	p := fss.Params{Type: fss.DCF, InBits: 32, OutBits: 32}
	const reqs, per = 24, 200
	before := client.HandedMessages()
	for b := range st {
		rs := make([]*pb.KeyRequest, reqs)
		for i := range rs {
			rs[i] = client.Derived(uint64(i+1), p, per, 0, true)
		}
		if err := st[b].SendBatch(rs); err != nil {
			t.Fatal(err)
		}
		if err := st[b].CloseSend(); err != nil {
			t.Fatal(err)
		}
	}
	type got struct {
		keys         []*fss.Key
		alpha, betas []uint64
		stale        fss.KeyView // a view of the last batch, kept past its Release
	}
	var sites [2]got
	for b := range st {
		g := &sites[b]
		for len(g.keys) < reqs*per {
			bt, err := st[b].RecvBatch()
			if err != nil {
				t.Fatalf("party %d after %d keys: %v", b, len(g.keys), err)
			}
			for i := 0; i < bt.Len(); i++ {
				k, err := bt.Key(i).Key()
				if err != nil {
					t.Fatalf("party %d key %d: %v", b, len(g.keys), err)
				}
				g.keys, g.alpha, g.betas = append(g.keys, k), append(g.alpha, bt.AlphaShare(i)), append(g.betas, bt.BetaShare(i))
			}
			g.stale = bt.Key(0)
			bt.Release()
		}
	}
	for i := range sites[0].keys {
		alpha := (sites[0].alpha[i] + sites[1].alpha[i]) & prg.Mask(32)
		beta := (sites[0].betas[i] + sites[1].betas[i]) & prg.Mask(32)
		if err := fss.CheckPair(sites[0].keys[i], sites[1].keys[i], alpha, beta, alpha, (alpha+1)&prg.Mask(32), 0); err != nil {
			t.Fatalf("key %d: %v", i, err)
		}
	}
	if client.HandedMessages() == before {
		t.Fatal("no message's keys came as a memfd")
	}
	for b := range sites {
		if _, err := sites[b].stale.Eval(0); !errors.Is(err, fss.ErrStaleView) {
			t.Fatalf("party %d: a view kept past Release: %v, want fss.ErrStaleView", b, err)
		}
	}
}
