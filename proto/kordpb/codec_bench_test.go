package kordpb

import (
	"bytes"
	"testing"

	"google.golang.org/protobuf/proto"
)

// BenchmarkDecodeKeyReplies: a batch of 256 packed replies at a key stride
// read by the fast path into recycled lists.
func BenchmarkDecodeKeyReplies(b *testing.B) {
	n := 256
	xs := make([]uint64, n)
	ls := make([]uint32, n)
	for i := range xs {
		xs[i] = uint64(i) << 40
		ls[i] = 400
	}
	m := &KeyReplies{Packed: &PackedReplies{Ids: xs[:64], Counts: ls[:64], Counters: xs, Keys: bytes.Repeat([]byte{3, 4}, 200*n),
		KeyStride: 400, AlphaShares: xs, BetaShares: xs, Evals: xs, EvalLens: ls}}
	buf, _ := proto.Marshal(m)
	b.ReportAllocs()
	spare := &PackedReplies{}
	for b.Loop() {
		var kr KeyReplies
		if !decodeKeyRepliesInto(buf, &kr, spare) {
			b.Fatal("refused")
		}
	}
}
