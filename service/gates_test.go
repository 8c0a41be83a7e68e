package service

import (
	"bytes"
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/kord-fss/kord/module/msg"
	"github.com/kord-fss/kord/module/socket"
	pb "github.com/kord-fss/kord/proto/kordpb"
)

// A LLAMA gates request is a correlation segment taking one counter per
// pack; the sites' comparison and the transcript bind every one of its
// fields (a peer that changes the shift or a count in transit is caught),
// and packed items carry them.
func TestLlamaGatesItems(t *testing.T) {
	g := msg.LlamaGates(24, 5, 4, 7, 3)
	jobs := []*job{derivedJob(t, 1, 3), corrJob(t, 2, socket.CorrToPB(&g)), derivedJob(t, 3, 2)}
	if jobs[1].keys() != 12 || jobs[1].item.Count != 12 || jobs[1].item.Mode != ItemCorrelation {
		t.Fatalf("gates job: %d counters, item %+v", jobs[1].keys(), jobs[1].item)
	}
	items := []*pb.BatchItem{jobs[0].item, jobs[1].item, jobs[2].item}
	back, err := unpackItems(packItems(items))
	if err != nil {
		t.Fatal(err)
	}
	if !sameShape(items[1], back[1]) || back[1].Corr.Shift != 7 || back[1].Corr.Maxpool != 3 {
		t.Fatalf("gates item unpacked as %+v", back[1])
	}
	for name, change := range map[string]func(*pb.BatchItem){
		"relu":    func(it *pb.BatchItem) { it.Corr.Relu++ },
		"ars":     func(it *pb.BatchItem) { it.Corr.Ars++ },
		"shift":   func(it *pb.BatchItem) { it.Corr.Shift++ },
		"maxpool": func(it *pb.BatchItem) { it.Corr.Maxpool++ },
		"ring":    func(it *pb.BatchItem) { it.Corr.Ring++ },
	} {
		other := proto.Clone(items[1]).(*pb.BatchItem)
		change(other)
		if sameShape(items[1], other) {
			t.Errorf("%s: items that differ compare equal", name)
		}
		changed := []*pb.BatchItem{items[0], other, items[2]}
		for _, packed := range []bool{false, true} {
			if bytes.Equal(chain(nil, 1, msg.MAC, 0, items, packed), chain(nil, 1, msg.MAC, 0, changed, packed)) {
				t.Errorf("%s, packed %v: the transcript does not bind it", name, packed)
			}
		}
	}
	bad := msg.LlamaGates(24, 1, 0, 3, 0)
	if _, err := newJob(&pb.KeyRequest{Id: 9, Mode: ModeCorrelation, Corr: socket.CorrToPB(&bad)}); err == nil {
		t.Fatal("a gates request with a shift and no ARS packs was accepted")
	}
}
