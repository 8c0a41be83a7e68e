package service

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/kord-fss/kord/client"
	"github.com/kord-fss/kord/fss"
)

func TestWindow(t *testing.T) {
	w := newWindow(10)
	ctx := context.Background()
	if err := w.acquire(ctx, 25); err != nil { // alone, a request larger than the bound passes
		t.Fatal(err)
	}
	short, cancel := context.WithTimeout(ctx, 20*time.Millisecond)
	defer cancel()
	if err := w.acquire(short, 1); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("acquire over a full window: %v, want the context's deadline", err)
	}
	got := make(chan error, 1)
	go func() { got <- w.acquire(ctx, 10) }()
	select {
	case err := <-got:
		t.Fatalf("acquire returned (%v) before anything was released", err)
	case <-time.After(20 * time.Millisecond):
	}
	w.release(25)
	if err := <-got; err != nil {
		t.Fatal(err)
	}
	if w.held != 10 {
		t.Fatalf("held %d, want 10", w.held)
	}
}

// An application that sends requests without reading its replies: the
// party answers no more than its stream bound (plus what gRPC's flow
// control lets through) and then stops reading, instead of piling up every
// answer; once the application reads, every pair arrives and evaluates.
func TestStreamHeldKeysBounded(t *testing.T) {
	s := pairOfSites(t, Config{Batch: 16, InFlight: 2, MaxStreamKeys: 64, MatchTimeout: 20 * time.Second})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	p := fss.Params{Type: fss.DCF, InBits: 64, OutBits: 64} // about 1.6 KB per key
	const n = 4000
	ws, reqs := boundRequests(p, 1, n, "otp")
	var st [2]*client.Stream
	var wg sync.WaitGroup
	for b := 0; b < 2; b++ {
		var err error
		if st[b], err = s[b].app.Stream(ctx); err != nil {
			t.Fatal(err)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < n; i += 100 {
				if err := st[b].SendBatch(reqs[b][i : i+100]); err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	// Wait until the parties stop answering.
	var delivered uint64
	for still := 0; still < 5; {
		time.Sleep(100 * time.Millisecond)
		st0, err := s[0].app.Status(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if st0.KeysDelivered == delivered {
			still++
		} else {
			delivered, still = st0.KeysDelivered, 0
		}
	}
	if delivered > n/2 {
		t.Fatalf("party 0 answered %d of %d requests nobody read; the stream bound is 64 keys", delivered, n)
	}
	t.Logf("answered %d of %d before the application read", delivered, n)
	checkBoundReplies(t, recvBoth(t, st, n), 1, ws)
	wg.Wait()
}
