package service

import (
	"path/filepath"
	"testing"

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

// TestNextCounterGaugeFollowsBatches: kord_module_next_counter moves past
// a delivered batch's counters without a Status call or a resync, and an
// older batch delivered later does not move it back.
func TestNextCounterGaugeFollowsBatches(t *testing.T) {
	d, st := openModule(t, 1, filepath.Join(t.TempDir(), "m1.db"), []byte("provisioning secret for tests!!"))
	defer st.Close()
	p, err := New(Config{Party: 1, Module: socket.Local(d)})
	if err != nil {
		t.Fatal(err)
	}
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
