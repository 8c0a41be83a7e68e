// A job's outputs: views over the module's slabs, their wiping, and their
// encoding as replies.

package service

import (
	"bytes"
	"slices"

	"github.com/kord-fss/kord/module/msg"
	"github.com/kord-fss/kord/module/socket"
	pb "github.com/kord-fss/kord/proto/kordpb"
	"github.com/kord-fss/kord/proto/modulepb"
)

// wipeOutputs clears the job's key bytes, evaluations and mask shares once
// its reply has gone out: the party keeps no copy of what it delivered.
// With lent, its key bytes were lent to the codec, which wipes them
// once written (kordpb.LendKeys): only the shares are wiped here.
//
// Unless lent (its reference then goes with the loan: takeRef), the job
// gives back its reference to the pooled buffer its keys are views of.
func (j *job) wipeOutputs(lent bool) {
	if kv := j.keyViews(); kv != nil {
		if !lent {
			socket.WipeKeys(kv) // one pass over the job's part of its slab
			j.releaseRef(kv)
		}
		for i := range j.outs {
			j.outs[i].AlphaShare, j.outs[i].BetaShare = 0, 0
			clear(j.outs[i].BetaShares)
		}
		clear(j.vAlpha)
		clear(j.vBeta)
		j.clearView()
		return
	}
	clear(j.vAlpha)
	clear(j.vBeta)
	j.clearView()
	for i := range j.outs {
		o := &j.outs[i]
		clear(o.Key)
		clear(o.Evals)
		clear(o.BetaShares)
		o.AlphaShare, o.BetaShare = 0, 0
		o.Corr.Wipe()
	}
	if !lent {
		j.releaseRef(nil)
	}
}

// slabRef is a job's reference to its pooled slab buffer, taken from the
// job: once the job's keys are wiped, region is wiped unless covered
// (the wiped keys were exactly region), then the reference is released.
type slabRef struct {
	ref     *socket.RecvBuf
	region  []byte
	covered bool
}

func (r slabRef) release() {
	if !r.covered {
		socket.WipeKeys(r.region)
	}
	r.ref.Release()
}

// takeRef takes the job's buffer reference (ok false: none); wiped are
// the key bytes the caller wipes (the job's key views).
func (j *job) takeRef(wiped []byte) (slabRef, bool) {
	if j.keyRef == nil {
		return slabRef{}, false
	}
	r := slabRef{ref: j.keyRef, region: j.keyRegion,
		covered: len(wiped) == len(j.keyRegion) && len(wiped) > 0 && &wiped[0] == &j.keyRegion[0]}
	j.keyRef, j.keyRegion = nil, nil
	return r, true
}

// releaseRef releases the job's buffer reference once wiped (its key
// views) are wiped.
func (j *job) releaseRef(wiped []byte) {
	if r, ok := j.takeRef(wiped); ok {
		r.release()
	}
}

// pbReply is the answer as one KeyReply message. Keys in a read-only slab
// mapping (socket.DoMapped) are copied: the codec wipes a KeyReply's keys
// once encoded.
func (j *job) pbReply() *pb.KeyReply {
	if j.reply != nil {
		return j.reply
	}
	n := j.nOut()
	rep := &pb.KeyReply{Id: j.id, Keys: make([]*pb.KeyShare, n)}
	shares := make([]pb.KeyShare, n)
	own := func(k []byte) []byte { return k }
	if socket.IsMapped(j.keyBuf) {
		own = bytes.Clone
	}
	for i := range n {
		if j.vn > 0 {
			c := j.viewOut(i)
			shares[i] = pb.KeyShare{Counter: c.Counter, Key: own(c.Key), AlphaShare: c.AlphaShare, BetaShare: c.BetaShare}
			rep.Keys[i] = &shares[i]
			continue
		}
		c := &j.outs[i]
		shares[i] = pb.KeyShare{Counter: c.Counter, Key: own(c.Key), AlphaShare: c.AlphaShare, BetaShare: c.BetaShare, Evals: c.Evals}
		if j.vecShares() {
			shares[i].BetaShares = c.BetaShares
		}
		if c.Corr != nil {
			shares[i].Corr = &modulepb.CorrShares{Counter: c.Corr.Counter, Blocks: uint32(c.Corr.Blocks), Corr: socket.CorrToPB(&c.Corr.Corr),
				A: c.Corr.A, R: c.Corr.R, Z: c.Corr.Z, PairTag: c.Corr.PairTag[:], Packs: c.Corr.Packs}
		}
		rep.Keys[i] = &shares[i]
	}
	return rep
}

