package service

import (
	"context"
	"sync"
)

// streamOrder is the capacity of an application stream's order channel:
// the requests read and not yet sent back wait there (their keys are
// bounded by Config.MaxStreamKeys).
const streamOrder = 4096

// window is a counting bound that callers wait on: acquire takes n units
// when they fit under max (or when none are held, so that one request
// larger than max still passes alone), release gives them back.
type window struct {
	mu    sync.Mutex
	held  int
	max   int
	freed chan struct{} // closed and replaced by release
}

func newWindow(max int) *window { return &window{max: max, freed: make(chan struct{})} }

// acquire waits until n units fit, or until ctx ends (its error).
func (w *window) acquire(ctx context.Context, n int) error {
	for {
		w.mu.Lock()
		if w.held == 0 || w.held+n <= w.max {
			w.held += n
			w.mu.Unlock()
			return nil
		}
		freed := w.freed
		w.mu.Unlock()
		select {
		case <-freed:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// release gives back n units and wakes the waiters.
func (w *window) release(n int) {
	if n == 0 {
		return
	}
	w.mu.Lock()
	w.held -= n
	close(w.freed)
	w.freed = make(chan struct{})
	w.mu.Unlock()
}
