package service

import (
	"bytes"
	"context"
	"reflect"
	"testing"
	"time"

	"github.com/kord-fss/kord/module/msg"
	pb "github.com/kord-fss/kord/proto/kordpb"
)

// TestPackViewMatchesRecords: a job whose outputs are a view of its slab
// packs exactly the lists a job of the same outputs as records packs,
// alone and after jobs of either kind, with shares, without, and with
// leading keys whose shares are zero (the share lists start late).
func TestPackViewMatchesRecords(t *testing.T) {
	const stride = 5
	type spec struct {
		n      int
		shares bool
		zeros  int // leading keys with zero shares
		evals  bool
	}
	mk := func(id uint64, first uint64, sp spec, view bool) *job {
		keys := make([]byte, sp.n*stride)
		tags := make([]byte, sp.n*msg.PairTagSize)
		for i := range keys {
			keys[i] = byte(int(id)*31 + i)
		}
		for i := range tags {
			tags[i] = byte(int(id)*7 + i)
		}
		var alpha, beta []uint64
		if sp.shares {
			alpha, beta = make([]uint64, sp.n), make([]uint64, sp.n)
			for k := sp.zeros; k < sp.n; k++ {
				alpha[k], beta[k] = uint64(k+1)*3+id, uint64(k+1)*5+id
			}
		}
		j := &job{id: id, keyBuf: keys}
		if view {
			j.vn, j.vFirst, j.vMode, j.vStride, j.vTags, j.vAlpha, j.vBeta = sp.n, first, msg.Derived, stride, tags, alpha, beta
			return j
		}
		j.outs = make([]msg.CollectResponse, sp.n)
		for k := range j.outs {
			o := &j.outs[k]
			o.Counter, o.Mode, o.Key, o.PairTag = first+uint64(k), msg.Derived, keys[k*stride:(k+1)*stride], [msg.PairTagSize]byte(tags[k*msg.PairTagSize:])
			if sp.shares {
				o.AlphaShare, o.BetaShare = alpha[k], beta[k]
			}
			if sp.evals {
				o.Evals = []uint64{9}
			}
		}
		return j
	}
	cases := [][]spec{
		{{n: 4, shares: true}},
		{{n: 4}},
		{{n: 4, shares: true, zeros: 2}},
		{{n: 4, shares: true, zeros: 4}, {n: 3, shares: true, zeros: 1}},
		{{n: 2}, {n: 3, shares: true}},
		{{n: 2, shares: true}, {n: 3}},
		{{n: 2, evals: true}, {n: 3, shares: true}},
	}
	for ci, c := range cases {
		for mask := 0; mask < 1<<len(c); mask++ {
			var want, got pb.PackedReplies
			first := uint64(100)
			for i, sp := range c {
				r := mk(uint64(i+1), first, sp, false)
				r.packLists(&want, true)
				v := mk(uint64(i+1), first, sp, mask&(1<<i) != 0 && !sp.evals)
				v.packLists(&got, true)
				if v.nOut() != sp.n {
					t.Fatalf("case %d: nOut %d, want %d", ci, v.nOut(), sp.n)
				}
				for k := 0; k < sp.n; k++ {
					if v.vn > 0 && !reflect.DeepEqual(v.viewOut(k), r.outs[k]) {
						t.Fatalf("case %d: viewOut(%d) %+v, record %+v", ci, k, v.viewOut(k), r.outs[k])
					}
				}
				first += uint64(sp.n)
			}
			if !reflect.DeepEqual(&got, &want) {
				t.Fatalf("case %d, views %b: packed\n%+v\nwant\n%+v", ci, mask, &got, &want)
			}
		}
	}
}

// viewJob makes j's outputs a view of a fresh slab part: n keys from
// counter first, keys of stride bytes, tags and shares derived from first.
func viewJob(j *job, first uint64, n, stride int) {
	keys := make([]byte, n*stride)
	tags := make([]byte, n*msg.PairTagSize)
	alpha, beta := make([]uint64, n), make([]uint64, n)
	for i := range keys {
		keys[i] = byte(i + 1)
	}
	for i := range tags {
		tags[i] = byte(int(first) + i)
	}
	for k := range n {
		alpha[k], beta[k] = first+uint64(k)+1, first+uint64(k)+2
	}
	j.keyBuf, j.keyOff, j.slabFirst, j.slabN = keys, 0, first, n
	j.vn, j.vFirst, j.vMode, j.vStride, j.vTags, j.vAlpha, j.vBeta = n, first, msg.Derived, stride, tags, alpha, beta
}