// packLists appends the job's answer to pk's lists, and its key bytes
// to pk.Keys when keys is set (otherwise the caller has placed them).
func (j *job) packLists(pk *pb.PackedReplies, keys bool) {
	if len(pk.Ids) == 0 {
		pk.AlphaShares, pk.BetaShares, pk.EvalLens = pk.AlphaShares[:0], pk.BetaShares[:0], pk.EvalLens[:0]
	}
	pk.Ids = append(pk.Ids, j.id)
	if j.vn > 0 {
		j.packView(pk, keys)
		return
	}
	pk.Counts = append(pk.Counts, uint32(len(j.outs)))
	for i := range j.outs {
		c := &j.outs[i]
		pk.Counters = append(pk.Counters, c.Counter)
		if keys {
			pk.Keys = append(pk.Keys, c.Key...)
		}
		pk.KeyLens = append(pk.KeyLens, uint32(len(c.Key)))
		// The share and evaluation lists start (zero-padded for the keys
		// before) at the first key that has any.
		if len(pk.AlphaShares) > 0 || c.AlphaShare != 0 || c.BetaShare != 0 {
			if len(pk.AlphaShares) == 0 {
				pk.AlphaShares = append(pk.AlphaShares, make([]uint64, len(pk.Counters)-1)...)
				pk.BetaShares = append(pk.BetaShares, make([]uint64, len(pk.Counters)-1)...)
			}
			pk.AlphaShares = append(pk.AlphaShares, c.AlphaShare)
			pk.BetaShares = append(pk.BetaShares, c.BetaShare)
		}
		if len(pk.EvalLens) > 0 || len(c.Evals) > 0 {
			if len(pk.EvalLens) == 0 {
				pk.EvalLens = append(pk.EvalLens, make([]uint32, len(pk.Counters)-1)...)
			}
			pk.Evals = append(pk.Evals, c.Evals...)
			pk.EvalLens = append(pk.EvalLens, uint32(len(c.Evals)))
		}
	}
}

// packView is packLists for a job whose outputs are a view of its slab
// (the same lists, read from the slab's parts).
func (j *job) packView(pk *pb.PackedReplies, keys bool) {
	n := j.vn
	pk.Counts = append(pk.Counts, uint32(n))
	at := len(pk.Counters) // keys before the job's
	pk.Counters = slices.Grow(pk.Counters, n)[:at+n]
	for k := range pk.Counters[at:] {
		pk.Counters[at+k] = j.vFirst + uint64(k)
	}
	l := len(pk.KeyLens)
	pk.KeyLens = slices.Grow(pk.KeyLens, n)[:l+n]
	for k := range pk.KeyLens[l:] {
		pk.KeyLens[l+k] = uint32(j.vStride)
	}
	if keys {
		pk.Keys = append(pk.Keys, j.keyViews()...)
	}
	// The share lists start (zero-padded for the keys before) at the
	// first key that has any, as packLists's: from there on, every key's.
	switch {
	case j.vAlpha != nil:
		k0 := 0
		if len(pk.AlphaShares) == 0 {
			for k0 < n && j.vAlpha[k0] == 0 && j.vBeta[k0] == 0 {
				k0++
			}
			if k0 < n {
				pk.AlphaShares = append(pk.AlphaShares, make([]uint64, at+k0)...)
				pk.BetaShares = append(pk.BetaShares, make([]uint64, at+k0)...)
			}
		}
		if k0 < n {
			pk.AlphaShares = append(pk.AlphaShares, j.vAlpha[k0:]...)
			pk.BetaShares = append(pk.BetaShares, j.vBeta[k0:]...)
		}
	case len(pk.AlphaShares) > 0:
		pk.AlphaShares = append(pk.AlphaShares, make([]uint64, n)...)
		pk.BetaShares = append(pk.BetaShares, make([]uint64, n)...)
	}
	if len(pk.EvalLens) > 0 {
		pk.EvalLens = append(pk.EvalLens, make([]uint32, n)...)
	}
}

