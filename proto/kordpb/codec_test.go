package kordpb

import (
	"bytes"
	"math/rand/v2"
	"slices"
	"testing"

	"google.golang.org/protobuf/proto"

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

// TestDecodeKeyRepliesMatchesProto: the in-place reader of key replies
// reads what proto.Unmarshal reads and refuses what it refuses, also on
// corrupted messages.
func TestDecodeKeyRepliesMatchesProto(t *testing.T) {
	msgs := []*KeyReplies{
		{Packed: &PackedReplies{Ids: []uint64{1, 2}, Counts: []uint32{1, 2}, Counters: []uint64{7, 8, 1 << 40}, Keys: bytes.Repeat([]byte{3, 4}, 5000),
			KeyLens: []uint32{4000, 3000, 3000}, AlphaShares: []uint64{0, 5, 6}, BetaShares: []uint64{1, 2, 3}, Evals: []uint64{9}, EvalLens: []uint32{1, 0, 0}}},
		{Replies: []*KeyReply{{Id: 3, Error: "x"}}, Packed: &PackedReplies{Ids: []uint64{4}, Keys: make([]byte, 5000)}},
		{Replies: []*KeyReply{{Id: 3, Keys: []*KeyShare{{Key: make([]byte, 5000)}}}}},
		// keys at a stride (key_lens omitted), key_stride between the bytes fields
		{Packed: &PackedReplies{Ids: []uint64{1, 2}, Counts: []uint32{2, 3}, Counters: []uint64{7, 8, 9, 10, 1 << 40}, Keys: bytes.Repeat([]byte{3, 4}, 2500),
			KeyStride: 1000, AlphaShares: []uint64{0, 5, 6, 7, 8}, BetaShares: []uint64{1, 2, 3, 4, 5}}},
	}
	rng := rand.New(rand.NewPCG(5, 6))
	c := Codec()
	var reused PooledKeyReplies // recycled between messages: reads into spare lists
	released := 0
	defer func() {
		if released == 0 {
			t.Error("no message was read into a pooled buffer")
		}
	}()
	for _, m := range msgs {
		b, err := proto.Marshal(m)
		if err != nil {
			t.Fatal(err)
		}
		for it := 0; it < 3000; it++ {
			x := bytes.Clone(b)
			if it > 0 {
				for k := rng.IntN(3) + 1; k > 0; k-- {
					x[rng.IntN(len(x))] = byte(rng.Uint32())
				}
				if rng.IntN(4) == 0 {
					x = x[:rng.IntN(len(x))]
				}
			}
			var want, got KeyReplies
			werr := proto.Unmarshal(x, &want)
			gerr := c.Unmarshal(mem.BufferSlice{mem.SliceBuffer(bytes.Clone(x))}, &got)
			if (werr == nil) != (gerr == nil) {
				t.Fatalf("%x: proto.Unmarshal %v, codec %v", x, werr, gerr)
			}
			if werr == nil && !proto.Equal(&want, &got) {
				t.Fatalf("decoded %v, want %v", &got, &want)
			}
			// The pooled form reads the same, and Release wipes the
			// buffer its keys were slices of.
			var pm PooledKeyReplies
			perr := c.Unmarshal(mem.BufferSlice{mem.SliceBuffer(bytes.Clone(x))}, &pm)
			if (werr == nil) != (perr == nil) || werr == nil && !proto.Equal(&want, pm.M) {
				t.Fatalf("%x: pooled decode %v / %v, want %v / %v", x, perr, pm.M, werr, &want)
			}
			if perr == nil && pm.M.Packed != nil && len(pm.M.Packed.Keys) > 0 {
				keys, pooled := pm.M.Packed.Keys, pm.buf != nil
				if pooled {
					released++
				}
				pm.Release()
				if pooled && bytes.Count(keys, []byte{0}) != len(keys) {
					t.Fatal("Release left key bytes in the pooled buffer")
				}
			}
			pm.Release()
			rerr := c.Unmarshal(mem.BufferSlice{mem.SliceBuffer(bytes.Clone(x))}, &reused)
			if (werr == nil) != (rerr == nil) || werr == nil && !proto.Equal(&want, reused.M) {
				t.Fatalf("%x: decode into recycled lists %v / %v, want %v / %v", x, rerr, reused.M, werr, &want)
			}
			reused.Recycle()
		}
	}
}

// TestMarshalWipesKeyReply: a KeyReply (a unary Get's answer) is encoded
// as gRPC's codec encodes it, its key material is overwritten once
// encoded, and the encoding lives in a buffer that is wiped when gRPC
// frees it.
func TestMarshalWipesKeyReply(t *testing.T) {
	ref := encoding.GetCodecV2("proto")
	for _, keyLen := range []int{40, 700, 5000} {
		mk := func() *KeyReply {
			return &KeyReply{Id: 9, Keys: []*KeyShare{
				{Counter: 4, Key: bytes.Repeat([]byte{0x5a}, keyLen), AlphaShare: 77, BetaShare: 88},
				{Counter: 5, Evals: []uint64{1, 2, 3}},
				nil,
			}}
		}
		r := mk()
		want, err := ref.Marshal(mk())
		if err != nil {
			t.Fatal(err)
		}
		got, err := Codec().Marshal(r)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got.Materialize(), want.Materialize()) {
			t.Fatalf("key length %d: encodings differ", keyLen)
		}
		if !bytes.Equal(r.Keys[0].Key, make([]byte, keyLen)) || r.Keys[0].AlphaShare != 0 || r.Keys[0].BetaShare != 0 ||
			!slices.Equal(r.Keys[1].Evals, []uint64{0, 0, 0}) {
			t.Fatalf("key length %d: reply not wiped: %v", keyLen, r)
		}
		if r.Id != 9 || r.Keys[0].Counter != 4 || len(r.Keys[0].Key) != keyLen {
			t.Fatalf("key length %d: public fields changed: %v", keyLen, r)
		}
		if len(got) != 1 {
			t.Fatalf("key length %d: %d buffers", keyLen, len(got))
		}
		data := got[0].ReadOnlyData()
		data = data[:cap(data)]
		got.Free()
		if !bytes.Equal(data, make([]byte, len(data))) {
			t.Fatalf("key length %d: encoding not wiped when freed", keyLen)
		}
		want.Free()
	}
}