// TestHeldViews: party 1's held batches whose jobs are views of their
// slabs name the same counters and digest as records would (heldItems),
// are wiped when requeued (settleHeld), and when delivered move the
// next-counter gauge and leave their pair tags for recovery (record).
func TestHeldViews(t *testing.T) {
	p := unconnectedParty1(t)
	held := func(seq, id, first uint64, n int) *heldBatch {
		j := p.request(&pb.KeyRequest{Id: id, Mode: "derived", Type: "dpf", InBits: 8, OutBits: 8, Count: uint32(n)})
		js, _, _ := p.pend.claim(context.Background(), "", []*pb.BatchItem{j.item}, msg.MAC, time.Now())
		if len(js) != 1 {
			t.Fatalf("request %d not claimed", id)
		}
		viewJob(js[0], first, n, 4)
		return &heldBatch{seq: seq, jobs: js, replies: [][]msg.CollectResponse{nil}, confirm: bytes.Repeat([]byte{1}, 32)}
	}
	a, b := held(1, 10, 40, 3), held(2, 11, 43, 2)
	// heldItems: as records of the same outputs.
	got := heldItems([]*heldBatch{a})
	recs := make([]msg.CollectResponse, 3)
	for k := range recs {
		recs[k] = a.jobs[0].viewOut(k)
	}
	if len(got) != 1 || got[0].FirstCounter != 40 || !bytes.Equal(got[0].Digest, outputsDigest(recs)) || got[0].BulkFirst != 40 || got[0].BulkN != 3 {
		t.Fatalf("heldItems of a view: %+v", got)
	}
	bj := b.jobs[0]
	bKeys, bAlpha, bBeta := bj.keyViews(), bj.vAlpha, bj.vBeta
	p.held, p.heldRun = []*heldBatch{a, b}, 5
	p.settleHeld(5, 1, []*pb.Confirm{{Seq: 1, Ok: true, Mac: a.confirm}}) // same run, party 0 delivered through batch 1
	if !a.jobs[0].answered() || a.jobs[0].nOut() != 3 {
		t.Fatalf("batch 1 not delivered with its 3 keys: answered %v", a.jobs[0].answered())
	}
	if g := gauge(t, p); g != 43 {
		t.Fatalf("gauge %v after a view of counters 40..42, want 43", g)
	}
	items := p.recentItems()
	if len(items) != 1 || items[0].FirstCounter != 40 || !bytes.Equal(items[0].Digest, outputsDigest(recs)) {
		t.Fatalf("recent items after a delivered view: %+v", items)
	}
	if bj.answered() || p.pend.size() != 1 || bj.vn != 0 {
		t.Fatalf("batch 2 should be pending again without its view: answered %v, %d pending, view %d", bj.answered(), p.pend.size(), bj.vn)
	}
	for _, v := range append(append([]uint64(nil), bAlpha...), bBeta...) {
		if v != 0 {
			t.Fatalf("requeued view's shares not wiped: %v %v", bAlpha, bBeta)
		}
	}
	if !bytes.Equal(bKeys, make([]byte, len(bKeys))) {
		t.Fatalf("requeued view's keys not wiped: %v", bKeys)
	}
	// The delivered job's reply wipes its view (its keys, not lent).
	aj := a.jobs[0]
	aKeys, aAlpha := aj.keyViews(), aj.vAlpha
	aj.wipeOutputs(false)
	if !bytes.Equal(aKeys, make([]byte, len(aKeys))) || aAlpha[0] != 0 || aj.vn != 0 {
		t.Fatalf("wipeOutputs left a view: keys %v alpha %v vn %d", aKeys, aAlpha, aj.vn)
	}
}
