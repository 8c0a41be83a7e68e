package infer

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/kord-fss/kord/fss"
	"github.com/kord-fss/kord/host"
	"github.com/kord-fss/kord/module/msg"
)

// ModuleCorr is kord's dealerless CorrSource: each linear layer's weight
// mask (once per session, msg.CorrWeight) and input correlation (per
// evaluation, msg.CorrInput) is a derived-correlation request
// (msg.SubmitCorrelation) to both key-generation modules of a pair. Both
// draw the same masks from their shared root PRF at the same counters and
// compute the product themselves; each hands out only its own party's
// shares. No byte crosses
// between the sites and no process outside the two modules ever holds A,
// R or Z.
//
// The two modules must see the same sequence of requests: ModuleCorr
// serialises its own calls, and the caller must not issue key requests on
// the same pair concurrently with a Linear call (infer.Gen is sequential).
type ModuleCorr struct {
	Pair *host.LocalPair
	// Ctx bounds every request; nil means context.Background().
	Ctx context.Context
	mu  sync.Mutex
	// settled: one key has gone through the pair's parties (settle).
	settled bool
}

// settle asks the pair's parties for one derived key (wiped at once)
// before the first direct module request. Where host.LocalPair runs the
// parties' session protocol (main after the proto1 merge), the parties
// open their session with the modules in the background after pairing,
// and a correlation submitted before that is dropped by it ("no
// correlation ready at counter 0"); once one key has gone through the
// parties, direct use beside them is mended by a resync and keeps what
// it collected. With the older host it is one wasted key.
func (s *ModuleCorr) settle(ctx context.Context) error {
	if s.settled {
		return nil
	}
	out, err := s.Pair.DerivedKeys(ctx, fss.Params{Type: fss.DPF, InBits: 8, OutBits: 8}, 1, 1, false)
	if err != nil {
		return fmt.Errorf("infer: settling the module pair's parties: %w", err)
	}
	for b := range out {
		for _, k := range out[b] {
			if k.Key != nil {
				k.Key.Wipe()
			}
		}
	}
	s.settled = true
	return nil
}

// corrShape maps a linear layer to the module's correlation shape.
func corrShape(l *Layer, in Shape, ring int) (msg.Correlation, error) {
	switch l.Kind {
	case FC:
		return msg.Correlation{Kind: msg.CorrMatVec, Ring: ring, In: l.In, Out: l.Out}, nil
	case Conv:
		return msg.Correlation{Kind: msg.CorrConv2D, Ring: ring, In: l.In, Out: l.Out, K: l.K, H: in.H, W: in.W}, nil
	}
	return msg.Correlation{}, fmt.Errorf("infer: layer %v has no multiplication", l.Kind)
}

// request runs one correlation request on both modules and returns both
// parties' shares, checked to pair.
func (s *ModuleCorr) request(c msg.Correlation) ([2]*msg.CorrShares, error) {
	var sh [2]*msg.CorrShares
	if s.Pair == nil {
		return sh, errors.New("infer: ModuleCorr has no module pair")
	}
	ctx := s.Ctx
	if ctx == nil {
		ctx = context.Background()
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.settle(ctx); err != nil {
		return sh, err
	}
	var first [2]uint64
	for b := 0; b < 2; b++ {
		r, err := s.Pair.Devices[b].Submit(ctx, &msg.SubmitRequest{Kind: msg.SubmitCorrelation, Corr: &c})
		if err != nil {
			return sh, fmt.Errorf("infer: module %d: correlation: %w", b, err)
		}
		first[b] = r.FirstCounter
	}
	for b := 0; b < 2; b++ {
		cr, err := s.Pair.Devices[b].Collect(ctx, &msg.CollectRequest{Counter: first[b], Corr: true})
		if err != nil {
			sh[0].Wipe()
			return [2]*msg.CorrShares{}, fmt.Errorf("infer: module %d: collecting the correlation: %w", b, err)
		}
		sh[b] = cr.Corr
	}
	if sh[0] == nil || sh[1] == nil || first[0] != first[1] || sh[0].PairTag != sh[1].PairTag {
		sh[0].Wipe()
		sh[1].Wipe()
		return [2]*msg.CorrShares{}, errors.New("infer: the two modules' correlations do not pair (their request sequences differ)")
	}
	return sh, nil
}

// Weights asks both modules for a kept weight mask (msg.CorrWeight).
func (s *ModuleCorr) Weights(l *Layer, in Shape, ring int) (*WeightMask, error) {
	c, err := corrShape(l, in, ring)
	if err != nil {
		return nil, err
	}
	c.Part = msg.CorrWeight
	sh, err := s.request(c)
	if err != nil {
		return nil, err
	}
	return &WeightMask{Handle: sh[0].Counter, A: [2][]uint64{sh[0].A, sh[1].A}}, nil
}

// Input asks both modules for a fresh input mask against weight mask w
// (msg.CorrInput).
func (s *ModuleCorr) Input(w *WeightMask, l *Layer, in Shape, ring int) ([2]*LinearCorr, error) {
	var out [2]*LinearCorr
	if w == nil {
		return out, errors.New("infer: an input correlation needs its weight mask")
	}
	c, err := corrShape(l, in, ring)
	if err != nil {
		return out, err
	}
	c.Part, c.WeightFrom = msg.CorrInput, w.Handle
	sh, err := s.request(c)
	if err != nil {
		return out, err
	}
	for b := 0; b < 2; b++ {
		out[b] = &LinearCorr{R: sh[b].R, Z: sh[b].Z}
	}
	return out, nil
}