// TestRecycleReusesAndWipes reads a run of packed messages of varying
// shape into one PooledKeyReplies, recycling it between them: each reads
// as proto.Unmarshal reads it (fields absent after present ones included),
// Recycle wipes the lists and the key bytes, and once the sizes have been
// seen the lists' memory is reused rather than allocated.
func TestRecycleReusesAndWipes(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	c := Codec()
	var pm PooledKeyReplies
	mk := func(n int, shares, evals bool) *KeyReplies {
		pk := &PackedReplies{Ids: []uint64{uint64(n)}, Counts: []uint32{uint32(n)}, Keys: make([]byte, 100*n)}
		for i := 0; i < n; i++ {
			pk.Counters = append(pk.Counters, rng.Uint64())
			pk.KeyLens = append(pk.KeyLens, 100)
			if shares {
				pk.AlphaShares = append(pk.AlphaShares, rng.Uint64()|1)
				pk.BetaShares = append(pk.BetaShares, rng.Uint64()|1)
			}
			if evals {
				pk.Evals = append(pk.Evals, rng.Uint64()|1)
				pk.EvalLens = append(pk.EvalLens, 1)
			}
		}
		for i := range pk.Keys {
			pk.Keys[i] = byte(rng.Uint32()) | 1
		}
		return &KeyReplies{Packed: pk}
	}
	for it := 0; it < 40; it++ {
		m := mk(50+rng.IntN(100), it%3 != 0, it%4 == 1)
		b, err := proto.Marshal(m)
		if err != nil {
			t.Fatal(err)
		}
		allocs := testing.AllocsPerRun(1, func() {
			if err := c.Unmarshal(mem.BufferSlice{mem.SliceBuffer(b)}, &pm); err != nil {
				t.Fatal(err)
			}
			if it >= 20 { // keep the last one for the checks below
				pm.Recycle()
			}
		})
		if it < 20 {
			if !proto.Equal(m, pm.M) {
				t.Fatalf("message %d: read %v, want %v", it, pm.M, m)
			}
			pk := pm.M.Packed
			keys, as, cs := pk.Keys, pk.AlphaShares, pk.Counters
			pm.Recycle()
			if pm.M != nil || bytes.Count(keys, []byte{0}) != len(keys) || slices.ContainsFunc(as, func(x uint64) bool { return x != 0 }) ||
				slices.ContainsFunc(cs, func(x uint64) bool { return x != 0 }) {
				t.Fatalf("message %d: Recycle left data", it)
			}
		} else if allocs > 2 {
			// The lists and the messages are reused; what is left is the
			// pooled buffer's pointer when the pool was emptied by GC.
			t.Errorf("message %d: %v allocations with recycled lists", it, allocs)
		}
	}
}

