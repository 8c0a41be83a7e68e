package kordpb

import (
	"bytes"
	"testing"

	"google.golang.org/grpc/encoding"
	_ "google.golang.org/grpc/encoding/proto"
	"google.golang.org/grpc/mem"
)

func TestClassSizes(t *testing.T) {
	prev := 0
	for n := 1; n <= 1<<20; n += 1 + n/97 {
		idx, c, ok := class(n)
		if !ok || c < n || idx < 0 || idx >= numClasses {
			t.Fatalf("class(%d) = %d, %d, %v", n, idx, c, ok)
		}
		if n > 256 && c > n+n/4+1 {
			t.Fatalf("class(%d): capacity %d wastes over a quarter", n, c)
		}
		if i2, c2, _ := class(c); i2 != idx || c2 != c {
			t.Fatalf("class(%d) = %d/%d but class(%d) = %d/%d", n, idx, c, c, i2, c2)
		}
		if idx < prev {
			t.Fatalf("classes not monotone at %d", n)
		}
		prev = idx
	}
	if _, _, ok := class(1<<maxClassBits + 1); ok {
		t.Fatal("oversized buffers are pooled")
	}
}

// TestCodecSameBytes: the codec writes what gRPC's proto codec writes, and
// the pool hands out zeroed buffers after wiping what it was given back.
func TestCodecSameBytes(t *testing.T) {
	ref := encoding.GetCodecV2("proto")
	big := &PackedReplies{Ids: []uint64{1, 2}, Counts: []uint32{1, 1}, Counters: []uint64{7, 8}, Keys: bytes.Repeat([]byte{0xa5}, 300000),
		KeyLens: []uint32{150000, 150000}}
	for _, m := range []*KeyReplies{{Packed: big}, {Replies: []*KeyReply{{Id: 3}}}} {
		a, err := Codec().Marshal(m)
		if err != nil {
			t.Fatal(err)
		}
		b, err := ref.Marshal(m)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(a.Materialize(), b.Materialize()) {
			t.Fatal("encodings differ")
		}
		var back KeyReplies
		if err := Codec().Unmarshal(a, &back); err != nil {
			t.Fatal(err)
		}
		if len(m.GetPacked().GetKeys()) > 0 && !bytes.Equal(back.Packed.Keys, m.Packed.Keys) {
			t.Fatal("round trip differs")
		}
		a.Free()
		b.Free()
	}
	for i := 0; i < 4; i++ {
		buf := wipePool.Get(300100)
		for _, x := range *buf {
			if x != 0 {
				t.Fatal("pooled buffer not wiped")
			}
		}
		(*buf)[0] = 1
		mem.NewBuffer(buf, wipePool).Free()
	}
}
