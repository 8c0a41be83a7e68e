package host

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/kord-fss/kord/fss"
	"github.com/kord-fss/kord/module"
	"github.com/kord-fss/kord/module/msg"
	"github.com/kord-fss/kord/service"
)

// The slab API: a call's keys come back as one msg.Slab per party (the
// keys at a fixed stride, one buffer), which the caller reads in place.
// The parties batch them as bulks (one counter commit, one frame each way
// per run of one shape in bound mode: service/bulk.go).

// Release wipes both slabs of a DerivedSlab or BoundSlab (the one wipe
// their buffers get) and keeps their buffers for the next slab calls; nil
// slabs are skipped. The caller must not use them after.
func (lp *LocalPair) Release(slabs [2]*msg.Slab) {
	for b, s := range slabs {
		if s == nil {
			continue
		}
		// The module that generates party b's next slabs reuses the
		// buffers (its Recycle is the one wipe); the pool is for a
		// module that does not take them back.
		if r, ok := lp.Devices[b].(module.Recycler); ok {
			r.Recycle(s)
			continue
		}
		s.Wipe()
		lp.slabPool.Put(s)
	}
}

// newSlab is an empty slab of n keys of profile pr and shape p in mode,
// from a released one when its buffers are large enough (they were wiped
// at Release).
func (lp *LocalPair) newSlab(pr msg.Profile, p fss.Params, g int, mode msg.Mode, n int) *msg.Slab {
	stride := msg.KeySizeG(pr, p, g)
	s, _ := lp.slabPool.Get().(*msg.Slab)
	if s == nil || cap(s.Keys) < n*stride || cap(s.PairTags) < n*msg.PairTagSize {
		s = &msg.Slab{Keys: make([]byte, n*stride), PairTags: make([]byte, n*msg.PairTagSize)}
	}
	*s = msg.Slab{N: n, Mode: mode, Profile: pr, Params: p, Group: g, Stride: stride, Keys: s.Keys[:n*stride], PairTags: s.PairTags[:n*msg.PairTagSize],
		AlphaShares: s.AlphaShares[:0], BetaShares: s.BetaShares[:0]}
	if mode == msg.Derived {
		nb := n * max(g, 1)
		if cap(s.AlphaShares) < n || cap(s.BetaShares) < nb {
			s.AlphaShares, s.BetaShares = make([]uint64, n), make([]uint64, nb)
		}
		s.AlphaShares, s.BetaShares = s.AlphaShares[:n], s.BetaShares[:nb]
	} else {
		s.AlphaShares, s.BetaShares = nil, nil
	}
	return s
}

// checkBulk refuses a slab call's profile, shape or count before anything
// is asked of a party (α reusable).
func checkBulk(pr msg.Profile, p fss.Params, g, n int) error {
	if err := msg.CheckShape(pr, p); err != nil {
		return &BatchError{Count: max(n, 0), Err: fmt.Errorf("%w: %v", module.ErrBadRequest, err)}
	}
	if err := msg.CheckGroup(pr, g); err != nil {
		return &BatchError{Count: max(n, 0), Err: fmt.Errorf("%w: %v", module.ErrBadRequest, err)}
	}
	if n < 1 || n > msg.MaxBulk {
		return &BatchError{Count: max(n, 0), Err: fmt.Errorf("%w: %d keys, want 1..%d", module.ErrBadRequest, n, msg.MaxBulk)}
	}
	return nil
}

