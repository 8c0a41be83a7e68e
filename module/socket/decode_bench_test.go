package socket

import (
	"bytes"
	"testing"

	"google.golang.org/protobuf/proto"

	pb "github.com/kord-fss/kord/proto/modulepb"
)

// BenchmarkDecodeResponse: a bulk's response (a slab of 256 keys, a
// collect_range and a result that falls back to proto.Unmarshal) read by
// the fast path.
func BenchmarkDecodeResponse(b *testing.B) {
	n := 256
	as := make([]uint64, n)
	for i := range as {
		as[i] = uint64(i) << 40
	}
	m := &pb.ModuleResponse{Results: []*pb.Result{{Op: &pb.Result_PeerFrames{PeerFrames: &pb.PeerFramesResponse{Accepted: 1}}},
		{Op: &pb.Result_Collect{Collect: &pb.CollectResponse{Counter: 1 << 33, Mode: 2, Slab: &pb.Slab{First: 1 << 33, N: uint32(n), Mode: 2, Type: 2,
			InBits: 32, OutBits: 32, Stride: 400, Keys: bytes.Repeat([]byte{7, 8}, 200*n), AlphaShares: as,
			BetaShares: as, PairTags: bytes.Repeat([]byte{0xa5}, 48)}}}},
		{Op: &pb.Result_CollectRange{CollectRange: &pb.CollectRangeResponse{Modes: []byte{0}, Keys: []byte{1}, KeyLens: []uint32{1},
			AlphaShares: []uint64{0}, BetaShares: []uint64{0}}}}}}
	buf, _ := proto.Marshal(m)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := decodeResponse(buf); err != nil {
			b.Fatal(err)
		}
	}
}
