// Replies with keys at key_stride: the same keys as the list form, and bad
// strides refused.

package client

import (
	"fmt"
	"io"
	"math/rand/v2"
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/kord-fss/kord/fss"
	pb "github.com/kord-fss/kord/proto/kordpb"
)

// TestStrideFormSameReplies: a message with keys at key_stride reads as
// the same replies, through Recv and RecvRaw, as the same message with
// key_lens; a stride that does not cover the keys exactly, or comes with
// key_lens, is refused.
func TestStrideFormSameReplies(t *testing.T) {
	r := rand.New(rand.NewPCG(21, 22))
	p := fss.Params{Type: fss.DCF, InBits: 16, OutBits: 16}
	msgs, _ := packedMessages(t, r, p, [][]int{{4, 1, 7}, {2}}, 1)
	lens, strided := msgs[0], strideForm(t, msgs[0])
	for _, raw := range []bool{false, true} {
		a, b := newWireStream(lens, false), newWireStream(strided, false)
		for {
			var ra, rb *pb.KeyReply
			var ea, eb error
			if raw {
				ra, ea = a.RecvRaw()
				rb, eb = b.RecvRaw()
			} else {
				var pa, pb2 *Reply
				pa, ea = a.Recv()
				pb2, eb = b.Recv()
				if ea == nil && eb == nil {
					if pa.ID != pb2.ID || len(pa.Shares) != len(pb2.Shares) {
						t.Fatalf("replies differ: %+v / %+v", pa, pb2)
					}
					for i := range pa.Shares {
						if !pa.Shares[i].Key.Equal(pb2.Shares[i].Key) || pa.Shares[i].Counter != pb2.Shares[i].Counter {
							t.Fatalf("reply %d key %d differs", pa.ID, i)
						}
					}
				}
			}
			if ea == io.EOF && eb == io.EOF {
				break
			}
			if ea != nil || eb != nil {
				t.Fatal(ea, eb)
			}
			if raw && !proto.Equal(ra, rb) {
				t.Fatalf("raw replies differ: %v / %v", ra, rb)
			}
		}
	}
	var kr pb.KeyReplies
	if err := proto.Unmarshal(strided[0], &kr); err != nil {
		t.Fatal(err)
	}
	for _, bad := range []func(pk *pb.PackedReplies){
		func(pk *pb.PackedReplies) { pk.KeyStride++ },
		func(pk *pb.PackedReplies) { pk.KeyLens = make([]uint32, len(pk.Counters)) },
		func(pk *pb.PackedReplies) { pk.Keys = pk.Keys[:len(pk.Keys)-1] },
	} {
		m := proto.Clone(&kr).(*pb.KeyReplies)
		bad(m.Packed)
		b, _ := proto.Marshal(m)
		if _, err := newWireStream([][]byte{b}, false).RecvBatch(); err == nil {
			t.Fatalf("a malformed stride message was read: %v", m.Packed.KeyStride)
		}
	}
}

// TestBatchBadKeyStride: in a message with keys at key_stride, a bad key
// fails its reply with the error ViewKey gives it, named by counter, the
// reply's views zero, and no other reply — wherever in the reply it is.
func TestBatchBadKeyStride(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	p := fss.Params{Type: fss.DCF, InBits: 8, OutBits: 5}
	msgs, _ := packedMessages(t, r, p, [][]int{{2, 3, 2}}, 1)
	ks := p.KeySize()
	for _, c := range []struct {
		key, off int
		val      byte
	}{{2, 0, 0x4c}, {3, 0, 0x4c}, {4, 3, 2}, {3, 2, 2}, {4, ks - 1, 0xff}, {2, 5, 6}, {3, 3, 1}} {
		var m pb.KeyReplies
		if err := proto.Unmarshal(msgs[0][0], &m); err != nil {
			t.Fatal(err)
		}
		want, werr := fss.ViewKey(func() []byte {
			k := append([]byte(nil), m.Packed.Keys[c.key*ks:(c.key+1)*ks]...)
			k[c.off] = c.val
			return k
		}())
		m.Packed.Keys[c.key*ks+c.off] = c.val
		raw, _ := proto.Marshal(&m)
		s := newWireStream(strideForm(t, [][]byte{raw}), false)
		b, err := s.RecvBatch()
		if err != nil {
			t.Fatal(err)
		}
		if b.Len() != 7 || b.Replies() != 3 {
			t.Fatalf("%d keys, %d replies", b.Len(), b.Replies())
		}
		for rr := range 3 {
			rep := b.Reply(rr)
			bad := rr == 1 && werr != nil
			if bad && (rep.Err == nil || rep.Err.Error() != fmt.Sprintf("client: key at counter %d: %v", 1000+c.key, werr)) || !bad && rep.Err != nil {
				t.Fatalf("key %d byte %d = %#x: reply %d: %v (ViewKey: %v)", c.key, c.off, c.val, rr, rep.Err, werr)
			}
			for i := rep.First; i < rep.First+rep.N; i++ {
				if b.Key(i).IsZero() != bad {
					t.Fatalf("reply %d key %d: zero view %v", rr, i, b.Key(i).IsZero())
				}
			}
		}
		if werr == nil && b.Key(c.key).Party() != want.Party() {
			t.Fatalf("key %d: party %d, want %d", c.key, b.Key(c.key).Party(), want.Party())
		}
		b.Release()
	}
}

// TestReplyKeys: ReplyKeys gives a strided message's replies' keys as the
// one slice of the batch they lie in, the same bytes as their views, and
// nil for a message with key_lens and once the batch is released.
func TestReplyKeys(t *testing.T) {
	r := rand.New(rand.NewPCG(23, 24))
	p := fss.Params{Type: fss.DPF, InBits: 20, OutBits: 8}
	msgs, _ := packedMessages(t, r, p, [][]int{{3, 1, 5}}, 1)
	for _, strided := range []bool{false, true} {
		m := msgs[0]
		if strided {
			m = strideForm(t, m)
		}
		bt, err := newWireStream(m, false).RecvBatch()
		if err != nil {
			t.Fatal(err)
		}
		for rp := 0; rp < bt.Replies(); rp++ {
			kb, st := bt.ReplyKeys(rp)
			if !strided {
				if kb != nil {
					t.Fatalf("reply %d: keys at a stride from a message with key_lens", rp)
				}
				continue
			}
			rep := bt.Reply(rp)
			if st != p.KeySize() || len(kb) != rep.N*st {
				t.Fatalf("reply %d: %d bytes at stride %d for %d keys of %d", rp, len(kb), st, rep.N, p.KeySize())
			}
			for i := 0; i < rep.N; i++ {
				if string(kb[i*st:(i+1)*st]) != string(bt.Key(rep.First+i).Bytes()) {
					t.Fatalf("reply %d key %d: ReplyKeys differs from the key's view", rp, i)
				}
			}
		}
		bt.Release()
		if kb, _ := bt.ReplyKeys(0); kb != nil {
			t.Fatal("ReplyKeys of a released batch")
		}
	}
}
