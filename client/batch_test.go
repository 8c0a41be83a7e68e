package client

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"slices"
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

// TestBatchViewsPair reads both sites' messages as batches: the views pair
// (Eval(0)+Eval(1) = f), the shares add up to α and β, counters and reply
// boundaries are as sent.
func TestBatchViewsPair(t *testing.T) {
	t.Run("key_lens", func(t *testing.T) { testBatchViewsPair(t, false) })
	t.Run("key_stride", func(t *testing.T) { testBatchViewsPair(t, true) })
}

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

func testBatchViewsPair(t *testing.T, stride bool) {
	r := rand.New(rand.NewPCG(1, 2))
	for _, p := range []fss.Params{{Type: fss.DPF, InBits: 32, OutBits: 32}, {Type: fss.DCF, InBits: 20, OutBits: 13}} {
		msgs, pairs := packedMessages(t, r, p, [][]int{{3, 1, 60}, {1}, {100, 2}}, 7)
		if stride {
			for b := range msgs {
				msgs[b] = strideForm(t, msgs[b])
			}
		}
		var st [2]*Stream
		for b := range st {
			st[b] = newWireStream(msgs[b], false)
		}
		k := 0
		id := uint64(7)
		for {
			b0, err0 := st[0].RecvBatch()
			b1, err1 := st[1].RecvBatch()
			if err0 == io.EOF && err1 == io.EOF {
				break
			}
			if err0 != nil || err1 != nil {
				t.Fatal(err0, err1)
			}
			if b0.Len() != b1.Len() || b0.Replies() != b1.Replies() {
				t.Fatalf("batches differ: %d/%d keys, %d/%d replies", b0.Len(), b1.Len(), b0.Replies(), b1.Replies())
			}
			e, _ := fss.NewBatchEval(p)
			for rr := 0; rr < b0.Replies(); rr++ {
				rep := b0.Reply(rr)
				if rep.ID != id || rep.Err != nil {
					t.Fatalf("reply %d: %+v, want id %d", rr, rep, id)
				}
				id++
				// The reply's views evaluated as a batch pair too.
				xs := make([]uint64, rep.N)
				for i := range xs {
					xs[i] = pairs[k+rep.First+i].alpha
				}
				var y [2][]uint64
				for s, bt := range []Batch{b0, b1} {
					y[s] = make([]uint64, rep.N)
					if vs := bt.ReplyViews(rr); len(vs) != rep.N {
						t.Fatalf("reply %d: %d views of %d keys", rr, len(vs), rep.N)
					} else if err := e.EvalViews(vs, xs, y[s]); err != nil {
						t.Fatal(err)
					}
				}
				for i := range xs {
					want := pairs[k+rep.First+i].beta // f(α): β for a DPF, 0 for a DCF (x < α)
					if p.Type == fss.DCF {
						want = 0
					}
					if (y[0][i]+y[1][i])&prg.Mask(p.OutBits) != want {
						t.Fatalf("reply %d key %d: batch-evaluated views do not pair", rr, i)
					}
				}
			}
			for i := 0; i < b0.Len(); i++ {
				d := pairs[k]
				if b0.Counter(i) != d.counter || b1.Counter(i) != d.counter {
					t.Fatalf("key %d: counters %d, %d, want %d", k, b0.Counter(i), b1.Counter(i), d.counter)
				}
				if (b0.AlphaShare(i)+b1.AlphaShare(i))&prg.Mask(p.InBits) != d.alpha || (b0.BetaShare(i)+b1.BetaShare(i))&prg.Mask(p.OutBits) != d.beta {
					t.Fatalf("key %d: shares do not add up to α, β", k)
				}
				if !bytes.Equal(b0.Key(i).Bytes(), d.k[0]) || !bytes.Equal(b1.Key(i).Bytes(), d.k[1]) {
					t.Fatalf("key %d: bytes differ from what was sent", k)
				}
				checkPairViews(t, b0.Key(i), b1.Key(i), p, d.alpha, d.beta)
				k++
			}
			b0.Release()
			b1.Release()
		}
		if k != len(pairs) {
			t.Fatalf("read %d keys of %d", k, len(pairs))
		}
	}
}

