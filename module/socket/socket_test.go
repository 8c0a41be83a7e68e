package socket

import (
	"bytes"
	"context"
	"errors"
	"path/filepath"
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/kord-fss/kord/fss"
	"github.com/kord-fss/kord/module"
	"github.com/kord-fss/kord/module/moduletest"
	"github.com/kord-fss/kord/module/msg"
	pb "github.com/kord-fss/kord/proto/modulepb"
)

var secret = moduletest.Secret

// servedPair starts two durable modules behind sockets and pairs them.
func servedPair(t testing.TB) ([2]*Client, [2]*module.Durable) {
	t.Helper()
	dir := t.TempDir()
	var cs [2]*Client
	var ds [2]*module.Durable
	for b := 0; b < 2; b++ {
		d, st := moduletest.OpenDurable(t, b, filepath.Join(dir, "m"+string(rune('0'+b))+".db"), 0, secret)
		path := filepath.Join(dir, "s"+string(rune('0'+b)))
		l, err := Listen(path)
		if err != nil {
			t.Fatal(err)
		}
		go NewServer(d, ServerOptions{Access: Access{SameUID: true}}).Serve(l)
		cs[b], ds[b] = Dial(path, 0), d
		t.Cleanup(func() { cs[b].Close(); l.Close(); st.Close() })
	}
	moduletest.Pair(t, cs[0], cs[1])
	return cs, ds
}

func TestSocketRoundTripAndIdempotentCollect(t *testing.T) {
	cs, _ := servedPair(t)
	ctx := context.Background()
	p := fss.Params{Type: fss.DPF, InBits: 16, OutBits: 16}
	var frames [2][][]byte
	for b := 0; b < 2; b++ {
		r, err := cs[b].Submit(ctx, &msg.SubmitRequest{Kind: msg.SubmitShares, Tier: msg.MAC,
			Shares: []msg.Share{{Mode: msg.Bound, Type: p.Type, InBits: 16, OutBits: 16, AlphaShare: uint64(100 * (b + 1)), BetaShare: 1 - uint64(b)}}})
		if err != nil {
			t.Fatal(err)
		}
		frames[b] = r.Frames
	}
	var keys [2]*fss.Key
	for b := 0; b < 2; b++ {
		res, err := cs[b].Do(ctx, []Call{{Submit: &msg.SubmitRequest{Kind: msg.SubmitPeerFrame, Frame: frames[1-b][0]}}, {Collect: &msg.CollectRequest{Counter: 0}}}, true)
		if err != nil || res[0].Err != nil || !res[0].Submit.Accepted || res[1].Err != nil {
			t.Fatalf("party %d: %v %+v", b, err, res)
		}
		again, err := cs[b].Collect(ctx, &msg.CollectRequest{Counter: 0})
		if err != nil || !bytes.Equal(again.Key, res[1].Collect.Key) {
			t.Fatalf("party %d: repeated Collect gave other bytes (%v)", b, err)
		}
		if keys[b], err = fss.ParseKey(res[1].Collect.Key); err != nil {
			t.Fatal(err)
		}
	}
	y0, _ := keys[0].Eval(300)
	y1, _ := keys[1].Eval(300)
	if (y0+y1)&0xffff != 1 {
		t.Fatalf("pair does not evaluate to β at α")
	}
}

func TestSocketBadInput(t *testing.T) {
	cs, _ := servedPair(t)
	ctx := context.Background()
	before, _ := cs[0].Poll(ctx, nil)
	for _, req := range []*msg.SubmitRequest{
		{Kind: 9},
		{Kind: msg.SubmitShares, Tier: msg.MAC},
		{Kind: msg.SubmitShares, Tier: 7, Shares: []msg.Share{{Mode: msg.Bound, Type: fss.DPF, InBits: 8, OutBits: 8}}},
		{Kind: msg.SubmitShares, Tier: msg.MAC, Shares: []msg.Share{{Mode: msg.Bound, Type: fss.DPF, InBits: 300, OutBits: 8}}},
		{Kind: msg.SubmitShares, Tier: msg.MAC, Shares: []msg.Share{{Mode: msg.Bound, Type: fss.DPF, InBits: 8, OutBits: 8, AlphaShare: 1 << 9}}},
	} {
		if _, err := cs[0].Submit(ctx, req); !errors.Is(err, module.ErrBadRequest) {
			t.Errorf("%+v: %v, want a bad request", req, err)
		}
	}
	if _, err := cs[0].Collect(ctx, &msg.CollectRequest{Counter: 12345}); !errors.Is(err, module.ErrBadRequest) {
		t.Errorf("collect of nothing: %v", err)
	}
	if _, err := cs[0].Reconcile(ctx, []byte("forged")); !errors.Is(err, module.ErrWitness) {
		t.Errorf("forged witness: %v", err)
	}
	after, _ := cs[0].Poll(ctx, nil)
	if after.NextCounter != before.NextCounter || after.PeerFloor != before.PeerFloor {
		t.Fatalf("bad input moved counters: %+v → %+v", before, after)
	}
}

