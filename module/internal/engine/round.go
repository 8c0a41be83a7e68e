// The one round: own shares sealed into a frame for the peer, the peer's
// frame opened and matched against the slot at its counters.

package engine

import (
	"fmt"

	"github.com/kord-fss/kord/internal/prg"
	"github.com/kord-fss/kord/module/internal/channel"
	"github.com/kord-fss/kord/module/internal/kdf"
	"github.com/kord-fss/kord/module/msg"
)

func (e *Engine) submitShares(req *msg.SubmitRequest) (*msg.SubmitResponse, error) {
	n := len(req.Shares)
	if n == 0 || n > MaxBatch {
		return nil, bad("Shares: %d requests, want 1..%d", n, MaxBatch)
	}
	framed := 0
	for i, s := range req.Shares {
		if err := Validate(i, s); err != nil {
			return nil, err
		}
		if s.Mode != msg.Derived {
			framed++
		}
	}
	if framed > 0 {
		if err := checkTier(req.Tier); err != nil {
			return nil, err
		}
	}
	if !e.paired {
		return nil, ErrNotPaired
	}
	if framed > 0 && e.ch == nil {
		return nil, errNoSession
	}
	p, ready := e.pendingShares(), e.readyCount()
	if framed > MaxPendingShares-p {
		return nil, bad("Shares: %d shares already wait for peer frames; %d more would pass the limit of %d pending shares",
			p, framed, MaxPendingShares)
	}
	if n > e.maxReady-p-ready {
		return nil, bad("Shares: %d shares wait for peer frames and %d outputs wait to be collected; %d more would pass the limit of %d (collect or abandon first)",
			p, ready, n, e.maxReady)
	}
	// Commit the counters before any frame that depends on them leaves.
	first := e.ctr.Next
	next := e.ctr
	next.Next += uint64(n)
	if err := e.store.Save(next); err != nil {
		return nil, fmt.Errorf("module: saving counters: %w", err)
	}
	e.ctr = next

	resp := &msg.SubmitResponse{FirstCounter: first, Count: n}
	// One allocation each for the records, the one-record slots and the
	// frames (sub-slices of one buffer), however many keys.
	slab, recs := make([]record, n), make([]*record, n)
	for i := range slab {
		slab[i] = record{counter: first + uint64(i), share: req.Shares[i]}
		recs[i] = &slab[i]
	}
	var batch, derived []*record
	var single []slot
	frameBytes := 0
	for _, r := range recs {
		switch {
		case r.share.Mode == msg.Derived:
			derived = append(derived, r)
		case req.Tier == msg.BatchMAC:
			batch = append(batch, r)
		default:
			frameBytes += desc(r.share).Size()
			if req.Tier == msg.MAC {
				frameBytes += channel.Overhead
			}
		}
	}
	if len(batch) > 0 {
		frameBytes += channel.Overhead
		for _, r := range batch {
			frameBytes += desc(r.share).Size()
		}
	}
	if framed > len(batch) {
		single = make([]slot, 0, framed-len(batch))
	}
	frames := make([]byte, 0, frameBytes)
	for i, r := range recs {
		if r.share.Mode == msg.Derived || req.Tier == msg.BatchMAC {
			continue
		}
		single = append(single, slot{tier: req.Tier, recs: recs[i : i+1 : i+1]})
		sl := &single[len(single)-1]
		f, err := e.seal(frames[len(frames):len(frames):cap(frames)], sl)
		if err != nil {
			return nil, err
		}
		frames = frames[:len(frames)+len(f)]
		resp.Frames = append(resp.Frames, f[:len(f):len(f)])
		e.slots = append(e.slots, sl)
	}
	if len(batch) > 0 {
		sl := &slot{tier: msg.BatchMAC, recs: batch}
		f, err := e.seal(frames[len(frames):len(frames):cap(frames)], sl)
		if err != nil {
			return nil, err
		}
		resp.Frames = append(resp.Frames, f[:len(f):len(f)])
		e.slots = append(e.slots, sl)
	}
	for _, r := range derived {
		if err := e.acceptDerived(r); err != nil {
			return nil, err
		}
	}
	return resp, nil
}

