package client

import (
	"bytes"
	"errors"
	"io"
	"math/rand/v2"
	"slices"
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/kord-fss/kord/fss"
	"github.com/kord-fss/kord/internal/prg"
	pb "github.com/kord-fss/kord/proto/kordpb"
)

// TestBatchViewsPair reads both sites' messages as batches: the views pair
// (Eval(0)+Eval(1) = f), the shares add up to α and β, counters and reply
// boundaries are as sent.
func TestBatchViewsPair(t *testing.T) {
	t.Run("key_lens", func(t *testing.T) { testBatchViewsPair(t, false) })
	t.Run("key_stride", func(t *testing.T) { testBatchViewsPair(t, true) })
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
