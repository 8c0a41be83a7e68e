package service

import (
	"math/rand/v2"
	"reflect"
	"testing"

	pb "github.com/kord-fss/kord/proto/kordpb"
)

// TestInitPackedMatchesInit: the direct packed path accepts only requests
// the long way (packedRequest, then init) accepts, and makes the same job.
func TestInitPackedMatchesInit(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	pick := func(vs ...uint64) uint64 { return vs[rng.IntN(len(vs))] }
	fast := 0
	for it := 0; it < 200000; it++ {
		pk := &pb.PackedRequests{Ids: []uint64{rng.Uint64()},
			Shapes: []byte{byte(rng.IntN(5)), byte(rng.IntN(5)), byte(rng.IntN(4)), byte(pick(0, 1, 8, 16, 32, 64, 65, 255)),
				byte(pick(0, 1, 8, 16, 32, 64, 65, 255)), byte(pick(0, 0, 1, 2))},
			AlphaShares: []uint64{pick(0, 0, 1, 255, 256, 1<<20, rng.Uint64())}, BetaShares: []uint64{pick(0, 0, 1, 255, 256, 1<<20, rng.Uint64())},
			Counts: []uint32{uint32(pick(0, 1, 2, 62, MaxCount, MaxCount+1))}, Betas: []uint64{pick(0, 0, 0, 1, 300, rng.Uint64())}}
		var r pb.KeyRequest
		werr := packedRequest(pk, 0, &r)
		var want job
		if werr == nil {
			werr = want.init(&r)
		}
		var got job
		if !got.initPacked(pk, 0) {
			continue
		}
		fast++
		if werr != nil {
			t.Fatalf("%v: the packed path accepts what init refuses (%v)", &r, werr)
		}
		if got.id != want.id || got.tier != want.tier || !reflect.DeepEqual(got.shares, want.shares) || got.points != nil ||
			!sameShape(got.item, want.item) || got.item.Mode != want.item.Mode {
			t.Fatalf("%v: packed job %v %v, init %v %v", &r, got.shares, got.item, want.shares, want.item)
		}
	}
	if fast == 0 {
		t.Fatal("no request took the packed path")
	}
}
