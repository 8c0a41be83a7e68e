package service

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/kord-fss/kord/module/msg"
	"github.com/kord-fss/kord/module/socket"
	pb "github.com/kord-fss/kord/proto/kordpb"
)

// TestSpentRecordedBeforeAnswer: a request whose frame a module opened is
// answered spent only once the party's own record holds that class
// (Party.back), and a party going down (its state file closed) answers
// nothing it could not record. Told first and recorded after, a party
// that stops between the two leaves its application holding spent while
// its restarted process, finding no entry, settles the pair party 1 holds
// as void: spent at site 0, void at site 1 (the flake of
// TestPartyCrashRecovery/party0-unseen, made deterministic here).
func TestSpentRecordedBeforeAnswer(t *testing.T) {
	d, st := openModule(t, 0, filepath.Join(t.TempDir(), "m0.db"), []byte("provisioning secret for tests!!"))
	defer st.Close()
	cfg := withState(t, Config{Party: 0, Module: socket.Local(d), PeerAddr: "127.0.0.1:1", PeerPlaintext: true}, 0)
	p, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	opened := func(id uint64) *job {
		t.Helper()
		p.request(derivedReq(id, 1))
		js, _, err := p.q.take(ctx, 1<<20)
		if err != nil || len(js) != 1 {
			t.Fatalf("take: %d jobs, %v", len(js), err)
		}
		js[0].spent.Store(true) // its module opened the peer's frame
		return js[0]
	}

	a := opened(1)
	p.back([]*job{a}, ErrClassSpent, "test: batch lost")
	if !a.answered() || a.reply.GetErrorClass() != ErrClassSpent {
		t.Fatalf("request 1: answered %v (%+v), want spent", a.answered(), a.reply)
	}
	if s, ok := p.ledger.get(rid{a.app, a.id}); !ok || s.class != ErrClassSpent {
		t.Fatalf("request 1 answered spent, record %+v (found %v), want spent", s, ok)
	}

	b := opened(2)
	if err := p.Close(); err != nil { // the process goes down
		t.Fatal(err)
	}
	p.back([]*job{b}, ErrClassSpent, "test: batch lost")
	if b.answered() {
		t.Fatalf("request 2 answered %q after the state file closed: the restarted party has no record of that answer", b.reply.GetErrorClass())
	}
	// Nor are outputs delivered that the record could not take.
	c := &job{id: 3, item: &pb.BatchItem{Id: 3, Mode: uint32(msg.Derived), Count: 1}}
	if p.deliver([]*job{c}, [][]msg.CollectResponse{{{Counter: 7, PairTag: [16]byte{1}}}}) || c.answered() {
		t.Fatal("request 3 delivered after the state file closed: the restarted party has no record of it")
	}

	// The next process's record: request 1 spent, request 2 unknown (its
	// pair is settled from the peer's lists, alike at both sites).
	p2, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer p2.Close()
	if s, ok := p2.ledger.get(rid{a.app, a.id}); !ok || s.class != ErrClassSpent {
		t.Fatalf("after the restart, request 1's record %+v (found %v), want spent", s, ok)
	}
	for _, id := range []uint64{b.id, c.id} {
		if s, ok := p2.ledger.get(rid{"", id}); ok {
			t.Fatalf("after the restart, request %d recorded %+v though it was never answered", id, s)
		}
	}
}