// TestBatchReleaseWipesAndRefuses: Release zeroes the key bytes and the
// received lists (shares, counters), and the released handle — and any
// copy of it, and the views taken from it — is refused, also once its
// memory serves the next batch; a batch received while another is live
// shares no memory with it, and the live one is left intact.
func TestBatchReleaseWipesAndRefuses(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	p := fss.Params{Type: fss.DCF, InBits: 16, OutBits: 16}
	msgs, pairs := packedMessages(t, r, p, [][]int{{20}, {20}, {20}, {20}}, 1)
	s := newWireStream(msgs[0], false)
	a, err := s.RecvBatch()
	if err != nil {
		t.Fatal(err)
	}
	b, err := s.RecvBatch()
	if err != nil {
		t.Fatal(err)
	}
	if a.m == b.m {
		t.Fatal("two live batches share memory")
	}
	keysA := a.Key(0).Bytes()
	keysA = keysA[:cap(keysA)] // the rest of the message buffer
	alphas, counters := a.m.alphas, a.m.counters
	viewA := a.Key(3)
	copyA := a
	bBytes := slices.Clone(b.Key(5).Bytes())
	if zeros(keysA) || !slices.ContainsFunc(alphas, func(x uint64) bool { return x != 0 }) {
		t.Fatal("test data is zero before release")
	}

	a.Release()
	if !zeros(keysA) {
		t.Fatal("Release left key bytes")
	}
	if slices.ContainsFunc(alphas, func(x uint64) bool { return x != 0 }) || slices.ContainsFunc(counters, func(x uint64) bool { return x != 0 }) {
		t.Fatal("Release left additive shares or counters")
	}
	checkRefused := func(when string) {
		t.Helper()
		for _, h := range []Batch{a, copyA} {
			if !h.Released() || h.Len() != 0 || h.ReplyViews(0) != nil || h.Replies() != 0 || !h.Key(0).IsZero() || h.Counter(0) != 0 ||
				h.AlphaShare(0) != 0 || h.BetaShare(0) != 0 || h.Evals(0) != nil || h.Reply(0) != (BatchReply{}) {
				t.Fatalf("%s: a released batch still answers", when)
			}
		}
	}
	// Between release and reuse a view taken from the batch reads zeros
	// and is refused; after reuse it would read the new batch's key, as
	// the Batch documentation says.
	if _, err := viewA.Eval(1); !errors.Is(err, fss.ErrStaleView) {
		t.Fatalf("a released batch's view evaluates: %v", err)
	}
	checkRefused("after release")
	a.Release() // again: a no-op
	copyA.Release()

	c, err := s.RecvBatch()
	if err != nil {
		t.Fatal(err)
	}
	if c.m != a.m {
		t.Error("the released batch's memory was not reused")
	}
	checkRefused("after reuse")
	if c.Len() != 20 || c.Released() {
		t.Fatalf("new batch: %d keys", c.Len())
	}
	for i := 0; i < c.Len(); i++ {
		for j := 0; j < b.Len(); j++ {
			if overlaps(c.Key(i).Bytes(), b.Key(j).Bytes()) {
				t.Fatalf("new batch key %d shares memory with live batch key %d", i, j)
			}
		}
	}
	if !bytes.Equal(b.Key(5).Bytes(), bBytes) {
		t.Fatal("receiving into reused memory changed a live batch")
	}
	for i := 0; i < b.Len(); i++ {
		d := pairs[20+i]
		if k, err := fss.ParseKey(b.Key(i).Bytes()); err != nil || !bytes.Equal(b.Key(i).Bytes(), d.k[0]) || k.Party() != 0 {
			t.Fatalf("live batch key %d changed: %v", i, err)
		}
	}
	b.Release()
	c.Release()
	var zero Batch
	zero.Release()
	if !zero.Released() || zero.Len() != 0 || !zero.Key(0).IsZero() {
		t.Fatal("zero batch answers")
	}
}

