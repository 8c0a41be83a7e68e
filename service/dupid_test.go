package service

import (
	"context"
	"path/filepath"
	"slices"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/kord-fss/kord/module/msg"
	"github.com/kord-fss/kord/module/socket"
	pb "github.com/kord-fss/kord/proto/kordpb"
)

// TestBatchWithDuplicateIDsRefused: a batch naming one id twice (party 0
// does not deduplicate its applications' ids; a peer may send anything)
// must not claim party 1's request twice — that answered it twice, a
// close of a closed channel — and must not reach the module: it is
// refused, the id fails with bad_request at party 1, and party 0 is told
// which ids to fail.
func TestBatchWithDuplicateIDsRefused(t *testing.T) {
	for _, packed := range []bool{false, true} {
		d, st := openModule(t, 1, filepath.Join(t.TempDir(), "m1.db"), []byte("provisioning secret for tests!!"))
		defer st.Close()
		p, err := New(Config{Party: 1, Module: socket.Local(d), PeerPlaintext: true})
		if err != nil {
			t.Fatal(err)
		}
		j, err := newJob(&pb.KeyRequest{Id: 90, Mode: "bound", Tier: "mac", Type: "dpf", InBits: 8, OutBits: 8, AlphaShare: 3, BetaShare: 4})
		if err != nil {
			t.Fatal(err)
		}
		if err := p.pend.add(j); err != nil {
			t.Fatal(err)
		}
		items := []*pb.BatchItem{j.item, j.item}
		tr := newTranscript([]byte("c0"), []byte("c1"))
		b := &pb.Batch{Seq: 1, Tier: uint32(msg.MAC), FirstCounter: 0, Items: items, Transcript: chain(tr, 1, msg.MAC, 0, items, packed)}
		if packed {
			b.Items, b.PackedItems = nil, packItems(items)
		}
		f := &follower{p: p, run: 1, early: true, transcript: tr}
		pr := f.prepare(context.Background(), b)
		expected, last := f.expected, f.lastSeq
		if pr.rep == nil || pr.rep.ErrorClass != ErrClassBadRequest || !slices.Equal(pr.rep.Missing, []uint64{90}) {
			t.Fatalf("packed=%v: batch with id 90 twice: reply %+v, want a bad_request refusal naming 90", packed, pr.rep)
		}
		if !j.answered() || j.reply == nil || j.reply.ErrorClass != ErrClassBadRequest {
			t.Fatalf("party 1's request 90: answered %v, reply %+v; want bad_request", j.answered(), j.reply)
		}
		if expected != 0 || last != 0 {
			t.Fatalf("refused batch moved the session state: expected %d, last seq %d", expected, last)
		}
		if poll, err := d.Poll(context.Background(), &msg.PollRequest{}); err != nil || poll.NextCounter != 0 {
			t.Fatalf("refused batch reached the module: %+v %v", poll, err)
		}
		if n := p.pend.size(); n != 0 {
			t.Fatalf("%d requests left pending", n)
		}
	}
}

// TestPeerErrorClassBounded: a peer's refusal cannot mint a metric label
// or an application error class of its choosing.
func TestPeerErrorClassBounded(t *testing.T) {
	reg := prometheus.NewRegistry()
	d, st := openModule(t, 0, filepath.Join(t.TempDir(), "m0.db"), []byte("provisioning secret for tests!!"))
	defer st.Close()
	p, err := New(Config{Party: 0, Module: socket.Local(d), PeerAddr: "127.0.0.1:1", PeerPlaintext: true, Registry: reg})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	j, _ := newJob(&pb.KeyRequest{Id: 5, Mode: "bound", Tier: "mac", Type: "dpf", InBits: 8, OutBits: 8})
	p.failBatch([]*job{j}, &pb.BatchReply{Error: "no", ErrorClass: "attacker-chosen\x01label", Missing: []uint64{5}})
	if j.reply == nil || j.reply.ErrorClass != ErrClassDesync {
		t.Fatalf("reply %+v, want class %q", j.reply, ErrClassDesync)
	}
	for _, c := range []string{"bad_request", "mismatch", "peer", "desync", "x", ""} {
		if got := peerClass(c); got != c && got != ErrClassDesync {
			t.Fatalf("peerClass(%q) = %q", c, got)
		}
	}
	if peerClass("x") != ErrClassDesync || peerClass(ErrClassMismatch) != ErrClassMismatch {
		t.Fatal("peerClass does not bound the class")
	}
}
