package service

import (
	"testing"

	"github.com/kord-fss/kord/module/msg"
)

// TestReplyBufBreaks: a job whose keys continue the message's stretch of
// a slab joins it without a copy; one whose keys are in another slab, or
// not next in the same one, or not in a slab, would copy the stretch out
// (unalias), which breaks reports.
func TestReplyBufBreaks(t *testing.T) {
	const stride = 10
	slabA, slabB := make([]byte, 8*stride), make([]byte, 8*stride)
	mk := func(id uint64, slab []byte, first, n int) *job {
		j := &job{id: id, outs: make([]msg.CollectResponse, n), keyBuf: slab, keyOff: first * stride}
		for i := range j.outs {
			j.outs[i].Key = slab[(first+i)*stride : (first+i+1)*stride]
		}
		return j
	}
	rb := newReplyBuf()
	first := mk(1, slabA, 0, 2)
	if rb.breaks(first) {
		t.Fatal("an empty message breaks")
	}
	rb.add(first)
	if !rb.aliased {
		t.Fatal("the first job's keys are not aliased")
	}
	if next := mk(2, slabA, 2, 3); rb.breaks(next) {
		t.Fatal("the next keys of the same slab break")
	} else {
		rb.add(next)
	}
	if len(rb.pk.Keys) != 5*stride || &rb.pk.Keys[0] != &slabA[0] {
		t.Fatal("the keys are not the slab's stretch")
	}
	for _, j := range []*job{mk(3, slabB, 5, 1), mk(4, slabA, 6, 1), {id: 5, outs: make([]msg.CollectResponse, 1)}} {
		if !rb.breaks(j) {
			t.Fatalf("job %d does not break the stretch", j.id)
		}
	}
	rb.reset()
	if rb.breaks(mk(6, slabB, 0, 1)) {
		t.Fatal("a reset message breaks")
	}
}