// TestBatchBadInput: a key share that is not a valid key fails its reply
// (named by counter, views zero) and no other; an error reply and a
// malformed message are reported; out-of-range indexes give zero values.
func TestBatchBadInput(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	p := fss.Params{Type: fss.DPF, InBits: 8, OutBits: 8}
	msgs, _ := packedMessages(t, r, p, [][]int{{2, 3, 2}}, 1)
	var m pb.KeyReplies
	if err := proto.Unmarshal(msgs[0][0], &m); err != nil {
		t.Fatal(err)
	}
	m.Packed.Keys[3*p.KeySize()] = 0x4c // key 3 (reply 2's second key): bad magic
	bad, _ := proto.Marshal(&m)
	errMsg, _ := proto.Marshal(&pb.KeyReplies{Replies: []*pb.KeyReply{{Id: 9, Error: "no", ErrorClass: pb.ClassMismatch}}})
	m.Replies = []*pb.KeyReply{{Id: 1}}
	both, _ := proto.Marshal(&m)
	m.Replies = nil
	m.Packed.Counts[0] = 5
	lens, _ := proto.Marshal(&m)
	s := newWireStream([][]byte{bad, errMsg, both, lens}, false)
	b, err := s.RecvBatch()
	if err != nil {
		t.Fatal(err)
	}
	if b.Len() != 7 || b.Replies() != 3 {
		t.Fatalf("%d keys, %d replies", b.Len(), b.Replies())
	}
	for rr, wantErr := range []bool{false, true, false} {
		rep := b.Reply(rr)
		if (rep.Err != nil) != wantErr || wantErr && (!errors.Is(rep.Err, fss.ErrMagic) || rep.Err.Error() != "client: key at counter 1003: fss: key magic is not 0x4b: got 0x4c") {
			t.Fatalf("reply %d: %v", rr, rep.Err)
		}
		for i := rep.First; i < rep.First+rep.N; i++ {
			if b.Key(i).IsZero() != wantErr {
				t.Fatalf("reply %d key %d: zero view %v", rr, i, b.Key(i).IsZero())
			}
		}
	}
	for _, i := range []int{-1, 7, 1 << 40} {
		if !b.Key(i).IsZero() || b.Counter(i) != 0 || b.AlphaShare(i) != 0 {
			t.Fatalf("index %d answers", i)
		}
	}
	b.Release()
	b, err = s.RecvBatch()
	var re *ReplyError
	if err != nil || b.Replies() != 1 || !errors.As(b.Reply(0).Err, &re) || re.Class != pb.ClassMismatch || b.Reply(0).ID != 9 {
		t.Fatalf("error reply: %v, %+v", err, b.Reply(0))
	}
	b.Release()
	if _, err := s.RecvBatch(); err == nil {
		t.Fatal("a message both packed and not is read")
	}
	if _, err := s.RecvBatch(); err == nil {
		t.Fatal("a packed message whose counts disagree is read")
	}
}

// TestRecvOverBatches: Recv, RecvRaw and RecvBatch read one stream in any
// mix, in order, and Recv's replies own their memory (they survive the
// batch's release and wipe).
func TestRecvOverBatches(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	p := fss.Params{Type: fss.DPF, InBits: 12, OutBits: 9}
	msgs, pairs := packedMessages(t, r, p, [][]int{{2, 3, 4}, {1, 1}}, 50)
	s := newWireStream(msgs[0], false)
	rep, err := s.Recv()
	if err != nil || rep.ID != 50 || len(rep.Shares) != 2 {
		t.Fatalf("Recv: %v %+v", err, rep)
	}
	raw, err := s.RecvRaw()
	if err != nil || raw.Id != 51 || len(raw.Keys) != 3 || !bytes.Equal(raw.Keys[1].Key, pairs[3].k[0]) || raw.Keys[2].AlphaShare != pairs[4].a[0] {
		t.Fatalf("RecvRaw: %v %+v", err, raw)
	}
	b, err := s.RecvBatch() // the rest of the first message
	if err != nil || b.Replies() != 1 || b.Len() != 4 || b.Reply(0).ID != 52 || b.Reply(0).First != 0 ||
		!bytes.Equal(b.Key(0).Bytes(), pairs[5].k[0]) {
		t.Fatalf("RecvBatch after Recv: %v, %d replies, %d keys", err, b.Replies(), b.Len())
	}
	b.Release()
	if !bytes.Equal(raw.Keys[1].Key, pairs[3].k[0]) {
		t.Fatal("releasing the batch wiped what RecvRaw handed out")
	}
	for i, sh := range rep.Shares {
		want, _ := fss.ParseKey(pairs[i].k[0])
		if !sh.Key.Equal(want) || sh.Counter != pairs[i].counter || sh.AlphaShare != pairs[i].a[0] || sh.BetaShare != pairs[i].b[0] {
			t.Fatalf("Recv share %d changed", i)
		}
	}
	for _, id := range []uint64{53, 54} {
		rep, err := s.Recv()
		if err != nil || rep.ID != id || len(rep.Shares) != 1 || rep.Err != nil {
			t.Fatalf("Recv %d: %v %+v", id, err, rep)
		}
	}
	if _, err := s.Recv(); err != io.EOF {
		t.Fatalf("after the last message: %v", err)
	}
}

// TestRecvBatchAllocs: in steady state a batch allocates nothing per key:
// receiving and releasing a message of 300 keys costs a few allocations
// (gRPC's side of the message aside), whatever its size.
func TestRecvBatchAllocs(t *testing.T) {
	if raceEnabled {
		t.Skip("allocation counts do not hold under the race detector")
	}
	r := rand.New(rand.NewPCG(9, 10))
	p := fss.Params{Type: fss.DPF, InBits: 32, OutBits: 32}
	msgs, _ := packedMessages(t, r, p, [][]int{{100, 200}, {50, 250}}, 1)
	for _, form := range []struct {
		name string
		msgs [][]byte
	}{{"key_lens", msgs[0]}, {"key_stride", strideForm(t, msgs[0])}} {
		s := newWireStream(form.msgs, true)
		a := testing.AllocsPerRun(50, func() {
			b, err := s.RecvBatch()
			if err != nil {
				t.Fatal(err)
			}
			b.Release()
		})
		if a > 2 {
			t.Errorf("%s: RecvBatch+Release of 300 keys: %v allocations", form.name, a)
		}
	}
}

