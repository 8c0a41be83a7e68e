package both

import (
	"context"
	"errors"
	"testing"
)

// TestRunCancelsTheOther: a failing party cancels the context the other
// waits on, and both errors come back.
func TestRunCancelsTheOther(t *testing.T) {
	boom := errors.New("boom")
	err := Run(context.Background(), func(ctx context.Context, b int) error {
		if b == 0 {
			return boom
		}
		<-ctx.Done() // would wait forever without the cancel
		return ctx.Err()
	})
	if !errors.Is(err, boom) || !errors.Is(err, context.Canceled) {
		t.Fatalf("got %v, want both boom and context.Canceled", err)
	}
}

// TestEachRunsBoth: both parties run, at once (each waits for the other),
// and success is nil.
func TestEachRunsBoth(t *testing.T) {
	var ready [2]chan struct{}
	for b := range ready {
		ready[b] = make(chan struct{})
	}
	err := Each(func(b int) error {
		close(ready[b])
		<-ready[1-b]
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestPairKeepsValuesAndErrors: each party's value lands at its index,
// also the failing party's, and the error is that party's.
func TestPairKeepsValuesAndErrors(t *testing.T) {
	boom := errors.New("boom")
	out, err := Pair(func(b int) (int, error) {
		if b == 1 {
			return 11, boom
		}
		return 10, nil
	})
	if out != [2]int{10, 11} || !errors.Is(err, boom) {
		t.Fatalf("got %v, %v; want [10 11] and boom", out, err)
	}
	if _, err := Pair(func(int) (int, error) { return 0, nil }); err != nil {
		t.Fatal(err)
	}
}