// slabs gathers each party's answers (n keys of profile pr and shape p in
// mode) into one slab each and wipes the answers. It fails, handing out
// nothing, if an answer failed or a pair does not pair (failure).
func (lp *LocalPair) slabs(ans [2][]service.Answer, rs []request, pr msg.Profile, p fss.Params, g int, mode msg.Mode, n int) ([2]*msg.Slab, error) {
	var out [2]*msg.Slab
	if bad, err := failure(ans, rs); bad >= 0 {
		return out, failed(ans, 0, err)
	}
	stride := msg.KeySizeG(pr, p, g)
	for b := range 2 {
		// The module's own slab when the party's answers are exactly one
		// (no copy); else the keys are copied into one.
		if s, ok := service.TakeSlab(ans[b]); ok {
			if s.N != n || s.Stride != stride || max(s.Group, 1) != max(g, 1) || s.Mode != mode || s.Profile != pr || s.Params != p {
				s.Wipe()
				if out[0] != nil {
					out[0].Wipe()
				}
				return [2]*msg.Slab{}, failed(ans, 0, fmt.Errorf("host: party %d's slab is not the %d keys asked for", b, n))
			}
			out[b] = s
			continue
		}
		s := lp.newSlab(pr, p, g, mode, n)
		i := 0
		for a := range ans[b] {
			for k := range ans[b][a].Outputs {
				o := &ans[b][a].Outputs[k]
				if len(o.Key) != stride || i >= n {
					s.Wipe()
					if out[0] != nil {
						out[0].Wipe()
					}
					return [2]*msg.Slab{}, failed(ans, 0, fmt.Errorf("host: the party answered %d-byte keys, want %d of %d bytes", len(o.Key), n, stride))
				}
				if i == 0 {
					s.First = o.Counter
				}
				copy(s.Keys[i*stride:], o.Key)
				copy(s.PairTags[i*msg.PairTagSize:], o.PairTag[:])
				if mode == msg.Derived {
					s.AlphaShares[i] = o.AlphaShare
					if g > 1 {
						copy(s.BetaShares[i*g:(i+1)*g], o.BetaShares) // drawn elements; none with a public vector
					} else {
						s.BetaShares[i] = o.BetaShare
					}
				}
				i++
			}
			ans[b][a].Wipe()
		}
		out[b] = s
	}
	return out, nil
}

// GenerateSlabs is the general form of DerivedSlab and BoundSlab, for any
// profile: b[0] is party 0's bulk request and b[1] party 1's, which must
// agree in mode, profile, shape, N (≤ msg.MaxBulk) and, derived, β rule;
// tier applies in bound mode. It returns each party's slab once the two
// pair (their pair tags were compared). The caller owns both and wipes
// them (Slab.Wipe, or Release). A failure is a *BatchError covering the
// whole call, Spent when the α may not be used again.
func (lp *LocalPair) GenerateSlabs(ctx context.Context, tier msg.Tier, b [2]*msg.Bulk) ([2]*msg.Slab, error) {
	if b[0] == nil || b[1] == nil {
		return [2]*msg.Slab{}, errors.New("host: GenerateSlabs needs both parties' bulk requests")
	}
	b0, b1 := b[0], b[1]
	p := fss.Params{Type: b0.Type, InBits: b0.InBits, OutBits: b0.OutBits}
	if b1.Mode != b0.Mode || b1.Profile != b0.Profile || b1.Type != b0.Type || b1.InBits != b0.InBits || b1.OutBits != b0.OutBits || b1.N != b0.N ||
		b1.DeriveBeta != b0.DeriveBeta || b1.Beta != b0.Beta || b1.G() != b0.G() || !slices.Equal(b1.Betas, b0.Betas) {
		return [2]*msg.Slab{}, &BatchError{Count: max(b0.N, 0), Err: fmt.Errorf("%w: the two parties' bulk requests differ", ErrRejected)}
	}
	g := b0.G()
	if err := checkBulk(b0.Profile, p, b0.Group, b0.N); err != nil {
		return [2]*msg.Slab{}, err
	}
	n := b0.N
	// A slab call goes as requests of up to service.MaxCount keys (the
	// most one request may ask for; a request larger than the batch size
	// goes in a batch of its own), each one job and one bulk, so that a
	// call of up to MaxCount keys is one slab at each party, handed over
	// whole (service.TakeSlab) rather than copied together.
	var rs []request
	switch b0.Mode {
	case msg.Derived:
		rs = derivedRequests(b0.Profile, p, n, service.MaxCount, b0.Beta, b0.DeriveBeta)
		if g > 1 {
			if !b0.DeriveBeta && len(b0.Betas) != g {
				return [2]*msg.Slab{}, &BatchError{Count: n, Err: fmt.Errorf("%w: %d public payload elements for group %d", module.ErrBadRequest, len(b0.Betas), g)}
			}
			for i := range rs {
				rs[i].group, rs[i].betas = g, b0.Betas
			}
		}
	case msg.Bound:
		for x := range 2 {
			if len(b[x].AlphaShares) != n || len(b[x].BetaShares) != n*g {
				return [2]*msg.Slab{}, &BatchError{Count: n, Err: fmt.Errorf("%w: party %d's bulk has %d α and %d β shares for %d keys",
					module.ErrBadRequest, x, len(b[x].AlphaShares), len(b[x].BetaShares), n)}
			}
		}
		if g > 1 {
			// A payload vector goes as one request per key (the
			// application API has no vector bulk).
			rs = make([]request, n)
			for i := range rs {
				for x := range 2 {
					rs[i].req[x] = Request{Share: msg.Share{Mode: msg.Bound, Profile: b0.Profile, Type: p.Type, InBits: p.InBits, OutBits: p.OutBits,
						AlphaShare: b[x].AlphaShares[i]}}
					rs[i].vec[x] = b[x].BetaShares[i*g : (i+1)*g]
				}
				rs[i].tier, rs[i].keys, rs[i].group = tier, 1, g
			}
			break
		}
		for i := 0; i < n; i += service.MaxCount {
			k := min(n-i, service.MaxCount)
			var bb [2]service.BoundBulk
			for x := range 2 {
				bb[x] = service.BoundBulk{Tier: tier, Profile: b0.Profile, Params: p,
					AlphaShares: b[x].AlphaShares[i : i+k], BetaShares: b[x].BetaShares[i : i+k]}
			}
			rs = append(rs, request{tier: tier, keys: k, bulk: &bb})
		}
	default:
		return [2]*msg.Slab{}, &BatchError{Count: n, Err: fmt.Errorf("%w: mode %v has no slab (want bound or derived)", module.ErrBadRequest, b0.Mode)}
	}
	ans, err := lp.run(ctx, rs)
	if err != nil {
		return [2]*msg.Slab{}, &BatchError{Count: n, Spent: b0.Mode != msg.Derived, Err: err}
	}
	return lp.slabs(ans, rs, b0.Profile, p, b0.Group, b0.Mode, n)
}

