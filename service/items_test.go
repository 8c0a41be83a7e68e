package service

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"math/rand/v2"
	"strings"
	"sync/atomic"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/protobuf/proto"

	"github.com/kord-fss/kord/fss"
	"github.com/kord-fss/kord/module/msg"
	pb "github.com/kord-fss/kord/proto/kordpb"
)

func randomItems(rng *rand.Rand, n int) []*pb.BatchItem {
	items := make([]*pb.BatchItem, n)
	for i := range items {
		it := &pb.BatchItem{Id: rng.Uint64() >> rng.IntN(64), Mode: uint32(1 + rng.IntN(3)), Type: uint32(1 + rng.IntN(2)),
			InBits: uint32(1 + rng.IntN(64)), OutBits: uint32(1 + rng.IntN(64)), Count: uint32(1 + rng.IntN(64))}
		if rng.IntN(4) == 0 {
			it.DeriveBeta = rng.IntN(2) == 0
			it.Beta = rng.Uint64()
		}
		items[i] = it
	}
	return items
}

// TestPackItemsRoundTrip: packed items unpack to the same items, and a
// packed list that does not match the ids is refused with its name.
func TestPackItemsRoundTrip(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, n := range []int{1, 2, 17, 256} {
		items := randomItems(rng, n)
		pk := packItems(items)
		if pk == nil {
			t.Fatal("items that fit were not packed")
		}
		back, err := unpackItems(pk)
		if err != nil {
			t.Fatal(err)
		}
		for i := range items {
			if !proto.Equal(items[i], back[i]) {
				t.Fatalf("item %d: %v, unpacked %v", i, items[i], back[i])
			}
		}
	}
	if packItems([]*pb.BatchItem{{Id: 1, InBits: 300}}) != nil {
		t.Fatal("an item with a width over 255 was packed")
	}
	good := packItems(randomItems(rng, 3))
	good.DeriveBeta, good.Betas = []byte{0, 1, 0}, []uint64{0, 5, 0}
	for name, bad := range map[string]func(pk *pb.PackedItems){
		"no ids":      func(pk *pb.PackedItems) { pk.Ids = nil },
		"shape bytes": func(pk *pb.PackedItems) { pk.Shapes = pk.Shapes[:11] },
		"counts":      func(pk *pb.PackedItems) { pk.Counts = pk.Counts[:2] },
		"derive_beta": func(pk *pb.PackedItems) { pk.DeriveBeta = []byte{1} },
		"derive_beta[1] is 2": func(pk *pb.PackedItems) {
			pk.DeriveBeta = []byte{0, 2, 0}
		},
		"betas": func(pk *pb.PackedItems) { pk.Betas = []uint64{1, 2, 3, 4} },
	} {
		pk := proto.Clone(good).(*pb.PackedItems)
		bad(pk)
		if _, err := unpackItems(pk); err == nil || !strings.Contains(err.Error(), name) {
			t.Fatalf("%s: error %v", name, err)
		}
	}
}

// TestChainUnpackedUnchanged: the unpacked transcript is the one parties
// chained before packed items existed (five words per item, hashed as
// they were written), so such a party still agrees with this one.
func TestChainUnpackedUnchanged(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	items := randomItems(rng, 40)
	prev := bytes.Repeat([]byte{9}, 32)
	h := sha256.New()
	h.Write(prev)
	w := func(v uint64) { h.Write(binary.LittleEndian.AppendUint64(nil, v)) }
	w(12)
	w(uint64(msg.BatchMAC))
	w(700)
	w(uint64(len(items)))
	for _, it := range items {
		w(it.Id)
		w(uint64(it.Mode)<<48 | uint64(it.Type)<<40 | uint64(it.InBits)<<32 | uint64(it.OutBits)<<24)
		w(uint64(it.Count))
		if it.DeriveBeta {
			w(1)
		} else {
			w(0)
		}
		w(it.Beta)
	}
	if got := chain(prev, 12, msg.BatchMAC, 700, items, false); !bytes.Equal(got, h.Sum(nil)) {
		t.Fatal("the unpacked transcript changed")
	}
	packed := chain(prev, 12, msg.BatchMAC, 700, items, true)
	if bytes.Equal(packed, h.Sum(nil)) {
		t.Fatal("packed and unpacked transcripts agree")
	}
	items[39].Beta ^= 1
	if bytes.Equal(packed, chain(prev, 12, msg.BatchMAC, 700, items, true)) {
		t.Fatal("the packed transcript does not cover beta")
	}
}

type itemCounter struct {
	grpc.ServerStream
	packed, plain *atomic.Int64
}

func (s *itemCounter) RecvMsg(m any) error {
	err := s.ServerStream.RecvMsg(m)
	if b := m.(*pb.PeerMsg).GetBatch(); err == nil && b != nil {
		if b.PackedItems != nil {
			s.packed.Add(1)
		}
		if len(b.Items) > 0 {
			s.plain.Add(1)
		}
	}
	return err
}

// TestPackedItemsEitherWay: party 0 sends packed items to a party 1 that
// offers to read them, and plain items to one that does not (as one that
// predates them); keys pair either way.
func TestPackedItemsEitherWay(t *testing.T) {
	for _, unpacked := range []bool{false, true} {
		var packed, plain atomic.Int64
		count := grpc.StreamInterceptor(func(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, h grpc.StreamHandler) error {
			if strings.HasSuffix(info.FullMethod, "/Session") {
				ss = &itemCounter{ServerStream: ss, packed: &packed, plain: &plain}
			}
			return h(srv, ss)
		})
		s := pairOfSitesWith(t, Config{Batch: 16, InFlight: 3, itemsUnpacked: unpacked}, count)
		streamBound(t, s, 0, 100, "mac", fss.Params{Type: fss.DPF, InBits: 20, OutBits: 8})
		if unpacked && (packed.Load() != 0 || plain.Load() == 0) || !unpacked && (packed.Load() == 0 || plain.Load() != 0) {
			t.Fatalf("party 1 offers packed items: %v; %d packed batches, %d plain", !unpacked, packed.Load(), plain.Load())
		}
	}
}