// nOut is the number of the job's outputs (its view's or outs).
func (j *job) nOut() int {
	if j.vn > 0 {
		return j.vn
	}
	return len(j.outs)
}

// viewOut is output k of the job's view as a record (its key a view).
func (j *job) viewOut(k int) msg.CollectResponse {
	o := msg.CollectResponse{Counter: j.vFirst + uint64(k), Mode: j.vMode,
		Key:     j.keyBuf[j.keyOff+k*j.vStride : j.keyOff+(k+1)*j.vStride : j.keyOff+(k+1)*j.vStride],
		PairTag: [msg.PairTagSize]byte(j.vTags[k*msg.PairTagSize:])}
	if j.vAlpha != nil {
		o.AlphaShare, o.BetaShare = j.vAlpha[k], j.vBeta[k]
	}
	return o
}

// tagAt is the pair tag of the job's output k (a view's).
func (j *job) tagAt(k int) [msg.PairTagSize]byte {
	return [msg.PairTagSize]byte(j.vTags[k*msg.PairTagSize:])
}

// materialize turns the job's view into records (outs), for callers
// that take outputs as records (in-process answers); the view's mask
// shares move into the records.
func (j *job) materialize() {
	if j.vn == 0 {
		return
	}
	outs := make([]msg.CollectResponse, j.vn)
	for k := range outs {
		outs[k] = j.viewOut(k)
	}
	clear(j.vAlpha)
	clear(j.vBeta)
	j.outs = outs
	j.clearView()
}

// clearView drops the job's view (not its key bytes: keyBuf).
func (j *job) clearView() {
	j.vn, j.vFirst, j.vStride, j.vTags, j.vAlpha, j.vBeta = 0, 0, 0, nil, nil, nil
}

// wipeView clears the key bytes and mask shares of the job's view, outputs
// that will not be delivered, and drops it.
func (j *job) wipeView() {
	if j.vn == 0 {
		return
	}
	if kv := j.keyViews(); kv != nil {
		socket.WipeKeys(kv)
	}
	clear(j.vAlpha)
	clear(j.vBeta)
	j.clearView()
}

// wipeJobReplies clears the outputs of jobs (reps: their records; a
// view's are in the job) that will not be delivered.
func wipeJobReplies(jobs []*job, reps [][]msg.CollectResponse) {
	wipeReplies(reps)
	for _, j := range jobs {
		j.wipeView()
	}
}

// resetPacked empties pk for reuse, wiping the key shares it held.
func resetPacked(pk *pb.PackedReplies) {
	socket.WipeKeys(pk.Keys)
	clear(pk.Evals)
	clear(pk.AlphaShares)
	clear(pk.BetaShares)
	pk.Ids, pk.Counts, pk.Counters, pk.Keys, pk.KeyLens = pk.Ids[:0], pk.Counts[:0], pk.Counters[:0], pk.Keys[:0], pk.KeyLens[:0]
	pk.KeyStride = 0
	pk.AlphaShares, pk.BetaShares, pk.Evals, pk.EvalLens = pk.AlphaShares[:0], pk.BetaShares[:0], pk.Evals[:0], pk.EvalLens[:0]
}
