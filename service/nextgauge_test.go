package service

import (
	"bytes"
	"context"
	"path/filepath"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"

	"github.com/kord-fss/kord/module/msg"
	"github.com/kord-fss/kord/module/socket"
	pb "github.com/kord-fss/kord/proto/kordpb"
)

func gauge(t *testing.T, p *Party) float64 {
	t.Helper()
	var m dto.Metric
	if err := p.m.next.Write(&m); err != nil {
		t.Fatal(err)
	}
	return m.GetGauge().GetValue()
}

// unconnectedParty1 is party 1 over an in-process module, with no peer
// session: batches are handed to it directly.
func unconnectedParty1(t *testing.T) *Party {
	t.Helper()
	d, st := openModule(t, 1, filepath.Join(t.TempDir(), "m1.db"), []byte("provisioning secret for tests!!"))
	t.Cleanup(func() { st.Close() })
	p, err := New(Config{Party: 1, Module: socket.Local(d), PeerPlaintext: true})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// TestNextCounterGaugeFollowsBatches: kord_module_next_counter moves past
// a delivered batch's counters without a Status call or a resync, and an
// older batch delivered later does not move it back.
func TestNextCounterGaugeFollowsBatches(t *testing.T) {
	p := unconnectedParty1(t)
	batch := func(id uint64, counters ...uint64) *heldBatch {
		j := p.request(&pb.KeyRequest{Id: id, Mode: "derived", Type: "dpf", InBits: 8, OutBits: 8, Count: uint32(len(counters))})
		if j.answered() {
			t.Fatalf("request %d refused: %+v", id, j.reply)
		}
		rs := make([]msg.CollectResponse, len(counters))
		for i, c := range counters {
			rs[i].Counter = c
		}
		return &heldBatch{jobs: []*job{j}, replies: [][]msg.CollectResponse{rs}}
	}
	if g := gauge(t, p); g != 0 {
		t.Fatalf("gauge %v before any batch", g)
	}
	p.deliverHeld(batch(1, 5, 6, 7))
	if g := gauge(t, p); g != 8 {
		t.Fatalf("gauge %v after a batch with counters 5..7, want 8", g)
	}
	p.deliverHeld(batch(2, 2, 3))
	if g := gauge(t, p); g != 8 {
		t.Fatalf("gauge %v after an older batch, want it to stay 8", g)
	}
}

// TestSettleHeldWipesWhatItRequeues: held batches party 0 did not deliver
// go back to the pending set with their key shares wiped; those it did
// are delivered.
func TestSettleHeldWipesWhatItRequeues(t *testing.T) {
	p := unconnectedParty1(t)
	held := func(seq, id uint64) *heldBatch {
		j := p.request(&pb.KeyRequest{Id: id, Mode: "derived", Type: "dpf", InBits: 8, OutBits: 8, Count: 1})
		// claim takes the job out of the pending set, as a batch does
		js, _, _ := p.pend.claim(context.Background(), "", []*pb.BatchItem{j.item}, msg.MAC, time.Now())
		if len(js) != 1 {
			t.Fatalf("request %d not claimed", id)
		}
		rs := []msg.CollectResponse{{Counter: seq, Key: []byte{1, 2, 3}, AlphaShare: 7, BetaShare: 9}}
		return &heldBatch{seq: seq, jobs: js, replies: [][]msg.CollectResponse{rs}, confirm: bytes.Repeat([]byte{byte(seq)}, 32)}
	}
	a, b, c, d := held(1, 10), held(2, 11), held(3, 12), held(4, 13)
	p.held, p.heldRun = []*heldBatch{a, b, c, d}, 5
	// Same run, party 0 says it delivered through batch 4, but only
	// batch 1's confirmation is right (c's is another batch's, d has
	// none): batches 3 and 4 are not delivered on its word.
	p.settleHeld(5, 4, []*pb.Confirm{{Seq: 1, Ok: true, Mac: a.confirm}, {Seq: 3, Ok: true, Mac: a.confirm}})
	if !a.jobs[0].answered() {
		t.Fatal("batch 1, delivered by party 0, was not delivered here")
	}
	if c.jobs[0].answered() || d.jobs[0].answered() {
		t.Fatal("a held batch was delivered without its confirmation")
	}
	if r := c.replies[0][0]; !bytes.Equal(r.Key, []byte{0, 0, 0}) {
		t.Fatal("an unconfirmed batch's outputs were not wiped")
	}
	b = held(2, 11)
	p.held = []*heldBatch{b}
	p.settleHeld(5, 1, []*pb.Confirm{{Seq: 2, Ok: true, Mac: b.confirm}}) // confirmed, but past through
	if b.jobs[0].answered() || p.pend.size() != 3 {
		t.Fatalf("batch 2 should be pending again: answered %v, %d pending", b.jobs[0].answered(), p.pend.size())
	}
	if r := b.replies[0][0]; !bytes.Equal(r.Key, []byte{0, 0, 0}) || r.AlphaShare != 0 || r.BetaShare != 0 {
		t.Fatalf("requeued batch's outputs not wiped: %+v", r)
	}
}

// TestResolveHeldNeedsConfirmation: after party 0 restarted, party 1
// delivers a held request party 0 names complete only with the
// confirmation of its own outputs; named without it (or with another
// request's), it fails tampered with its outputs wiped.
func TestResolveHeldNeedsConfirmation(t *testing.T) {
	p := unconnectedParty1(t)
	var jobs []*job
	var reps [][]msg.CollectResponse
	for id := uint64(20); id < 23; id++ {
		j := p.request(&pb.KeyRequest{Id: id, Mode: "derived", Type: "dpf", InBits: 8, OutBits: 8, Count: 1})
		js, _, _ := p.pend.claim(context.Background(), "", []*pb.BatchItem{j.item}, msg.MAC, time.Now())
		if len(js) != 1 {
			t.Fatalf("request %d not claimed", id)
		}
		jobs = append(jobs, js[0])
		reps = append(reps, []msg.CollectResponse{{Counter: id, Key: []byte{1, 2, 3}, PairTag: [16]byte{byte(id)}}})
	}
	h := &heldBatch{seq: 1, jobs: jobs, replies: reps}
	p.held, p.heldRun = []*heldBatch{h}, 5
	good := heldConfirm(h, 0)
	p.resolveHeld(6, []uint64{20, 21, 22}, nil, nil, [][]byte{good, good, nil})
	class := func(j *job) string {
		if j.reply == nil {
			return ""
		}
		return j.reply.ErrorClass
	}
	if !jobs[0].answered() || class(jobs[0]) != "" {
		t.Fatalf("request 20, confirmed, not delivered (class %q)", class(jobs[0]))
	}
	for _, j := range jobs[1:] {
		if !j.answered() || class(j) != ErrClassTampered {
			t.Fatalf("request %d named complete without its confirmation: class %q, want tampered", j.id, class(j))
		}
	}
	if !bytes.Equal(reps[1][0].Key, []byte{0, 0, 0}) {
		t.Fatal("an unconfirmed held request's outputs were not wiped")
	}
}
