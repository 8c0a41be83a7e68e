package service

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/kord-fss/kord/module/msg"
	"github.com/kord-fss/kord/module/socket"
	pb "github.com/kord-fss/kord/proto/kordpb"
)

// TestBatchAppScoped: party 1 claims a batch's items only from the
// application the batch names. A batch naming application a finds
// nothing of b's with the same id (refused unmatched, nothing opened, b's
// request still pending); a batch whose app was rewritten without its
// transcript, or whose app name is oversized, is refused as desync; the
// batch naming b claims b's request. (The module is not paired: nothing
// here may reach it.)
func TestBatchAppScoped(t *testing.T) {
	d, st := openModule(t, 1, filepath.Join(t.TempDir(), "m1.db"), []byte("provisioning secret for tests!!"))
	defer st.Close()
	p, err := New(Config{Party: 1, Module: socket.Local(d), PeerPlaintext: true, MatchTimeout: 50e6})
	if err != nil {
		t.Fatal(err)
	}
	j, err := newJob(&pb.KeyRequest{Id: 90, Mode: "bound", Tier: "mac", Type: "dpf", InBits: 8, OutBits: 8, AlphaShare: 3, BetaShare: 4})
	if err != nil {
		t.Fatal(err)
	}
	j.app = "b"
	if err := p.pend.add(j); err != nil {
		t.Fatal(err)
	}
	items := []*pb.BatchItem{j.item}
	tr := newTranscript([]byte("c0"), []byte("c1"))
	batch := func(app, trApp string, seq uint64) *pb.Batch {
		return &pb.Batch{Seq: seq, Tier: uint32(msg.MAC), FirstCounter: 0, Items: items, App: app,
			Transcript: chain(withApp(tr, trApp), seq, msg.MAC, 0, items, false)}
	}
	ctx := context.Background()

	f := &follower{p: p, run: 1, early: true, transcript: tr}
	pr := f.prepare(ctx, batch("a", "a", 1))
	if pr.rep == nil || len(pr.rep.Missing) != 1 || pr.rep.Missing[0] != 90 || len(pr.js) != 0 {
		t.Fatalf("a batch of application a for b's id 90: %+v, want a refusal naming 90 missing", pr.rep)
	}
	if j.answered() || p.pend.size() != 1 {
		t.Fatalf("b's request was touched: answered %v, %d pending", j.answered(), p.pend.size())
	}

	for _, c := range []struct {
		name string
		b    *pb.Batch
	}{
		{"app rewritten", batch("b", "a", 2)},
		{"oversized app", batch(strings.Repeat("x", MaxAppName+1), strings.Repeat("x", MaxAppName+1), 2)},
	} {
		f := &follower{p: p, run: 1, early: true, transcript: tr}
		pr := f.prepare(ctx, c.b)
		if pr.rep == nil || pr.rep.ErrorClass != ErrClassDesync || j.answered() {
			t.Fatalf("%s: %+v, want a desync refusal that leaves b's request alone", c.name, pr.rep)
		}
	}

	if js, missing, _ := p.pend.claim(ctx, "a", items, msg.MAC, time.Now()); len(js) != 0 || len(missing) != 1 {
		t.Fatalf("application a claimed %d of b's requests", len(js))
	}
	if js, _, _ := p.pend.claim(ctx, "b", items, msg.MAC, time.Now()); len(js) != 1 || js[0] != j {
		t.Fatal("application b's batch did not claim b's request")
	}
}
