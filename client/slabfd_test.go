package client_test

import (
	"context"
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

// TestGetSlabFDs: a unary Get of a bulk's worth of derived keys while the
// parties take their modules' slabs as sealed memfds: the party copies
// the keys out of its read-only mapping for the reply (the codec wipes a
// reply's keys once encoded, which on the mapping would fault), and every
// pair evaluates to f.
func TestGetSlabFDs(t *testing.T) {
	if !socket.SlabFDSupported {
		t.Skip("slab memfds need Linux")
	}
	// kord's codec, as the daemon runs it: it wipes a KeyReply's keys.
	p0 := servicetest.StartWith(t, servicetest.Options{ServerOptions: []grpc.ServerOption{grpc.ForceServerCodecV2(pb.Codec())},
		Tune: func(c *service.Config) { c.Module.(*socket.Client).UseSlabFDs(true) }})
	cl := p0.Apps
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
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
