package inferdemo

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// The prefetcher hands results over in order, never has more than window
// alive (drawn and not released), and wipes what was drawn and not taken.
func TestPrefetchOrderAndBound(t *testing.T) {
	for _, window := range []int{1, 2, 3, 5} {
		var live, most atomic.Int64
		var mu sync.Mutex
		wiped := map[int]bool{}
		gen := func(i int) (int, error) {
			n := live.Add(1)
			for {
				m := most.Load()
				if n <= m || most.CompareAndSwap(m, n) {
					break
				}
			}
			time.Sleep(50 * time.Microsecond)
			return i, nil
		}
		const n = 40
		pf := startPrefetch(context.Background(), n, window, gen, func(v int) {
			mu.Lock()
			wiped[v] = true
			mu.Unlock()
			live.Add(-1)
		})
		for i := 0; i < n/2; i++ {
			v, _, _, err := pf.next(context.Background())
			if err != nil || v != i {
				t.Fatalf("window %d: result %d is %d (%v)", window, i, v, err)
			}
			// "evaluating": with a window of 2 or more the next one is
			// drawn meanwhile (waited for, so that a loaded machine does
			// not make the check below fail)
			for deadline := time.Now().Add(10 * time.Second); window > 1 && i < n-1 && live.Load() < 2 && time.Now().Before(deadline); {
				time.Sleep(50 * time.Microsecond)
			}
			live.Add(-1) // wiped by the consumer
			pf.release()
		}
		pf.stop()
		if most.Load() > int64(window) {
			t.Fatalf("window %d: %d results alive at once", window, most.Load())
		}
		if window > 1 && most.Load() < 2 {
			t.Fatalf("window %d: the drawing never ran ahead", window)
		}
		if live.Load() != 0 {
			t.Fatalf("window %d: %d results drawn and neither taken nor wiped", window, live.Load())
		}
		for v := range wiped {
			if v < n/2 {
				t.Fatalf("window %d: result %d was taken and wiped by stop too", window, v)
			}
		}
	}
}

// A drawing error comes out in order, after the results before it, and
// nothing is drawn after it.
func TestPrefetchError(t *testing.T) {
	bad := errors.New("daemon gone")
	var calls atomic.Int64
	pf := startPrefetch(context.Background(), 10, 4, func(i int) (int, error) {
		calls.Add(1)
		if i == 2 {
			return 0, bad
		}
		return i, nil
	}, nil)
	defer pf.stop()
	for i := 0; i < 2; i++ {
		if v, _, _, err := pf.next(context.Background()); err != nil || v != i {
			t.Fatalf("result %d: %d, %v", i, v, err)
		}
		pf.release()
	}
	if _, _, _, err := pf.next(context.Background()); !errors.Is(err, bad) {
		t.Fatalf("third result: %v, want the drawing's error", err)
	}
	if _, _, _, err := pf.next(context.Background()); !errors.Is(err, errSupplyEnded) {
		t.Fatalf("after the error: %v, want the end of the supply", err)
	}
	if calls.Load() != 3 {
		t.Fatalf("%d draws, want 3 (none after the error)", calls.Load())
	}
}

// A consumer that stops early ends a drawing blocked on the window.
func TestPrefetchStopEarly(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	pf := startPrefetch(ctx, 1000, 2, func(i int) (int, error) { return i, nil }, nil)
	if _, _, _, err := pf.next(ctx); err != nil {
		t.Fatal(err)
	}
	cancel()
	done := make(chan struct{})
	go func() { pf.stop(); close(done) }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("stop did not return")
	}
	if _, _, _, err := pf.next(context.Background()); err == nil {
		t.Fatal("a result after stop")
	}
}
