// Collection and abandon: each output handed to its host once, and counters
// given up (a skipped batch, a mismatch) wiped.

package engine

import (
	"context"
	"fmt"

	"github.com/kord-fss/kord/internal/prg"
	"github.com/kord-fss/kord/module/msg"
)

// abandon drops pending slots and uncollected outputs up to counter and
// wipes their shares and keys. mismatch (the host saw the pair tags
// disagree) is counted under RejectPairMismatch and logged.
func (e *Engine) abandon(counter uint64, mismatch bool) (*msg.SubmitResponse, error) {
	if mismatch {
		e.rejects[RejectPairMismatch]++
		e.log.Warn("pair tags disagreed: outputs abandoned, their shares spent", "party", e.party, "through_counter", counter,
			"pair_mismatches", e.rejects[RejectPairMismatch])
	}
	keep := e.slots[:0]
	dropped := 0
	for _, s := range e.slots {
		if s.first() <= counter {
			s.wipe()
			dropped += s.size()
			continue
		}
		keep = append(keep, s)
	}
	clear(e.slots[len(keep):])
	e.slots = keep
	for c, o := range e.ready {
		if c <= counter {
			if o.raw == nil {
				e.pending--
			}
			o.wipe()
			delete(e.ready, c)
			dropped++
		}
	}
	if e.pending == 0 { // the queue holds only dropped outputs
		clear(e.queue)
		e.queue = e.queue[:0]
	}
	dropped += e.dropSlabs(counter)
	dropped += e.dropCorrs(counter)
	return &msg.SubmitResponse{Count: dropped}, nil
}

// Collect hands out this party's output at a counter, once, and wipes it;
// a range collect (Count > 0) hands out a bulk's slab, which the caller
// then owns.
func (e *Engine) Collect(_ context.Context, req *msg.CollectRequest) (*msg.CollectResponse, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if req.Corr {
		return e.collectCorr(req)
	}
	if req.Count != 0 {
		if req.Count < 0 {
			return nil, bad("Count: %d is negative", req.Count)
		}
		sl, rq, err := e.collectSlab(req.Counter, req.Count, req.Points, req.Expect, req.ExpectAt)
		if err != nil {
			return nil, err
		}
		rq.wipe() // no re-collect window
		return &msg.CollectResponse{Counter: sl.First, Mode: sl.Mode, Slab: sl}, nil
	}
	resp, err := e.collectLocked(req.Counter, req.Points, nil)
	if err != nil {
		return nil, err
	}
	return &resp, nil
}

// collectLocked is Collect under e.mu; the key is appended to keyBuf.
func (e *Engine) collectLocked(counter uint64, points []uint64, keyBuf []byte) (msg.CollectResponse, error) {
	o, ok := e.ready[counter]
	if !ok {
		return msg.CollectResponse{}, bad("Counter: no output ready at counter %d", counter)
	}
	if o.raw == nil {
		if err := e.materialize(); err != nil {
			return msg.CollectResponse{}, err
		}
	}
	resp := msg.CollectResponse{Counter: counter, Mode: o.mode, PairTag: o.tag}
	if o.mode == msg.Consume {
		if len(points) == 0 || len(points) > MaxPoints {
			return msg.CollectResponse{}, bad("Points: %d points, want 1..%d in consume mode", len(points), MaxPoints)
		}
		mask := prg.Mask(o.params.InBits)
		for i, x := range points {
			if x&^mask != 0 {
				return msg.CollectResponse{}, bad("Points[%d]: does not fit in %d input bits", i, o.params.InBits)
			}
		}
		evals, err := e.evalKey(o, points)
		if err != nil {
			return msg.CollectResponse{}, fmt.Errorf("module: counter %d: %w", counter, err)
		}
		resp.Evals = evals
	} else {
		if len(points) != 0 {
			return msg.CollectResponse{}, bad("Points: only for consume mode (counter %d is %v)", counter, o.mode)
		}
		resp.Key = append(keyBuf, o.raw...)
		resp.AlphaShare, resp.BetaShare = o.alphaShare, o.betaShare
	}
	o.wipe()
	delete(e.ready, counter)
	return resp, nil
}
