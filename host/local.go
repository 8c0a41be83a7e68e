package host

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"log/slog"
	"sync"

	"github.com/kord-fss/kord/fss"
	"github.com/kord-fss/kord/module"
	"github.com/kord-fss/kord/module/msg"
)

// LocalPair is a freshly paired pair of software modules with their two
// hosts and an in-process link, all in one process. It is the in-process
// dealerless key source: applications and gate code that play both parties
// in one process (tests, benchmarks, simulations) obtain kord keys from it
// with no dealer — each key share comes out of its own party's module.
type LocalPair struct {
	Devices [2]module.Device
	Hosts   [2]*Host
	Links   [2]*PipeEnd
}

// LocalOptions configure NewLocalPair.
type LocalOptions struct {
	// KEM is the pairing KEM ("" = mlkem768); see module.KEMs.
	KEM string
	// InFlight is the batch size M (0 = DefaultInFlight).
	InFlight int
	// Logger receives operational logs; nil discards.
	Logger *slog.Logger
	// Workers is the number of goroutines each module's batch Gen runs
	// on; 0 means GOMAXPROCS. The two modules generate at the same time,
	// so with all cores each, whichever finishes its share of a batch
	// first leaves the cores to the other (measured faster on 2 cores
	// than one worker each).
	Workers int
}

// NewLocalPair builds two software modules under a fresh random
// provisioning secret, pairs them through their hosts and links the hosts.
func NewLocalPair(ctx context.Context, o LocalOptions) (*LocalPair, error) {
	secret := make([]byte, 32)
	if _, err := rand.Read(secret); err != nil {
		return nil, fmt.Errorf("host: provisioning secret: %w", err)
	}
	defer clear(secret)
	lp := &LocalPair{}
	workers := o.Workers
	for b := 0; b < 2; b++ {
		d, err := module.NewSoftware(module.Config{Party: b, Secret: secret, KEM: o.KEM, Logger: o.Logger, Workers: workers})
		if err != nil {
			return nil, err
		}
		lp.Devices[b] = d
	}
	if err := module.Pair(ctx, lp.Devices[0], lp.Devices[1]); err != nil {
		return nil, err
	}
	buf := max(o.InFlight, DefaultInFlight) + 16
	lp.Links[0], lp.Links[1] = Pipe(buf)
	for b := 0; b < 2; b++ {
		lp.Hosts[b] = New(lp.Devices[b], lp.Links[b], o.InFlight, o.Logger)
	}
	return lp, nil
}

// Close closes the link.
func (lp *LocalPair) Close() { lp.Links[0].Close() }

// Generate runs both hosts at once on their parties' requests (the two
// lists must match in modes, types and widths) and returns each party's
// results, once it has checked that every pair of outputs pairs (equal
// pair tags). On an error it returns the results before the first failed
// batch and a *BatchError covering the rest that were submitted: Spent if
// either module opened a peer frame of it, or if the outputs did not pair
// (ErrTampered; both modules then abandon the batch with Mismatch set and
// count it). Nothing is retried: after a spent error the caller must
// choose a fresh α for those requests (AlphaReusable).
func (lp *LocalPair) Generate(ctx context.Context, tier msg.Tier, reqs [2][]Request) ([2][]Result, error) {
	var out [2][]Result
	if len(reqs[0]) != len(reqs[1]) {
		return out, errors.New("host: both parties must make the same number of requests")
	}
	// If one host fails before its peer's frames arrive (a request its
	// module refuses, a rejected frame), the other would wait for frames
	// that never come: the first failure cancels both.
	gctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var errs [2]error
	var wg sync.WaitGroup
	for b := 0; b < 2; b++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			out[b], errs[b] = lp.Hosts[b].Generate(gctx, tier, reqs[b])
			if errs[b] != nil {
				cancel()
			}
		}()
	}
	wg.Wait()
	if errs[0] != nil || errs[1] != nil {
		// Both hosts have returned, so nothing is in flight: frames left in
		// the pipe belong to the failed round and must not meet the next.
		lp.Links[0].drain()
		lp.Links[1].drain()
		// One error for the pair: from the first failed batch of either
		// host to the end of the furthest, spent if either side's was.
		be := &BatchError{Start: len(reqs[0]), Err: errors.Join(errs[0], errs[1])}
		end := 0
		for b := 0; b < 2; b++ {
			var e *BatchError
			if !errors.As(errs[b], &e) {
				be.Start, end, be.Spent = 0, len(reqs[0]), true // unknown: spend it all
				continue
			}
			be.Start, end, be.Spent = min(be.Start, e.Start), max(end, e.Start+e.Count), be.Spent || e.Spent
		}
		be.Count = end - be.Start
		for b := 0; b < 2; b++ {
			// A host that finished a batch the other failed opened its
			// frames: those requests are spent too.
			for _, r := range out[b][min(be.Start, len(out[b])):] {
				be.Spent = be.Spent || r.Mode != msg.Derived
			}
			out[b] = truncate(out[b], be.Start)
		}
		return out, be
	}
	// The pair tags: a pair that does not pair is never handed out.
	for i := range out[0] {
		if out[0][i].PairTag != out[1][i].PairTag {
			m := lp.Hosts[0].inFlight
			start := i / m * m
			var last [2]uint64
			for b := 0; b < 2; b++ {
				for _, r := range out[b][start:] {
					last[b] = max(last[b], r.Counter)
				}
				lp.Hosts[b].abandon(ctx, last[b], true, out[b][start:])
				out[b] = out[b][:start]
			}
			lp.Hosts[0].log.Warn("pair tags disagree: a frame was altered or the requests differ; the batch is spent",
				"first_request", start, "last_counter", last[0])
			return out, &BatchError{Start: start, Count: len(reqs[0]) - start, Spent: true,
				Err: fmt.Errorf("%w (request %d)", ErrTampered, i)}
		}
	}
	return out, nil
}

