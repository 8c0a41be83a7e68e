package service

import (
	"bytes"
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/kord-fss/kord/module/msg"
	pb "github.com/kord-fss/kord/proto/kordpb"
	"github.com/kord-fss/kord/proto/modulepb"
)

func corrJob(t *testing.T, id uint64, c *modulepb.Correlation) *job {
	t.Helper()
	j, err := newJob(&pb.KeyRequest{Id: id, Mode: ModeCorrelation, Corr: c})
	if err != nil {
		t.Fatal(err)
	}
	return j
}

func derivedJob(t *testing.T, id uint64, n uint32) *job {
	t.Helper()
	j, err := newJob(&pb.KeyRequest{Id: id, Mode: "derived", Type: "dcf", InBits: 16, OutBits: 16, Count: n})
	if err != nil {
		t.Fatal(err)
	}
	return j
}

// A correlation is a run and a segment of its own, on both the bulk and
// the per-key split, taking its counters (msg.Correlation.Blocks); its
// neighbours keep their split.
func TestCorrelationSegments(t *testing.T) {
	c := &modulepb.Correlation{Kind: uint32(msg.CorrMatVec), Ring: 16, In: 5, Out: 3, Part: uint32(msg.CorrWeight)}
	jobs := []*job{derivedJob(t, 1, 3), derivedJob(t, 2, 2), corrJob(t, 3, c), derivedJob(t, 4, 20), derivedJob(t, 5, 20), corrJob(t, 6, c)}
	blocks := (2*5*3 + 1) / 2
	if jobs[2].keys() != blocks || jobs[2].item.Count != uint32(blocks) || jobs[2].item.Mode != ItemCorrelation {
		t.Fatalf("correlation job: %d counters, item %+v", jobs[2].keys(), jobs[2].item)
	}
	items := make([]*pb.BatchItem, len(jobs))
	for i, j := range jobs {
		items[i] = j.item
	}
	runs := bulkRuns(items)
	if want := []uint32{2, 1, 2, 1}; !equalRuns(runs, want) {
		t.Fatalf("runs %v, want %v", runs, want)
	}
	for _, split := range [][]uint32{runs, nil} {
		segs := segmentsOf(jobs, split)
		var corr, counters int
		for _, s := range segs {
			counters += s.n
			if s.corr {
				corr++
				if s.j1 != s.j0+1 || jobs[s.j0].corr == nil || s.n != blocks {
					t.Fatalf("split %v: correlation segment %+v", split, s)
				}
			} else {
				for _, j := range jobs[s.j0:s.j1] {
					if j.corr != nil {
						t.Fatalf("split %v: a correlation inside segment %+v", split, s)
					}
				}
			}
		}
		if corr != 2 || counters != 3+2+40+2*blocks {
			t.Fatalf("split %v: %d correlation segments, %d counters", split, corr, counters)
		}
		if batchLast(100, jobs) != 100+uint64(counters)-1 {
			t.Fatalf("batchLast: %d", batchLast(100, jobs))
		}
	}
	// Packed items carry the shapes in order; the transcript binds them.
	pk := packItems(items)
	back, err := unpackItems(pk)
	if err != nil {
		t.Fatal(err)
	}
	for i := range items {
		if !sameShape(items[i], back[i]) {
			t.Fatalf("item %d: %+v unpacked as %+v", i, items[i], back[i])
		}
	}
	pk.Corrs = pk.Corrs[:1]
	if _, err := unpackItems(pk); err == nil {
		t.Fatal("packed items with a correlation shape missing were accepted")
	}
	other := proto.Clone(items[2]).(*pb.BatchItem)
	other.Corr.Out = 4
	changed := append([]*pb.BatchItem(nil), items...)
	changed[2] = other
	for _, packed := range []bool{false, true} {
		if bytes.Equal(chain(nil, 1, msg.MAC, 0, items, packed), chain(nil, 1, msg.MAC, 0, changed, packed)) {
			t.Fatalf("packed %v: the transcript does not bind the correlation's shape", packed)
		}
	}
	if sameShape(items[2], other) {
		t.Fatal("items of different correlation shapes compare equal")
	}
}
