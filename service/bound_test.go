package service

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/kord-fss/kord/module/socket"
	pb "github.com/kord-fss/kord/proto/kordpb"
)

func derivedReq(id uint64, n uint32) *pb.KeyRequest {
	return &pb.KeyRequest{Id: id, Mode: "derived", Type: "dpf", InBits: 8, OutBits: 8, Count: n}
}

// TestPendingKeysBounded: party 0 refuses a request that would take its
// queued, unanswered keys past MaxPending with ResourceExhausted naming
// the limit, queues nothing for it, and admits again once keys are
// answered.
func TestPendingKeysBounded(t *testing.T) {
	d, st := openModule(t, 0, filepath.Join(t.TempDir(), "m0.db"), []byte("provisioning secret for tests!!"))
	defer st.Close()
	p, err := New(Config{Party: 0, Module: socket.Local(d), PeerAddr: "127.0.0.1:1", PeerPlaintext: true, MaxPending: 10})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	first := p.request(derivedReq(1, 8))
	if first.answered() {
		t.Fatalf("request within the bound refused: %+v", first.reply)
	}
	ctx := context.Background()
	_, err = p.Get(ctx, derivedReq(2, 3))
	if status.Code(err) != codes.ResourceExhausted || !strings.Contains(err.Error(), "10") {
		t.Fatalf("Get past the bound: %v, want ResourceExhausted naming the limit 10", err)
	}
	j := p.request(derivedReq(3, 3))
	if !j.answered() || j.reply == nil || j.reply.ErrorClass != ErrClassExhausted {
		t.Fatalf("stream request past the bound: %+v, want class %q", j.reply, ErrClassExhausted)
	}
	if n := p.q.size(); n != 1 {
		t.Fatalf("%d requests queued, want only the first", n)
	}
	if n := p.adm.pending(); n != 8 {
		t.Fatalf("%d keys counted pending, want 8", n)
	}
	// Within the bound still fits.
	if j := p.request(derivedReq(4, 2)); j.answered() {
		t.Fatalf("request that fits refused: %+v", j.reply)
	}
	// Answering the queued jobs gives their keys back.
	js, _, err := p.q.take(ctx, 1<<20)
	if err != nil || len(js) != 2 {
		t.Fatalf("take: %d jobs, %v", len(js), err)
	}
	for _, j := range js {
		j.fail(ErrClassUnavailable, "test")
	}
	if n := p.adm.pending(); n != 0 {
		t.Fatalf("%d keys pending after all were answered", n)
	}
	if j := p.request(derivedReq(5, 10)); j.answered() {
		t.Fatalf("request after keys were answered refused: %+v", j.reply)
	}
}

// TestDuplicateIDRefusedAtParty0: ids must be unique among a site's
// pending requests; party 0 refuses a second one with InvalidArgument
// naming the id, and accepts the id again once the first is answered.
func TestDuplicateIDRefusedAtParty0(t *testing.T) {
	d, st := openModule(t, 0, filepath.Join(t.TempDir(), "m0.db"), []byte("provisioning secret for tests!!"))
	defer st.Close()
	p, err := New(Config{Party: 0, Module: socket.Local(d), PeerAddr: "127.0.0.1:1", PeerPlaintext: true})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	first := p.request(derivedReq(77, 1))
	if first.answered() {
		t.Fatalf("first request refused: %+v", first.reply)
	}
	_, err = p.Get(context.Background(), derivedReq(77, 1))
	if status.Code(err) != codes.InvalidArgument || !strings.Contains(err.Error(), "77") {
		t.Fatalf("Get with a pending id: %v, want InvalidArgument naming 77", err)
	}
	j := p.request(derivedReq(77, 2))
	if !j.answered() || j.reply == nil || j.reply.ErrorClass != ErrClassBadRequest || !strings.Contains(j.reply.Error, "77") {
		t.Fatalf("stream request with a pending id: %+v, want bad_request naming 77", j.reply)
	}
	if n, k := p.q.size(), p.adm.pending(); n != 1 || k != 1 {
		t.Fatalf("%d requests / %d keys pending, want 1 / 1", n, k)
	}
	js, _, _ := p.q.take(context.Background(), 1<<20)
	for _, j := range js {
		j.fail(ErrClassUnavailable, "test")
	}
	if j := p.request(derivedReq(77, 1)); j.answered() {
		t.Fatalf("id reused after its request was answered refused: %+v", j.reply)
	}
}
