package twopc

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"

	"github.com/kord-fss/kord/fss"
	"github.com/kord-fss/kord/internal/netshape"
)

// Pair is both parties' sessions in one process, joined by a loopback TCP
// connection shaped by a netshape profile (each party writes through its
// own shaped end). Benchmarks and tests use it; the protocol code is the
// same as between two machines.
type Pair struct {
	S    [2]*Session
	Link netshape.Profile
}

// NewPair connects two sessions over link and runs their setup.
func NewPair(ctx context.Context, link netshape.Profile, rnd [2]io.Reader) (*Pair, error) {
	a, b, err := netshape.TCPPair(link)
	if err != nil {
		return nil, err
	}
	conns := [2]net.Conn{a, b}
	pr := &Pair{Link: link}
	var errs [2]error
	var wg sync.WaitGroup
	for i := range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			pr.S[i], errs[i] = NewSession(ctx, i, conns[i], rnd[i])
		}()
	}
	wg.Wait()
	if err := errors.Join(errs[:]...); err != nil {
		a.Close()
		b.Close()
		return nil, err
	}
	return pr, nil
}

// Close closes both ends.
func (pr *Pair) Close() error {
	return errors.Join(pr.S[0].Close(), pr.S[1].Close())
}

// Gen runs both parties' Gen at once on their shares and returns both
// keys and each party's cost.
func (pr *Pair) Gen(ctx context.Context, p fss.Params, alphaShares, betaShares [2]uint64) (keys [2]*fss.Key, cost [2]Counters, err error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var errs [2]error
	var wg sync.WaitGroup
	for i := range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			keys[i], cost[i], errs[i] = pr.S[i].Gen(ctx, p, alphaShares[i], betaShares[i])
			if errs[i] != nil {
				cancel() // the peer would wait for frames that never come
			}
		}()
	}
	wg.Wait()
	if err := errors.Join(errs[:]...); err != nil {
		return keys, cost, fmt.Errorf("twopc: pair Gen: %w", err)
	}
	return keys, cost, nil
}

// GenBatch runs both parties' GenBatch at once: keys[b][i] is party b's
// share of key i.
func (pr *Pair) GenBatch(ctx context.Context, p fss.Params, alphaShares, betaShares [2][]uint64) (keys [2][]*fss.Key, cost [2]Counters, err error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var errs [2]error
	var wg sync.WaitGroup
	for i := range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			keys[i], cost[i], errs[i] = pr.S[i].GenBatch(ctx, p, alphaShares[i], betaShares[i])
			if errs[i] != nil {
				cancel()
			}
		}()
	}
	wg.Wait()
	if err := errors.Join(errs[:]...); err != nil {
		return keys, cost, fmt.Errorf("twopc: pair GenBatch: %w", err)
	}
	return keys, cost, nil
}