// pendingShares counts the own shares waiting for a peer frame; e.mu held.
func (e *Engine) pendingShares() int {
	n := 0
	for _, s := range e.slots {
		n += s.size()
	}
	return n
}

// seal appends this party's frame for a slot to dst (which has room for
// it) and returns the frame. The mac tiers' nonce is the slot's first
// counter (channel.Nonce): counters only grow within a session, and each
// session has keys of its own.
func (e *Engine) seal(dst []byte, sl *slot) ([]byte, error) {
	if sl.tier == msg.Keystream {
		r := sl.recs[0]
		return e.ch.SealKeystreamTo(dst, r.counter, desc(r.share), r.share.AlphaShare, r.share.BetaShare), nil
	}
	var one [1]channel.Desc
	ds := sl.descs(&one)
	plain := e.plain[:0]
	for _, r := range sl.recs {
		plain = channel.Pack(plain, desc(r.share), r.share.AlphaShare, r.share.BetaShare)
	}
	e.plain = plain
	defer clear(plain)
	tier := channel.TierMAC
	if sl.tier == msg.BatchMAC {
		tier = channel.TierBatchMAC
	}
	return e.ch.SealTo(dst, tier, sl.first(), ds, plain)
}

func (e *Engine) reject(reason string, counter uint64) (*msg.SubmitResponse, error) {
	e.rejects[reason]++
	e.log.Warn("peer frame rejected", "party", e.party, "reason", reason, "expected_counter", counter)
	return &msg.SubmitResponse{Reject: reason}, nil
}

// submitFrame opens the peer frame for the oldest pending slot. Any failure
// rejects it before decryption completes, with no engine dispatch and no
// counter movement.
func (e *Engine) submitFrame(frame []byte) (*msg.SubmitResponse, error) {
	if !e.paired {
		return e.reject(RejectNotPaired, 0)
	}
	if e.ch == nil {
		return e.reject(RejectNoSession, e.ctr.PeerFloor)
	}
	if len(e.slots) == 0 {
		return e.reject(RejectNoPending, e.ctr.PeerFloor)
	}
	sl := e.slots[0]
	if sl.bulk != nil {
		return e.submitBulkFrame(sl, frame)
	}
	var one [1]channel.Desc
	ds := sl.descs(&one)
	var onePeer [1][2]uint64
	peer := onePeer[:]
	if len(sl.recs) > 1 {
		peer = make([][2]uint64, len(sl.recs))
	}
	defer clear(peer)
	if sl.tier == msg.Keystream {
		if len(frame) != ds[0].Size() {
			return e.reject(RejectLength, sl.first())
		}
		a, b, err := e.ch.OpenKeystream(sl.first(), ds[0], frame)
		if err != nil {
			return e.reject(RejectRange, sl.first())
		}
		peer[0] = [2]uint64{a, b}
	} else {
		got, err := channel.EnvelopeCounter(frame, ds)
		if err != nil {
			return e.reject(RejectLength, sl.first())
		}
		if got < e.ctr.PeerFloor {
			return e.reject(RejectReplay, sl.first())
		}
		if got != sl.first() {
			return e.reject(RejectOrder, sl.first())
		}
		tier := channel.TierMAC
		if sl.tier == msg.BatchMAC {
			tier = channel.TierBatchMAC
		}
		plain, err := e.ch.OpenTo(e.plain[:0], tier, got, ds, frame)
		if err != nil {
			return e.reject(RejectAuth, sl.first())
		}
		e.plain = plain
		off := 0
		for i, d := range ds {
			a, b, err := channel.Unpack(plain[off:off+d.Size()], d)
			if err != nil {
				clear(plain)
				return e.reject(RejectRange, sl.first())
			}
			peer[i] = [2]uint64{a, b}
			off += d.Size()
		}
		clear(plain)
	}
	// Authentic and fresh: reconstruct, commit, queue for generation.
	var oneOut [1]*output
	outs := oneOut[:]
	if len(sl.recs) > 1 {
		outs = make([]*output, len(sl.recs))
	}
	e.acceptSlot(sl, peer, outs)
	next := e.ctr
	next.PeerFloor = sl.last() + 1
	next.Accepted = next.PeerFloor
	next.Generated += uint64(len(outs))
	if err := e.store.Save(next); err != nil {
		for _, o := range outs {
			o.wipe()
		}
		return nil, fmt.Errorf("module: saving counters: %w", err)
	}
	e.ctr = next
	var resp *msg.SubmitResponse
	if len(sl.recs) == 1 {
		// The response and its one counter in one allocation.
		one := new(struct {
			r msg.SubmitResponse
			c [1]uint64
		})
		resp, one.r.Counters = &one.r, one.c[:0]
	} else {
		resp = &msg.SubmitResponse{Counters: make([]uint64, 0, len(sl.recs))}
	}
	resp.Accepted = true
	for i, r := range sl.recs {
		e.ready[r.counter] = outs[i]
		e.queue = append(e.queue, outs[i])
		resp.Counters = append(resp.Counters, r.counter)
		r.wipe()
	}
	e.pending += len(outs)
	e.slots = e.slots[1:]
	return resp, nil
}