// truncate wipes the results from n on and returns the first n.
func truncate(rs []Result, n int) []Result {
	if len(rs) <= n {
		return rs
	}
	for _, r := range rs[n:] {
		if r.Key != nil {
			r.Key.Wipe()
		}
		clear(r.Raw)
		clear(r.Evals)
	}
	return rs[:n]
}

// BoundKeys is the dealerless key API for bound keys: given both parties'
// additive shares of each α (mod 2^ℓ) and β (mod 2^n), it returns each
// party's key share, keys[b][i] for party b and request i. Neither host
// nor this function ever forms α or β; only the modules do.
func (lp *LocalPair) BoundKeys(ctx context.Context, tier msg.Tier, p fss.Params, alphaShares, betaShares [2][]uint64) (keys [2][]*fss.Key, err error) {
	n := len(alphaShares[0])
	if len(alphaShares[1]) != n || len(betaShares[0]) != n || len(betaShares[1]) != n {
		return keys, errors.New("host: BoundKeys needs the same number of α and β shares from both parties")
	}
	var reqs [2][]Request
	for b := 0; b < 2; b++ {
		reqs[b] = make([]Request, n)
		for i := 0; i < n; i++ {
			reqs[b][i] = Request{Share: msg.Share{Mode: msg.Bound, Type: p.Type, InBits: p.InBits, OutBits: p.OutBits,
				AlphaShare: alphaShares[b][i], BetaShare: betaShares[b][i]}}
		}
	}
	res, err := lp.Generate(ctx, tier, reqs)
	if err != nil {
		return keys, err
	}
	for b := 0; b < 2; b++ {
		keys[b] = make([]*fss.Key, n)
		for i, r := range res[b] {
			keys[b][i] = r.Key
		}
	}
	return keys, nil
}

// MaskedKey is one party's output of DerivedKeys: its key share and its
// additive shares of the random α (and β) the modules drew.
type MaskedKey struct {
	Key                   *fss.Key
	AlphaShare, BetaShare uint64
}

// DerivedKeys is the dealerless key API for random-mask keys: it returns
// count keys whose α is drawn inside both modules (β too when deriveBeta;
// otherwise β is the public value beta), with each party's key share and
// its additive shares of α and β. No bytes cross between the hosts.
func (lp *LocalPair) DerivedKeys(ctx context.Context, p fss.Params, count int, beta uint64, deriveBeta bool) (out [2][]MaskedKey, err error) {
	var reqs [2][]Request
	for b := 0; b < 2; b++ {
		reqs[b] = make([]Request, count)
		for i := range reqs[b] {
			reqs[b][i] = Request{Share: msg.Share{Mode: msg.Derived, Type: p.Type, InBits: p.InBits, OutBits: p.OutBits,
				DeriveBeta: deriveBeta, Beta: beta}}
		}
	}
	res, err := lp.Generate(ctx, msg.MAC, reqs)
	if err != nil {
		return out, err
	}
	for b := 0; b < 2; b++ {
		out[b] = make([]MaskedKey, count)
		for i, r := range res[b] {
			out[b][i] = MaskedKey{Key: r.Key, AlphaShare: r.AlphaShare, BetaShare: r.BetaShare}
		}
	}
	return out, nil
}
