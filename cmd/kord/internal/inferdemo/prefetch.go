package inferdemo

import (
	"context"
	"time"
)

// prefetcher draws the material of n evaluations (gen(0) … gen(n-1), in
// order, one at a time) in a goroutine of its own, ahead of the online
// phase that takes it with next. At most window results are alive at once:
// the one being drawn, those waiting, and those taken but not yet given
// back with release. So the memory bound is window evaluations' material,
// whatever n is; with window 2 the next evaluation is drawn while the
// current one is evaluated.
//
// A gen error ends the drawing: next returns it in order, after the
// results drawn before it. stop ends the goroutine and wipes what was
// drawn and not taken.
type prefetcher[T any] struct {
	ch     chan prefetched[T]
	tokens chan struct{} // one per live result
	cancel context.CancelFunc
	done   chan struct{}
	wipe   func(T)
}

type prefetched[T any] struct {
	v   T
	gen time.Duration // how long gen took
	err error
}

// startPrefetch starts drawing; window < 1 counts as 1 (no overlap).
func startPrefetch[T any](ctx context.Context, n, window int, gen func(i int) (T, error), wipe func(T)) *prefetcher[T] {
	window = max(window, 1)
	ctx, cancel := context.WithCancel(ctx)
	p := &prefetcher[T]{ch: make(chan prefetched[T], window), tokens: make(chan struct{}, window),
		cancel: cancel, done: make(chan struct{}), wipe: wipe}
	go func() {
		defer close(p.done)
		defer close(p.ch)
		for i := 0; i < n; i++ {
			select {
			case p.tokens <- struct{}{}:
			case <-ctx.Done():
				return
			}
			t0 := time.Now()
			v, err := gen(i)
			// never blocks: a token is held for every result in ch
			p.ch <- prefetched[T]{v: v, gen: time.Since(t0), err: err}
			if err != nil {
				return
			}
		}
	}()
	return p
}

// next returns the next evaluation's material, the time its drawing took
// and the time this call waited for it. After the n-th, or once drawing
// stopped, it returns ctx's error or errSupplyEnded.
func (p *prefetcher[T]) next(ctx context.Context) (v T, gen, wait time.Duration, err error) {
	t0 := time.Now()
	select {
	case r, ok := <-p.ch:
		wait = time.Since(t0)
		if !ok {
			return v, 0, wait, errSupplyEnded
		}
		return r.v, r.gen, wait, r.err
	case <-ctx.Done():
		return v, 0, time.Since(t0), ctx.Err()
	}
}

// release gives back the slot of a taken result (after it was wiped), so
// that one more can be drawn.
func (p *prefetcher[T]) release() {
	select {
	case <-p.tokens:
	default:
	}
}

// stop ends the drawing (a gen under way is waited for) and wipes every
// result drawn and not taken.
func (p *prefetcher[T]) stop() {
	p.cancel()
	<-p.done
	for r := range p.ch {
		if r.err == nil && p.wipe != nil {
			p.wipe(r.v)
		}
	}
}

type supplyEndedError struct{}

func (supplyEndedError) Error() string { return "infer: key supply ended early" }

var errSupplyEnded error = supplyEndedError{}