// FuzzDecodePacked: the codec's packed-replies reader (key_stride and
// keys_fd included) reads what proto.Unmarshal reads and refuses what it
// refuses.
func FuzzDecodePacked(f *testing.F) {
	for _, m := range []*PackedReplies{
		{Ids: []uint64{1}, Counts: []uint32{2}, Counters: []uint64{3, 4}, Keys: make([]byte, 8), KeyStride: 4},
		{Ids: []uint64{1}, Counts: []uint32{1}, Counters: []uint64{3}, Keys: make([]byte, 5), KeyLens: []uint32{5}},
		{Ids: []uint64{1}, Counts: []uint32{2}, Counters: []uint64{3, 4}, KeyStride: 4, KeysFd: &SlabFD{Dev: 24, Inode: 1 << 40, Size: 8}},
		{Ids: []uint64{1}, Counts: []uint32{1}, Counters: []uint64{3}, KeyStride: 4, KeysFd: &SlabFD{}},
	} {
		b, _ := proto.Marshal(m)
		f.Add(b)
	}
	f.Add([]byte{0x50, 0x80, 0x01})       // key_stride, a two-byte varint
	f.Add([]byte{0x50, 0x04, 0x50, 0x04}) // key_stride twice
	f.Fuzz(func(t *testing.T, b []byte) {
		var want PackedReplies
		werr := proto.Unmarshal(b, &want)
		got := decodePacked(bytes.Clone(b), nil)
		if got != nil && werr != nil {
			t.Fatalf("%x: decodePacked reads what proto.Unmarshal refuses (%v)", b, werr)
		}
		if got != nil && !proto.Equal(&want, got) {
			t.Fatalf("%x: decoded %v, want %v", b, got, &want)
		}
	})
}

// TestLendKeys: a KeyReplies whose keys are lent is encoded without
// copying them (the encoding's last buffer is the keys themselves), reads
// back as the same message, and done runs once, when gRPC frees the
// encoding, not before; a loan Marshal did not take comes back by Unlend.
func TestLendKeys(t *testing.T) {
	keys := bytes.Repeat([]byte{1, 2, 3, 4}, 1024)
	m := &KeyReplies{Packed: &PackedReplies{Ids: []uint64{1, 2}, Counts: []uint32{3, 1}, Counters: []uint64{4, 5, 6, 7},
		Keys: keys, KeyStride: 1024, AlphaShares: []uint64{9, 8, 7, 6}, BetaShares: []uint64{1, 2, 3, 4}}}
	want := proto.Clone(m)
	var calls int
	LendKeys(m.Packed, func() { calls++; clear(keys) })
	out, err := Codec().Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	if Unlend(m.Packed) != nil {
		t.Fatal("the loan is still there after Marshal took it")
	}
	if last := out[len(out)-1].ReadOnlyData(); &last[0] != &keys[0] || len(last) != len(keys) {
		t.Fatal("the keys were copied into the encoding")
	}
	if !bytes.Equal(m.Packed.Keys, keys) {
		t.Fatal("Marshal left the message without its keys")
	}
	var got KeyReplies
	if err := proto.Unmarshal(out.Materialize(), &got); err != nil || !proto.Equal(want, &got) {
		t.Fatalf("decoded %v (%v), want %v", &got, err, want)
	}
	var pm PooledKeyReplies // the client's reader takes the fields in this order too
	if err := Codec().Unmarshal(mem.BufferSlice{mem.SliceBuffer(out.Materialize())}, &pm); err != nil || !proto.Equal(want, pm.M) {
		t.Fatalf("codec decoded %v (%v), want %v", pm.M, err, want)
	}
	if calls != 0 {
		t.Fatal("done ran before gRPC freed the encoding")
	}
	out.Free()
	if calls != 1 || bytes.Count(keys, []byte{0}) != len(keys) {
		t.Fatalf("done ran %d times after Free; keys wiped: %v", calls, bytes.Count(keys, []byte{0}) == len(keys))
	}

	// Not taken: Unlend hands done back.
	LendKeys(m.Packed, func() { calls++ })
	if done := Unlend(m.Packed); done == nil {
		t.Fatal("Unlend lost the loan")
	} else {
		done()
	}
	if calls != 2 {
		t.Fatalf("done ran %d times in all, want 2", calls)
	}
}

// TestBufferPoolWipesOnPut: the pool gRPC's transport buffers come from
// (HTTP/2 frames holding key shares) clears a buffer's whole capacity
// when gRPC frees it, pooled size or not, and hands out zeroed buffers.
func TestBufferPoolWipesOnPut(t *testing.T) {
	p := BufferPool()
	for _, n := range []int{1, 9, 16384, 16384 + 9, 32768, 300100, 1 << 20, (1 << maxClassBits) + 1} {
		b := p.Get(n)
		if len(*b) != n {
			t.Fatalf("Get(%d): len %d", n, len(*b))
		}
		for i := range *b {
			if (*b)[i] != 0 {
				t.Fatalf("Get(%d): byte %d not zero", n, i)
			}
		}
		full := (*b)[:cap(*b)]
		for i := range full {
			full[i] = 0xA5
		}
		p.Put(b)
		for i := range full {
			if full[i] != 0 {
				t.Fatalf("Put (size %d, cap %d): byte %d not wiped", n, len(full), i)
			}
		}
	}
}
