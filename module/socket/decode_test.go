package socket

import (
	"bytes"
	"math/rand/v2"
	"testing"

	"google.golang.org/protobuf/proto"

	pb "github.com/kord-fss/kord/proto/modulepb"
)

// TestDecodeResponseMatchesProto: decodeResponse reads what proto.Unmarshal
// reads, and refuses what it refuses, also on corrupted messages.
func TestDecodeResponseMatchesProto(t *testing.T) {
	cr := &pb.CollectRangeResponse{Modes: []byte{0, 1, 2}, Keys: bytes.Repeat([]byte{7, 8, 9}, 100), KeyLens: []uint32{100, 100, 100},
		AlphaShares: []uint64{1, 1 << 40, 0}, BetaShares: []uint64{0, 3, 1 << 63}, Evals: []uint64{5}, EvalLens: []uint32{0, 1, 0},
		PairTags: bytes.Repeat([]byte{0xa5, 0x5a}, 24)}
	msgs := []*pb.ModuleResponse{
		{Results: []*pb.Result{{Op: &pb.Result_CollectRange{CollectRange: cr}}}},
		{Results: []*pb.Result{{Op: &pb.Result_PeerFrames{PeerFrames: &pb.PeerFramesResponse{Accepted: 3}}},
			{Op: &pb.Result_CollectRange{CollectRange: &pb.CollectRangeResponse{Modes: []byte{0}, Keys: []byte{1}, KeyLens: []uint32{1},
				AlphaShares: []uint64{0}, BetaShares: []uint64{0}}}}}},
		{Results: []*pb.Result{{ErrorClass: ClassBadRequest, Error: "no"}}},
		// a bulk's slab (the collect of a SubmitBulk)
		{Results: []*pb.Result{{Op: &pb.Result_PeerFrames{PeerFrames: &pb.PeerFramesResponse{Accepted: 1}}},
			{Op: &pb.Result_Collect{Collect: &pb.CollectResponse{Counter: 1 << 33, Mode: 2, Slab: &pb.Slab{First: 1 << 33, N: 3, Mode: 2, Type: 2,
				InBits: 12, OutBits: 12, Stride: 100, Keys: bytes.Repeat([]byte{7, 8}, 150), AlphaShares: []uint64{1, 2, 1 << 50},
				BetaShares: []uint64{3, 0, 4}, PairTags: bytes.Repeat([]byte{0xa5}, 48)}}}}}},
		{Results: []*pb.Result{{ErrorClass: ClassBadRequest, Error: "no"}}},
		{Results: []*pb.Result{{ErrorClass: 4, Op: &pb.Result_CollectRange{CollectRange: &pb.CollectRangeResponse{}}}}},
		{},
	}
	rng := rand.New(rand.NewPCG(3, 4))
	for _, m := range msgs {
		b, err := proto.Marshal(m)
		if err != nil {
			t.Fatal(err)
		}
		for it := 0; it < 3000; it++ {
			c := bytes.Clone(b)
			if it > 0 && len(c) > 0 {
				for k := rng.IntN(3) + 1; k > 0; k-- {
					c[rng.IntN(len(c))] = byte(rng.Uint32())
				}
				if rng.IntN(4) == 0 {
					c = c[:rng.IntN(len(c))]
				}
			}
			var want pb.ModuleResponse
			werr := proto.Unmarshal(c, &want)
			got, gerr := decodeResponse(bytes.Clone(c))
			if (werr == nil) != (gerr == nil) {
				t.Fatalf("%x: proto.Unmarshal %v, decodeResponse %v", c, werr, gerr)
			}
			if werr == nil && !proto.Equal(&want, got) {
				t.Fatalf("%x: decoded %v, want %v", c, got, &want)
			}
		}
	}
}

// TestRangeRespPairTags: a collect range's outputs carry their own pair
// tags, and a response whose tags do not cover every output is refused.
func TestRangeRespPairTags(t *testing.T) {
	cr := &pb.CollectRangeResponse{Modes: []byte{0, 0}, KeyLens: []uint32{0, 0}, AlphaShares: []uint64{0, 0}, BetaShares: []uint64{0, 0},
		PairTags: make([]byte, 32)}
	cr.PairTags[0], cr.PairTags[16] = 1, 2
	out, err := rangeRespFromPB(cr, 10, 2)
	if err != nil || out[0].PairTag[0] != 1 || out[1].PairTag[0] != 2 || out[1].Counter != 11 {
		t.Fatalf("%v %+v", err, out)
	}
	for _, n := range []int{0, 16, 31, 48} {
		cr.PairTags = make([]byte, n)
		if _, err := rangeRespFromPB(cr, 10, 2); err == nil {
			t.Fatalf("%d bytes of pair tags for 2 outputs accepted", n)
		}
	}
}

// FuzzDecodeResponse: decodeResponse (its collect-range and slab readers
// included) reads what proto.Unmarshal reads and refuses what it refuses.
func FuzzDecodeResponse(f *testing.F) {
	slab := &pb.ModuleResponse{Results: []*pb.Result{{Op: &pb.Result_Collect{Collect: &pb.CollectResponse{Counter: 5, Mode: 1,
		Slab: &pb.Slab{First: 5, N: 2, Mode: 1, Type: 1, InBits: 8, OutBits: 8, Stride: 3, Keys: make([]byte, 6), PairTags: make([]byte, 32)}}}}}}
	b, _ := proto.Marshal(slab)
	f.Add(b)
	// A slab whose keys came as a memfd (keys_fd, no keys).
	fd := proto.Clone(slab).(*pb.ModuleResponse)
	fd.Results[0].GetCollect().Slab.Keys, fd.Results[0].GetCollect().Slab.KeysFd = nil, true
	b, _ = proto.Marshal(fd)
	f.Add(b)
	f.Fuzz(func(t *testing.T, b []byte) {
		var want pb.ModuleResponse
		werr := proto.Unmarshal(b, &want)
		got, gerr := decodeResponse(bytes.Clone(b))
		if (werr == nil) != (gerr == nil) {
			t.Fatalf("%x: proto.Unmarshal %v, decodeResponse %v", b, werr, gerr)
		}
		if werr == nil && !proto.Equal(&want, got) {
			t.Fatalf("%x: decoded %v, want %v", b, got, &want)
		}
	})
}
