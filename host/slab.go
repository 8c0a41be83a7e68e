package host

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/kord-fss/kord/fss"
	"github.com/kord-fss/kord/module"
	"github.com/kord-fss/kord/module/msg"
)

// The bulk path: a batch of keys of one shape goes to the module as one
// msg.Bulk (one counter commit, one frame each way in bound mode) and comes
// back as one msg.Slab (the keys at a fixed stride, no per-key message,
// parse or allocation). Generate takes it by itself for every batch whose
// requests share one shape (bulkable); GenerateSlab, DerivedSlab and
// BoundSlab hand the slab itself to the caller.

// GenerateSlab obtains this party's slab for one bulk request (b.N ≤
// msg.MaxBulk keys of one shape) under tier (bound mode; ignored in
// derived mode). The peer host must call it with a bulk of the same mode,
// shape, N and tier at the same time. The caller owns the slab and wipes
// it (Slab.Wipe) when done; it must compare its PairTags with the peer's
// before using a key (LocalPair's slab calls do). A failure is a
// *BatchError covering the whole bulk, Spent as for Generate; nothing is
// retried.
func (h *Host) GenerateSlab(ctx context.Context, tier msg.Tier, b *msg.Bulk) (*msg.Slab, error) {
	n := 0
	if b != nil {
		n = b.N
	}
	s, spent, err := h.bulk(ctx, tier, b)
	if err != nil {
		return nil, &BatchError{Start: 0, Count: n, Spent: spent, Err: err}
	}
	return s, nil
}

// bulk runs one bulk batch; spent reports whether the module opened (or
// may have opened) the peer's frame.
func (h *Host) bulk(ctx context.Context, tier msg.Tier, b *msg.Bulk) (_ *msg.Slab, spent bool, _ error) {
	sub, last, spent, err := h.submit(ctx, &msg.SubmitRequest{Kind: msg.SubmitBulk, Tier: tier, Bulk: b}, "a bulk")
	if err != nil {
		return nil, spent, err
	}
	cr, err := h.dev.Collect(ctx, &msg.CollectRequest{Counter: sub.FirstCounter, Count: sub.Count})
	if err == nil && (cr.Slab == nil || cr.Slab.First != sub.FirstCounter || cr.Slab.N != sub.Count) {
		if cr.Slab != nil {
			cr.Slab.Wipe()
		}
		err = errors.New("the module answered with another slab")
	}
	if err == nil {
		err = cr.Slab.Check()
		if err != nil {
			cr.Slab.Wipe()
		}
	}
	if err != nil {
		h.abandon(ctx, last, false, nil)
		return nil, spent, fmt.Errorf("host: collecting counters %d…%d: %w", sub.FirstCounter, last, err)
	}
	return cr.Slab, spent, nil
}

// bulkable reports whether a batch can go as one bulk: every request of
// the same bound or derived shape (and, derived, the same β rule), no
// points, within msg.MaxBulk.
func bulkable(reqs []Request) bool {
	if len(reqs) == 0 || len(reqs) > msg.MaxBulk {
		return false
	}
	r0 := reqs[0].Share
	if r0.Mode != msg.Bound && r0.Mode != msg.Derived {
		return false
	}
	for i := range reqs {
		s := reqs[i].Share
		if s.Mode != r0.Mode || s.Profile != r0.Profile || s.Type != r0.Type || s.InBits != r0.InBits || s.OutBits != r0.OutBits ||
			s.DeriveBeta != r0.DeriveBeta || s.Beta != r0.Beta || len(reqs[i].Points) != 0 {
			return false
		}
		if s.Mode == msg.Derived && (s.AlphaShare != 0 || s.BetaShare != 0) {
			return false // let the module name the field
		}
	}
	return true
}

// batchBulk is batch for a bulkable batch: one bulk, one slab, and a
// Result per key parsed from the slab (wiped after).
func (h *Host) batchBulk(ctx context.Context, tier msg.Tier, reqs []Request) (_ []Result, spent bool, _ error) {
	r0 := reqs[0].Share
	b := &msg.Bulk{Mode: r0.Mode, Profile: r0.Profile, Type: r0.Type, InBits: r0.InBits, OutBits: r0.OutBits, N: len(reqs),
		DeriveBeta: r0.DeriveBeta, Beta: r0.Beta}
	if r0.Mode == msg.Bound {
		b.AlphaShares, b.BetaShares = make([]uint64, len(reqs)), make([]uint64, len(reqs))
		for i := range reqs {
			b.AlphaShares[i], b.BetaShares[i] = reqs[i].AlphaShare, reqs[i].BetaShare
		}
	}
	s, spent, err := h.bulk(ctx, tier, b)
	clear(b.AlphaShares)
	clear(b.BetaShares)
	if err != nil {
		return nil, spent, err
	}
	defer h.Release(s)
	var keys []*fss.Key
	var raw []byte
	if s.Profile == msg.KordV1 {
		if keys, err = fss.ParseKeys(s.Keys, s.Stride, s.N); err != nil {
			h.abandon(ctx, s.First+uint64(s.N)-1, false, nil)
			return nil, spent, fmt.Errorf("host: keys at counters %d…: %w", s.First, err)
		}
	} else {
		raw = bytes.Clone(s.Keys) // the slab is wiped on release
	}
	res := make([]Result, s.N)
	for i := range res {
		r := Result{Counter: s.First + uint64(i), Mode: s.Mode}
		if keys != nil {
			r.Key = keys[i]
		} else {
			r.Raw = raw[i*s.Stride : (i+1)*s.Stride : (i+1)*s.Stride]
		}
		copy(r.PairTag[:], s.PairTag(i))
		if len(s.AlphaShares) == s.N {
			r.AlphaShare, r.BetaShare = s.AlphaShares[i], s.BetaShares[i]
		}
		res[i] = r
	}
	return res, spent, nil
}

