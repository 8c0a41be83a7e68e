// The wire side of the batch tests: replies as the party encodes them, fed
// to a Stream without a server, and the checks of the key views they give.

package client

import (
	"bytes"
	"io"
	"math/rand/v2"
	"testing"
	"unsafe"

	"google.golang.org/grpc/mem"
	"google.golang.org/protobuf/proto"

	"github.com/kord-fss/kord/fss"
	"github.com/kord-fss/kord/internal/prg"
	pb "github.com/kord-fss/kord/proto/kordpb"
)

// wireStream is a KeySource_KeysClient that replays encoded KeyReplies
// messages through the project's codec, as gRPC hands them to RecvMsg.
type wireStream struct {
	pb.KeySource_KeysClient
	msgs [][]byte
	i    int
	loop bool // start over after the last message instead of io.EOF
	// frame: hand each message over in buffers of this many bytes, as
	// gRPC hands over a message's HTTP/2 data frames (0: one buffer).
	frame int
}

func (w *wireStream) RecvMsg(m any) error {
	if w.i == len(w.msgs) {
		if !w.loop || len(w.msgs) == 0 {
			return io.EOF
		}
		w.i = 0
	}
	b := w.msgs[w.i]
	w.i++
	if w.frame <= 0 {
		return pb.Codec().Unmarshal(mem.BufferSlice{mem.SliceBuffer(b)}, m)
	}
	var data mem.BufferSlice
	for len(b) > 0 {
		n := min(w.frame, len(b))
		data = append(data, mem.SliceBuffer(b[:n:n]))
		b = b[n:]
	}
	return pb.Codec().Unmarshal(data, m)
}

func newWireStream(msgs [][]byte, loop bool) *Stream {
	return &Stream{s: &wireStream{msgs: msgs, loop: loop}, free: make(chan *batchMem, freeBatches)}
}

// pairData is what both sites were sent for one key: α, β and the keys.
type pairData struct {
	p           fss.Params
	alpha, beta uint64
	k           [2][]byte
	a, b        [2]uint64 // additive shares of α and β
	counter     uint64
}

// packedMessages builds both parties' packed messages for replies of
// per-reply key counts, keys of shape p, with derived-mode shares; keys
// are in one slab per message, as the party sends them.
func packedMessages(t testing.TB, r *rand.Rand, p fss.Params, counts [][]int, firstID uint64) (msgs [2][][]byte, pairs []pairData) {
	id := firstID
	for _, cs := range counts {
		n := 0
		for _, c := range cs {
			n += c
		}
		alpha, beta := make([]uint64, n), make([]uint64, n)
		root0, root1 := make([][16]byte, n), make([][16]byte, n)
		for i := range alpha {
			alpha[i], beta[i] = r.Uint64()&prg.Mask(p.InBits), r.Uint64()&prg.Mask(p.OutBits)|1
			for j := range root0[i] {
				root0[i][j], root1[i][j] = byte(r.Uint32()), byte(r.Uint32())
			}
		}
		out0, out1, err := fss.GenBatchWithRoots(p, alpha, beta, root0, root1)
		if err != nil {
			t.Fatal(err)
		}
		ks := p.KeySize()
		var pk [2]*pb.PackedReplies
		for b := range pk {
			pk[b] = &pb.PackedReplies{}
		}
		pk[0].Keys, pk[1].Keys = out0, out1
		k := 0
		for _, c := range cs {
			for b := range pk {
				pk[b].Ids = append(pk[b].Ids, id)
				pk[b].Counts = append(pk[b].Counts, uint32(c))
			}
			id++
			for range c {
				d := pairData{p: p, alpha: alpha[k], beta: beta[k], counter: 1000 + uint64(len(pairs))}
				d.k[0], d.k[1] = out0[k*ks:(k+1)*ks], out1[k*ks:(k+1)*ks]
				d.a[0], d.b[0] = r.Uint64()&prg.Mask(p.InBits), r.Uint64()&prg.Mask(p.OutBits)
				d.a[1], d.b[1] = (d.alpha-d.a[0])&prg.Mask(p.InBits), (d.beta-d.b[0])&prg.Mask(p.OutBits)
				for b := range pk {
					pk[b].Counters = append(pk[b].Counters, d.counter)
					pk[b].KeyLens = append(pk[b].KeyLens, uint32(ks))
					pk[b].AlphaShares = append(pk[b].AlphaShares, d.a[b])
					pk[b].BetaShares = append(pk[b].BetaShares, d.b[b])
				}
				pairs = append(pairs, d)
				k++
			}
		}
		for b := range pk {
			raw, err := proto.Marshal(&pb.KeyReplies{Packed: pk[b]})
			if err != nil {
				t.Fatal(err)
			}
			msgs[b] = append(msgs[b], raw)
		}
	}
	return msgs, pairs
}

// checkPairViews evaluates both parties' views at α, α±1 and a random
// point: the shares add up to f.
func checkPairViews(t testing.TB, v0, v1 fss.KeyView, p fss.Params, alpha, beta uint64) {
	t.Helper()
	m := prg.Mask(p.InBits)
	if v0.Params() != p {
		t.Fatalf("views of %v, want %v", v0.Params(), p)
	}
	if err := fss.CheckPair(v0, v1, alpha, beta, alpha, (alpha+1)&m, (alpha-1)&m, rand.Uint64()&m); err != nil {
		t.Fatal(err)
	}
}

// overlaps reports whether two byte slices share memory.
func overlaps(a, b []byte) bool {
	if len(a) == 0 || len(b) == 0 {
		return false
	}
	a0, b0 := uintptr(unsafe.Pointer(&a[0])), uintptr(unsafe.Pointer(&b[0]))
	return a0 < b0+uintptr(len(b)) && b0 < a0+uintptr(len(a))
}

func zeros(b []byte) bool { return bytes.Count(b, []byte{0}) == len(b) }

// strideForm rewrites packed messages with keys at key_stride (key_lens
// omitted), as a party sends them to a client that asked for
// stride_replies; every key of each message must have one size.
func strideForm(t testing.TB, msgs [][]byte) [][]byte {
	out := make([][]byte, len(msgs))
	for i, m := range msgs {
		var kr pb.KeyReplies
		if err := proto.Unmarshal(m, &kr); err != nil {
			t.Fatal(err)
		}
		pk := kr.Packed
		pk.KeyStride, pk.KeyLens = pk.KeyLens[0], nil
		b, err := proto.Marshal(&kr)
		if err != nil {
			t.Fatal(err)
		}
		out[i] = b
	}
	return out
}
