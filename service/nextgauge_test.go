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
		return &heldBatch{seq: seq, jobs: js, replies: [][]msg.CollectResponse{rs}}
	}
	a, b := held(1, 10), held(2, 11)
	p.held, p.heldRun = []*heldBatch{a, b}, 5
	p.settleHeld(5, 1) // same run, party 0 delivered through batch 1
	if !a.jobs[0].answered() {
		t.Fatal("batch 1, delivered by party 0, was not delivered here")
	}
	if b.jobs[0].answered() || p.pend.size() != 1 {
		t.Fatalf("batch 2 should be pending again: answered %v, %d pending", b.jobs[0].answered(), p.pend.size())
	}
	if r := b.replies[0][0]; !bytes.Equal(r.Key, []byte{0, 0, 0}) || r.AlphaShare != 0 || r.BetaShare != 0 {
		t.Fatalf("requeued batch's outputs not wiped: %+v", r)
	}
}
