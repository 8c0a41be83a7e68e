// Package both runs one function for each of the two parties at once —
// the shape of every two-party step kord plays in one process (a pair of
// Gens, a party's request at each site, a dealer's two encodings) — and
// waits for the two.
package both

import (
	"context"
	"errors"
	"sync"
)

// Run calls fn(ctx, 0) and fn(ctx, 1) at once and waits for both. When one
// fails, the context the other was given is cancelled: in a two-party
// step the other is usually waiting for a message that will never come.
// It returns the two errors joined (nil when both succeeded).
func Run(ctx context.Context, fn func(ctx context.Context, b int) error) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	return Each(func(b int) error {
		err := fn(ctx, b)
		if err != nil {
			cancel()
		}
		return err
	})
}

// Each calls fn(0) and fn(1) at once and waits for both, for two
// independent pieces of work (one per party); it returns the two errors
// joined.
func Each(fn func(b int) error) error {
	var errs [2]error
	var wg sync.WaitGroup
	for b := range 2 {
		wg.Go(func() { errs[b] = fn(b) })
	}
	wg.Wait()
	return errors.Join(errs[0], errs[1])
}

// Pair is Each for work that yields a value per party: it calls fn(0) and
// fn(1) at once and returns the two values (each as fn returned it, error
// or not) and the two errors joined.
func Pair[T any](fn func(b int) (T, error)) ([2]T, error) {
	var out [2]T
	err := Each(func(b int) error {
		var err error
		out[b], err = fn(b)
		return err
	})
	return out, err
}
