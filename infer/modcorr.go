package infer

import (
	"context"
	"errors"
	"fmt"
	"sync"

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

// inputCorr is the shape of an input correlation of layer l against
// weight mask w (msg.CorrInput).
func inputCorr(w *WeightMask, l *Layer, in Shape, ring int) (msg.Correlation, error) {
	if w == nil {
		return msg.Correlation{}, errors.New("infer: an input correlation needs its weight mask")
	}
	c, err := corrShape(l, in, ring)
	if err != nil {
		return msg.Correlation{}, err
	}
	c.Part, c.WeightFrom = msg.CorrInput, w.Handle
	return c, nil
}

// request runs one correlation request through both parties of the pair
// (host.LocalPair.Correlation: the session protocol the daemons run) and
// returns both parties' shares, checked to pair.
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
	sh, err := s.Pair.Correlation(ctx, c)
	if err != nil {
		return sh, fmt.Errorf("infer: %w", err)
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
	c, err := inputCorr(w, l, in, ring)
	if err != nil {
		return out, err
	}
	sh, err := s.request(c)
	if err != nil {
		return out, err
	}
	for b := 0; b < 2; b++ {
		out[b] = &LinearCorr{R: sh[b].R, Z: sh[b].Z}
	}
	return out, nil
}