// Release hands a slab this host's GenerateSlab returned back to its
// module to reuse (module.Recycler), which wipes it; with a module that
// does not take slabs back, it wipes it. The caller must not use it after.
func (h *Host) Release(s *msg.Slab) {
	if s == nil {
		return
	}
	if r, ok := h.dev.(module.Recycler); ok {
		r.Recycle(s)
		return
	}
	s.Wipe()
}

// Release hands both slabs of a DerivedSlab or BoundSlab back (see
// Host.Release); nil slabs are skipped.
func (lp *LocalPair) Release(slabs [2]*msg.Slab) {
	for b := range 2 {
		lp.Hosts[b].Release(slabs[b])
	}
}

// GenerateSlabs runs both hosts' GenerateSlab at once on b[0] (party 0's
// bulk) and b[1] (party 1's), which must agree in mode, profile, shape
// and N, and returns the two slabs once it has checked that they pair
// (equal pair tags): the general form of DerivedSlab and BoundSlab, for
// any profile (msg.Bulk.Profile). Ownership and errors are as for those.
func (lp *LocalPair) GenerateSlabs(ctx context.Context, tier msg.Tier, b [2]*msg.Bulk) ([2]*msg.Slab, error) {
	if b[0] == nil || b[1] == nil {
		return [2]*msg.Slab{}, errors.New("host: GenerateSlabs needs both parties' bulk requests")
	}
	return lp.runSlabs(ctx, tier, b)
}

// runSlabs runs both hosts' GenerateSlab at once and checks that the two
// slabs pair (equal pair tags); see DerivedSlab.
func (lp *LocalPair) runSlabs(ctx context.Context, tier msg.Tier, b [2]*msg.Bulk) ([2]*msg.Slab, error) {
	var out [2]*msg.Slab
	gctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var errs [2]error
	var wg sync.WaitGroup
	for x := range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			out[x], errs[x] = lp.Hosts[x].GenerateSlab(gctx, tier, b[x])
			if errs[x] != nil {
				cancel()
			}
		}()
	}
	wg.Wait()
	if errs[0] != nil || errs[1] != nil {
		lp.Links[0].drain()
		lp.Links[1].drain()
		be := &BatchError{Start: 0, Count: b[0].N, Err: errors.Join(errs[0], errs[1])}
		for x := range 2 {
			var e *BatchError
			if out[x] != nil {
				// The peer failed a bulk this side finished: in bound
				// mode, this module opened the peer's frame.
				be.Spent = be.Spent || out[x].Mode != msg.Derived
				lp.Hosts[x].Release(out[x])
				out[x] = nil
			} else if !errors.As(errs[x], &e) || e.Spent {
				be.Spent = true
			}
		}
		return out, be
	}
	if !bytes.Equal(out[0].PairTags, out[1].PairTags) {
		for x := range 2 {
			lp.Hosts[x].abandon(ctx, out[x].First+uint64(out[x].N)-1, true, nil)
			lp.Hosts[x].Release(out[x])
			out[x] = nil
		}
		lp.Hosts[0].log.Warn("pair tags disagree: a frame was altered or the requests differ; the bulk is spent")
		return out, &BatchError{Start: 0, Count: b[0].N, Spent: true, Err: ErrTampered}
	}
	return out, nil
}

// DerivedSlab is DerivedKeys as slabs: n ≤ msg.MaxBulk keys of shape p
// whose α (and β when deriveBeta; otherwise β is the public beta) are
// drawn inside both modules; slabs[b] is party b's (its keys, and its
// shares of each α and β in AlphaShares and BetaShares). The slabs pair
// (their pair tags were compared). The caller owns both and wipes them
// (Slab.Wipe), or hands them back (Release) for reuse.
func (lp *LocalPair) DerivedSlab(ctx context.Context, p fss.Params, n int, beta uint64, deriveBeta bool) (slabs [2]*msg.Slab, err error) {
	b := &msg.Bulk{Mode: msg.Derived, Type: p.Type, InBits: p.InBits, OutBits: p.OutBits, N: n, DeriveBeta: deriveBeta, Beta: beta}
	return lp.runSlabs(ctx, 0, [2]*msg.Bulk{b, b})
}

// BoundSlab is BoundKeys as slabs: given both parties' additive shares of
// each α (mod 2^ℓ) and β (mod 2^n), at most msg.MaxBulk, it returns each
// party's slab of key shares, slabs[b] for party b, key i at
// slabs[b].Key(i). The slabs pair (their pair tags were compared). The
// caller owns both and wipes them (Slab.Wipe), or hands them back
// (Release) for reuse. Errors are as for Generate: a
// *BatchError, Spent when the α may not be used again.
func (lp *LocalPair) BoundSlab(ctx context.Context, tier msg.Tier, p fss.Params, alphaShares, betaShares [2][]uint64) (slabs [2]*msg.Slab, err error) {
	n := len(alphaShares[0])
	if len(alphaShares[1]) != n || len(betaShares[0]) != n || len(betaShares[1]) != n {
		return slabs, errors.New("host: BoundSlab needs the same number of α and β shares from both parties")
	}
	var b [2]*msg.Bulk
	for x := range 2 {
		b[x] = &msg.Bulk{Mode: msg.Bound, Type: p.Type, InBits: p.InBits, OutBits: p.OutBits, N: n,
			AlphaShares: alphaShares[x], BetaShares: betaShares[x]}
	}
	return lp.runSlabs(ctx, tier, b)
}