// FuzzHandle feeds arbitrary bytes to the socket decoder and dispatcher of a
// paired module: it must answer with errors, never panic.
func FuzzHandle(f *testing.F) {
	good, _ := proto.Marshal(&pb.ModuleRequest{Calls: []*pb.Call{{Op: &pb.Call_Submit{Submit: &pb.SubmitRequest{Kind: 1, Tier: 2,
		Shares: []*pb.Share{{Mode: 1, Type: 1, InBits: 8, OutBits: 8}}}}}, {Op: &pb.Call_Collect{Collect: &pb.CollectRequest{Counter: 0}}}}})
	f.Add(good)
	bulk, _ := proto.Marshal(&pb.ModuleRequest{Calls: []*pb.Call{{Op: &pb.Call_Submit{Submit: &pb.SubmitRequest{Kind: 4, Tier: 3,
		Bulk: &pb.Bulk{Mode: 1, Type: 1, InBits: 8, OutBits: 8, N: 2, AlphaShares: []uint64{1, 2}, BetaShares: []uint64{3, 4}}}}},
		{Op: &pb.Call_Collect{Collect: &pb.CollectRequest{Counter: 0, Count: 2}}}}})
	f.Add(bulk)
	f.Add([]byte{0x0a, 0x02, 0x2a, 0x00})
	f.Add([]byte{})
	dir := f.TempDir()
	d, _ := moduletest.OpenDurable(f, 0, filepath.Join(dir, "f.db"), 0, secret)
	srv := NewServer(d, ServerOptions{})
	f.Fuzz(func(t *testing.T, b []byte) {
		r := srv.Handle(context.Background(), b)
		if r == nil || len(r.Results) == 0 {
			t.Fatal("no answer")
		}
	})
}

// TestSubmitSharesWiped: the module wipes the decoded own shares of a
// submission, also when the submission is malformed.
func TestSubmitSharesWiped(t *testing.T) {
	d, st := moduletest.OpenDurable(t, 0, filepath.Join(t.TempDir(), "w.db"), 0, secret)
	defer st.Close()
	srv := NewServer(d, ServerOptions{})
	bad := &pb.SubmitRequest{Kind: 1, Tier: 2, PackedShares: bytes.Repeat([]byte{0xA7}, shareRecord+1)}
	plain := &pb.SubmitRequest{Kind: 1, Tier: 2, Shares: []*pb.Share{{Mode: 1, Type: 1, InBits: 8, OutBits: 8, AlphaShare: 0xA7, BetaShare: 0xB7}}}
	for _, sub := range []*pb.SubmitRequest{bad, plain} {
		if r := srv.call(context.Background(), &pb.Call{Op: &pb.Call_Submit{Submit: sub}}); r.ErrorClass == ClassOK {
			t.Fatalf("submission to an unpaired module succeeded")
		}
	}
	if bytes.ContainsFunc(bad.PackedShares, func(r rune) bool { return r != 0 }) {
		t.Fatalf("malformed packed shares left unwiped: %x", bad.PackedShares)
	}
	if s := plain.Shares[0]; s.AlphaShare != 0 || s.BetaShare != 0 {
		t.Fatalf("unpacked shares left unwiped: %+v", s)
	}
}

// TestSocketSessionAndMismatch: the witness exchange, relayed through the
// sockets in the party daemons' order, starts a session on which both
// modules agree (their frames open on the other side); a second exchange
// starts another; an abandon that says the pair tags disagreed reaches the
// module and is counted, a plain one is not.
func TestSocketSessionAndMismatch(t *testing.T) {
	cs, _ := servedPair(t)
	ctx := context.Background()
	exchange := func() uint64 {
		t.Helper()
		var frames [2][]byte
		var first uint64
		for b := 0; b < 2; b++ {
			r, err := cs[b].Submit(ctx, &msg.SubmitRequest{Kind: msg.SubmitShares, Tier: msg.BatchMAC,
				Shares: []msg.Share{{Mode: msg.Bound, Type: fss.DCF, InBits: 12, OutBits: 4, AlphaShare: 5, BetaShare: 1}}})
			if err != nil {
				t.Fatal(err)
			}
			frames[b], first = r.Frames[0], r.FirstCounter
		}
		for b := 0; b < 2; b++ {
			r, err := cs[b].Submit(ctx, &msg.SubmitRequest{Kind: msg.SubmitPeerFrame, Frame: frames[1-b]})
			if err != nil || !r.Accepted {
				t.Fatalf("party %d refused its peer's frame: %v %+v", b, err, r)
			}
		}
		return first
	}
	for s := 0; s < 2; s++ {
		c0, err := cs[0].Challenge(ctx)
		if err != nil {
			t.Fatal(err)
		}
		c1, _ := cs[1].Challenge(ctx)
		w1, err := cs[1].Witness(ctx, c0)
		if err != nil || len(w1) != 113 {
			t.Fatalf("witness: %d bytes, %v", len(w1), err)
		}
		r0, err := cs[0].Reconcile(ctx, w1)
		if err != nil {
			t.Fatal(err)
		}
		w0, _ := cs[0].Witness(ctx, c1)
		r1, err := cs[1].Reconcile(ctx, w0)
		if err != nil || r0.Next != r1.Next {
			t.Fatalf("reconcile: %v, next %d and %d", err, r0.Next, r1.Next)
		}
		exchange()
	}
	c := exchange()
	for b := 0; b < 2; b++ {
		if _, err := cs[b].Submit(ctx, &msg.SubmitRequest{Kind: msg.SubmitAbandon, Counter: c - 1}); err != nil {
			t.Fatal(err)
		}
		r, err := cs[b].Submit(ctx, &msg.SubmitRequest{Kind: msg.SubmitAbandon, Counter: c, Mismatch: true})
		if err != nil || r.Count != 1 {
			t.Fatalf("abandon: %v %+v", err, r)
		}
		p, err := cs[b].Poll(ctx, nil)
		if err != nil || p.Rejects["pair_mismatch"] != 1 {
			t.Fatalf("party %d: rejects %v (%v), want one pair_mismatch", b, p.Rejects, err)
		}
	}
}
