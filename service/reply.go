package service

import (
	pb "github.com/kord-fss/kord/proto/kordpb"
)

// replyBuf builds the packed replies of one application message. The keys
// of a bulk batch's jobs are views of their slab, which the module socket
// read them into: while the message's keys are consecutive in one slab,
// PackedReplies.keys is that part of the slab itself (no copy; the gRPC
// codec's encoding is then the one copy before the kernel), otherwise
// they are copied into a buffer of the builder's own. When every key of
// the message has one size and the stream's client reads key_stride, the
// message carries the stride instead of key_lens.
type replyBuf struct {
	pk *pb.PackedReplies
	// own is the builder's key buffer while pk.Keys aliases a slab
	// (aliased); otherwise pk.Keys is own.
	own     []byte
	aliased bool
	// buf[start:end] is pk.Keys while aliased: buf is the whole slab
	buf        []byte
	start, end int
	// stride: the size of every key so far (0: none yet, -1: they differ)
	stride int
	lens   []uint32 // pk.KeyLens's memory while a message goes with key_stride
}

func newReplyBuf() *replyBuf { return &replyBuf{pk: new(pb.PackedReplies)} }

// add appends j's successful answer.
func (rb *replyBuf) add(j *job) {
	pk := rb.pk
	if kv := j.keyViews(); kv != nil {
		switch {
		case len(pk.Keys) == 0:
			if !rb.aliased {
				rb.own = pk.Keys[:0]
			}
			pk.Keys, rb.aliased = kv, true
			rb.buf, rb.start, rb.end = j.keyBuf, j.keyOff, j.keyOff+len(kv)
		case rb.aliased && &rb.buf[0] == &j.keyBuf[0] && rb.end == j.keyOff:
			rb.end += len(kv)
			pk.Keys = rb.buf[rb.start:rb.end:rb.end]
		default:
			rb.unalias()
			pk.Keys = append(pk.Keys, kv...)
		}
		j.packLists(pk, false)
	} else {
		rb.unalias()
		j.packLists(pk, true)
	}
	if j.vn > 0 {
		switch l := j.vStride; {
		case rb.stride == 0:
			rb.stride = l
		case rb.stride != l:
			rb.stride = -1
		}
		return
	}
	for i := range j.outs {
		switch l := len(j.outs[i].Key); {
		case l == 0:
			rb.stride = -1
		case rb.stride == 0:
			rb.stride = l
		case rb.stride != l:
			rb.stride = -1
		}
	}
}

// minLentKeys is the fewest keys a message whose keys are a stretch of a
// slab has before a job whose keys are elsewhere goes into the next
// message rather than this one (replyBuf.breaks): below it, copying the
// keys costs less than a message of its own.
const minLentKeys = 64

// breaks reports whether adding j would copy the message's keys out of
// the slab they are a stretch of (unalias): j's keys are not the next
// ones of that slab.
func (rb *replyBuf) breaks(j *job) bool {
	if !rb.aliased || len(rb.pk.Keys) == 0 {
		return false
	}
	kv := j.keyViews()
	return kv == nil || len(rb.buf) == 0 || len(j.keyBuf) == 0 || &rb.buf[0] != &j.keyBuf[0] || rb.end != j.keyOff
}

// unalias copies the keys out of the slab into the builder's buffer.
func (rb *replyBuf) unalias() {
	if !rb.aliased {
		return
	}
	rb.pk.Keys = append(rb.own[:0], rb.pk.Keys...)
	rb.own, rb.aliased, rb.buf = nil, false, nil
}

// finish readies the message to send: with stride (the client reads
// key_stride) and one size for every key, key_lens gives way to
// key_stride.
func (rb *replyBuf) finish(stride bool) {
	if stride && rb.stride > 0 {
		rb.pk.KeyStride = uint32(rb.stride)
		rb.lens, rb.pk.KeyLens = rb.pk.KeyLens, nil
	}
}

// reset empties the builder for the next message: the key bytes it owns
// are wiped; aliased ones are the jobs' own, which wipe them (wipeOutputs).
func (rb *replyBuf) reset() {
	pk := rb.pk
	if rb.lens != nil {
		pk.KeyLens, rb.lens = rb.lens, nil
	}
	pk.KeyStride, pk.KeysFd = 0, nil
	if rb.aliased {
		pk.Keys, rb.own, rb.aliased, rb.buf = rb.own, nil, false, nil
	}
	resetPacked(pk)
	rb.stride = 0
}