// TestBatchReleasedElsewhere: the usual pipeline — the stream's goroutine
// receives, workers evaluate and release — keeps every batch intact while
// it is live (run it with -race).
func TestBatchReleasedElsewhere(t *testing.T) {
	r := rand.New(rand.NewPCG(11, 12))
	p := fss.Params{Type: fss.DPF, InBits: 10, OutBits: 16}
	counts := make([][]int, 24)
	for i := range counts {
		counts[i] = []int{1 + r.IntN(30), 1 + r.IntN(30)}
	}
	msgs, pairs := packedMessages(t, r, p, counts, 1)
	s := newWireStream(msgs[0], false)
	work := make(chan Batch, 4)
	done := make(chan error)
	go func() {
		k := 0
		for b := range work {
			for i := 0; i < b.Len(); i++ {
				if !bytes.Equal(b.Key(i).Bytes(), pairs[k].k[0]) || b.Counter(i) != pairs[k].counter || b.AlphaShare(i) != pairs[k].a[0] {
					done <- errors.New("a live batch's key changed")
					return
				}
				if _, err := b.Key(i).Eval(3); err != nil {
					done <- err
					return
				}
				k++
			}
			b.Release()
		}
		done <- nil
	}()
	for {
		b, err := s.RecvBatch()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		work <- b
	}
	close(work)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

// FuzzRecvBatch: whatever message arrives, RecvBatch and Recv neither
// panic nor hand out a view that ParseKey would refuse, and they agree.
func FuzzRecvBatch(f *testing.F) {
	r := rand.New(rand.NewPCG(13, 14))
	for _, p := range []fss.Params{{Type: fss.DPF, InBits: 4, OutBits: 3}, {Type: fss.DCF, InBits: 3, OutBits: 9}} {
		msgs, _ := packedMessages(f, r, p, [][]int{{1, 2}, {3}}, 1)
		for _, m := range msgs[0] {
			f.Add(m)
		}
	}
	msgs, _ := packedMessages(f, r, fss.Params{Type: fss.DPF, InBits: 5, OutBits: 2}, [][]int{{2, 1}}, 1)
	for _, m := range strideForm(f, msgs[0]) {
		f.Add(m)
	}
	plain, _ := proto.Marshal(&pb.KeyReplies{Replies: []*pb.KeyReply{{Id: 3, Keys: []*pb.KeyShare{{Counter: 1, Key: []byte{0x4b, 1}, Evals: []uint64{1}}}}, {Id: 4, Error: "e"}}})
	f.Add(plain)
	f.Fuzz(func(t *testing.T, data []byte) {
		b, err := newWireStream([][]byte{data}, false).RecvBatch()
		var want []*Reply
		s := newWireStream([][]byte{data}, false)
		for {
			rep, err := s.Recv()
			if err != nil {
				break
			}
			want = append(want, rep)
		}
		if err != nil {
			if len(want) != 0 {
				t.Fatalf("RecvBatch refuses (%v), Recv reads %d replies", err, len(want))
			}
			return
		}
		defer b.Release()
		if b.Replies() != len(want) {
			t.Fatalf("RecvBatch reads %d replies, Recv %d", b.Replies(), len(want))
		}
		for rr := 0; rr < b.Replies(); rr++ {
			rep := b.Reply(rr)
			if rep.ID != want[rr].ID || (rep.Err == nil) != (want[rr].Err == nil) {
				t.Fatalf("reply %d: batch %+v, Recv %+v", rr, rep, want[rr])
			}
			for i := rep.First; i < rep.First+rep.N; i++ {
				v := b.Key(i)
				if v.IsZero() {
					continue
				}
				k, err := fss.ParseKey(v.Bytes())
				if err != nil {
					t.Fatalf("a view of a key ParseKey refuses: %v", err)
				}
				if rep.Err == nil && !want[rr].Shares[i-rep.First].Key.Equal(k) {
					t.Fatalf("reply %d key %d: batch and Recv differ", rr, i)
				}
				b.Counter(i)
				b.AlphaShare(i)
				b.Evals(i)
			}
		}
	})
}

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
