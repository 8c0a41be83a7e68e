package service

import (
	"context"
	"slices"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/kord-fss/kord/module/msg"
	pb "github.com/kord-fss/kord/proto/kordpb"
)

// pendingJobs adds derived requests with the given ids to a new pending
// set and returns it with party 0's batch items for them.
func pendingJobs(t *testing.T, ids ...uint64) (*pending, []*pb.BatchItem) {
	t.Helper()
	p := newPending()
	var items []*pb.BatchItem
	for _, id := range ids {
		j, err := newJob(derivedReq(id, 2))
		if err != nil {
			t.Fatal(err)
		}
		if err := p.add(j); err != nil {
			t.Fatal(err)
		}
		items = append(items, j.item)
	}
	return p, items
}

// TestClaimTakesAllOrNothing: claim hands out the jobs of a batch in the
// batch's order and removes them, or, when an id is missing or differs,
// takes nothing.
func TestClaimTakesAllOrNothing(t *testing.T) {
	ctx := context.Background()
	p, items := pendingJobs(t, 5, 3, 9)
	slices.Reverse(items)
	js, missing, differ := p.claim(ctx, "", items, msg.MAC, time.Now().Add(time.Second))
	if len(missing)+len(differ) > 0 || len(js) != 3 {
		t.Fatalf("claim: %d jobs, missing %v, differ %v", len(js), missing, differ)
	}
	for i, j := range js {
		if j.id != items[i].Id {
			t.Fatalf("job %d is request %d, want %d", i, j.id, items[i].Id)
		}
	}
	if p.size() != 0 {
		t.Fatalf("%d jobs left pending after the claim", p.size())
	}

	p, items = pendingJobs(t, 1, 2)
	other := &pb.BatchItem{Id: 7, Mode: items[0].Mode, Type: items[0].Type, InBits: items[0].InBits, OutBits: items[0].OutBits, Count: items[0].Count}
	js, missing, _ = p.claim(ctx, "", append(items, other), msg.MAC, time.Now().Add(20*time.Millisecond))
	if js != nil || !slices.Equal(missing, []uint64{7}) || p.size() != 2 {
		t.Fatalf("claim with id 7 missing: jobs %v, missing %v, %d pending (want none, [7], 2)", js, missing, p.size())
	}

	wide := proto.Clone(items[1]).(*pb.BatchItem)
	wide.InBits++
	js, _, differ = p.claim(ctx, "", []*pb.BatchItem{items[0], wide}, msg.MAC, time.Now().Add(time.Second))
	if js != nil || !slices.Equal(differ, []uint64{2}) || p.size() != 2 {
		t.Fatalf("claim with request 2 differing: jobs %v, differ %v, %d pending (want none, [2], 2)", js, differ, p.size())
	}
}

// TestClaimWaitsAndLooksAgain: a claim waits for a request that has not
// arrived; a request it saw before the wait and that was failed during
// it is not handed out.
func TestClaimWaitsAndLooksAgain(t *testing.T) {
	ctx := context.Background()
	p, items := pendingJobs(t, 1, 2)
	late, err := newJob(derivedReq(3, 2))
	if err != nil {
		t.Fatal(err)
	}
	all := append(slices.Clone(items), late.item)
	go func() {
		time.Sleep(20 * time.Millisecond)
		p.add(late)
	}()
	js, missing, differ := p.claim(ctx, "", all, msg.MAC, time.Now().Add(5*time.Second))
	if len(js) != 3 || len(missing)+len(differ) > 0 || js[2] != late {
		t.Fatalf("claim across a late arrival: %d jobs, missing %v, differ %v", len(js), missing, differ)
	}

	p, items = pendingJobs(t, 1, 2)
	late, _ = newJob(derivedReq(3, 2))
	all = append(slices.Clone(items), late.item)
	go func() {
		// Request 1 goes away while the claim waits for request 3, which
		// then arrives: the claim must see that 1 is gone.
		time.Sleep(20 * time.Millisecond)
		p.fail("", []uint64{1}, ErrClassBadRequest, "gone")
		p.add(late)
	}()
	js, missing, _ = p.claim(ctx, "", all, msg.MAC, time.Now().Add(200*time.Millisecond))
	if js != nil || !slices.Equal(missing, []uint64{1}) {
		t.Fatalf("claim after request 1 failed: jobs %v, missing %v (want none, [1])", js, missing)
	}
	if p.size() != 2 {
		t.Fatalf("%d jobs pending after the refused claim, want 2 (requests 2 and 3)", p.size())
	}
}

// TestDuplicateIDs finds repeated ids in any order and none in
// increasing or distinct ids.
func TestDuplicateIDs(t *testing.T) {
	mk := func(ids ...uint64) []*pb.BatchItem {
		var out []*pb.BatchItem
		for _, id := range ids {
			out = append(out, &pb.BatchItem{Id: id})
		}
		return out
	}
	for _, c := range []struct {
		ids  []uint64
		want []uint64
	}{
		{[]uint64{1, 2, 3}, nil},
		{[]uint64{3, 1, 2}, nil},
		{[]uint64{1, 1}, []uint64{1}},
		{[]uint64{4, 2, 4, 2, 4}, []uint64{4, 2}},
		{[]uint64{1, 2, 2, 3}, []uint64{2}},
		{nil, nil},
	} {
		if got := duplicateIDs(mk(c.ids...)); !slices.Equal(got, c.want) {
			t.Errorf("duplicateIDs(%v) = %v, want %v", c.ids, got, c.want)
		}
	}
}

// BenchmarkClaim claims batches of 256 pending requests (ns/op per
// request), the way party 1 matches party 0's batch items.
func BenchmarkClaim(b *testing.B) {
	const n = 256
	ctx := context.Background()
	jobs := make([]*job, n)
	items := make([]*pb.BatchItem, n)
	for i := range jobs {
		j, err := newJob(derivedReq(uint64(i+1), 1))
		if err != nil {
			b.Fatal(err)
		}
		jobs[i], items[i] = j, j.item
	}
	p := newPending()
	deadline := time.Now().Add(time.Hour)
	b.ReportAllocs()
	for done := 0; b.Loop(); done++ {
		if done%n == 0 {
			b.StopTimer()
			if errs, _ := p.addAll(jobs); errs != nil {
				b.Fatal(errs)
			}
			b.StartTimer()
			if js, _, _ := p.claim(ctx, "", items, msg.MAC, deadline); len(js) != n {
				b.Fatal("claim failed")
			}
		}
	}
}
