package infer

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/kord-fss/kord/host"
	"github.com/kord-fss/kord/module/msg"
)

// ModuleCorr is kord's dealerless CorrSource: each linear layer's
// correlation is a derived-correlation request (msg.SubmitCorrelation) to
// both key-generation modules of a pair. Both draw the same masks from
// their shared root PRF at the same counters and compute the product
// themselves; each hands out only its own party's shares. No byte crosses
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

// Linear requests one derived correlation for layer l from both modules.
func (s *ModuleCorr) Linear(l *Layer, in Shape, ring int) ([2]*LinearCorr, error) {
	var out [2]*LinearCorr
	if s.Pair == nil {
		return out, errors.New("infer: ModuleCorr has no module pair")
	}
	c, err := corrShape(l, in, ring)
	if err != nil {
		return out, err
	}
	ctx := s.Ctx
	if ctx == nil {
		ctx = context.Background()
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	var sh [2]*msg.CorrShares
	var first [2]uint64
	for b := 0; b < 2; b++ {
		r, err := s.Pair.Devices[b].Submit(ctx, &msg.SubmitRequest{Kind: msg.SubmitCorrelation, Corr: &c})
		if err != nil {
			return out, fmt.Errorf("infer: module %d: correlation: %w", b, err)
		}
		first[b] = r.FirstCounter
	}
	for b := 0; b < 2; b++ {
		cr, err := s.Pair.Devices[b].Collect(ctx, &msg.CollectRequest{Counter: first[b], Corr: true})
		if err != nil {
			sh[0].Wipe()
			return out, fmt.Errorf("infer: module %d: collecting the correlation: %w", b, err)
		}
		sh[b] = cr.Corr
	}
	if sh[0] == nil || sh[1] == nil || first[0] != first[1] || sh[0].PairTag != sh[1].PairTag {
		sh[0].Wipe()
		sh[1].Wipe()
		return out, errors.New("infer: the two modules' correlations do not pair (their request sequences differ)")
	}
	for b := 0; b < 2; b++ {
		out[b] = &LinearCorr{R: sh[b].R, A: sh[b].A, Z: sh[b].Z}
	}
	return out, nil
}