// DerivedSlab is DerivedKeys as slabs: n ≤ msg.MaxBulk keys of shape p
// whose α (and β when deriveBeta; otherwise β is the public beta) are
// drawn inside both modules; slabs[b] is party b's (its keys, and its
// shares of each α and β in AlphaShares and BetaShares). The slabs pair
// (their pair tags were compared). The caller owns both and wipes them
// (Slab.Wipe, or Release).
func (lp *LocalPair) DerivedSlab(ctx context.Context, p fss.Params, n int, beta uint64, deriveBeta bool) ([2]*msg.Slab, error) {
	b := &msg.Bulk{Mode: msg.Derived, Type: p.Type, InBits: p.InBits, OutBits: p.OutBits, N: n, DeriveBeta: deriveBeta, Beta: beta}
	return lp.GenerateSlabs(ctx, 0, [2]*msg.Bulk{b, b})
}

// BoundSlab is BoundKeys as slabs: given both parties' additive shares of
// each α (mod 2^ℓ) and β (mod 2^n), at most msg.MaxBulk, it returns each
// party's slab of key shares, slabs[b] for party b, key i at
// slabs[b].Key(i). The slabs pair (their pair tags were compared). The
// caller owns both and wipes them (Slab.Wipe, or Release). Errors are as
// for Generate, covering the whole call: a *BatchError, Spent when the α
// may not be used again.
func (lp *LocalPair) BoundSlab(ctx context.Context, tier msg.Tier, p fss.Params, alphaShares, betaShares [2][]uint64) ([2]*msg.Slab, error) {
	n := len(alphaShares[0])
	if len(alphaShares[1]) != n || len(betaShares[0]) != n || len(betaShares[1]) != n {
		return [2]*msg.Slab{}, errors.New("host: BoundSlab needs the same number of α and β shares from both parties")
	}
	var b [2]*msg.Bulk
	for x := range 2 {
		b[x] = &msg.Bulk{Mode: msg.Bound, Type: p.Type, InBits: p.InBits, OutBits: p.OutBits, N: n,
			AlphaShares: alphaShares[x], BetaShares: betaShares[x]}
	}
	return lp.GenerateSlabs(ctx, tier, b)
}