// acceptSlot turns an authenticated slot into pending outputs, in outs
// (one per record): (α, β) reconstructed from both parties' shares; the
// keys are generated when first collected (materialize).
func (e *Engine) acceptSlot(sl *slot, peer [][2]uint64, outs []*output) {
	for i, r := range sl.recs {
		s := r.share
		p := s.Params()
		o := e.newOutput()
		*o = output{mode: s.Mode, profile: s.Profile, params: p, counter: r.counter,
			alpha: (s.AlphaShare + peer[i][0]) & prg.Mask(p.InBits),
			beta:  (s.BetaShare + peer[i][1]) & prg.Mask(p.OutBits), req: s}
		o.setTag(e.prf)
		outs[i] = o
	}
	e.dispatches += uint64(len(outs))
}

// acceptDerived draws (α, β) from kr and the counter and queues this
// party's key share (generated when first collected) with its additive
// shares of them.
func (e *Engine) acceptDerived(r *record) error {
	s := r.share
	p := s.Params()
	ma, mb := prg.Mask(p.InBits), prg.Mask(p.OutBits)
	alpha, alpha0, beta, beta0 := e.prf.Derived(r.counter, &kdf.DerivedShape{Mode: byte(msg.Derived),
		Type: msg.TypeByte(s.Profile, p.Type), InBits: byte(p.InBits), OutBits: byte(p.OutBits), G: 1, DeriveBeta: s.DeriveBeta})
	alpha, alpha0 = alpha&ma, alpha0&ma
	if s.DeriveBeta {
		beta, beta0 = beta&mb, beta0&mb
	} else {
		beta, beta0 = s.Beta, s.Beta
	}
	o := e.newOutput()
	*o = output{mode: msg.Derived, profile: s.Profile, params: p, counter: r.counter, alpha: alpha, beta: beta, req: s}
	o.setTag(e.prf)
	e.dispatches++
	if e.party == 0 {
		o.alphaShare, o.betaShare = alpha0, beta0
	} else {
		o.alphaShare, o.betaShare = (alpha-alpha0)&ma, (beta-beta0)&mb
	}
	alpha, alpha0, beta, beta0 = 0, 0, 0, 0
	_, _, _, _ = alpha, alpha0, beta, beta0
	next := e.ctr
	next.Generated++
	if err := e.store.Save(next); err != nil {
		o.wipe()
		return fmt.Errorf("module: saving counters: %w", err)
	}
	e.ctr = next
	e.ready[r.counter] = o
	e.queue = append(e.queue, o)
	e.pending++
	r.wipe()
	return nil
}
