// Package host is one party's host: it hands its party's own shares to its
// module, swaps the one frame per key (or per batch) with the peer host
// over a Link, forwards the peer's frame to its module and collects its own
// key share. It batches submissions and keeps up to M keys in flight.
//
// A host holds only opaque frames, its own party's shares and its own key
// shares; it never sees α, β, a root seed or the peer's key, and it cannot
// import the module's internals — it talks to a module.Device.
//
// Spent shares (the rule of package service, issue 18): once a module has
// opened a peer frame of a batch, it has rebuilt (α, β) and computed the
// pair tag, and whether the two parties' keys pair is an outcome that may
// depend on α (on the keystream tier an attacker on the link can make it
// reveal one bit). A host never submits a batch twice: a failed batch is
// returned as a *BatchError whose Spent says whether its requests' α may
// be used again (AlphaReusable); after a spent one the caller must choose a
// fresh α, not a new sharing of it. Generate's results carry each output's
// PairTag, which the caller compares with the peer's before using a key
// (LocalPair does, and fails the batch with ErrTampered, spent, when they
// differ).
package host

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync/atomic"

	"github.com/kord-fss/kord/fss"
	"github.com/kord-fss/kord/module"
	"github.com/kord-fss/kord/module/msg"
)

// DefaultInFlight is the default number of keys per submission batch.
const DefaultInFlight = 64

// Request is one key request of this party: its shares (msg.Share) and,
// in consume mode, the public points to evaluate at.
type Request struct {
	msg.Share
	Points []uint64
}

// Result is this party's output for one request.
type Result struct {
	Counter uint64
	Mode    msg.Mode
	// Key is this party's kord-v1 key share (bound, derived).
	Key *fss.Key
	// Raw is this party's key share when the request's profile is not
	// kord-v1 (bound, derived): for msg.Llama, the bytes LLAMA's
	// serializer writes for this party (fss/llama parses them). Key is
	// then nil.
	Raw []byte
	// AlphaShare, BetaShare: this party's shares of the drawn mask (derived).
	AlphaShare, BetaShare uint64
	// Evals are this party's evaluation shares at the points (consume).
	Evals []uint64
	// PairTag equals the peer's output's tag exactly when the two are the
	// shares of one key pair (msg.CollectResponse.PairTag).
	PairTag [msg.PairTagSize]byte
}

// ErrRejected is returned when the module rejected a peer frame; the
// host abandons the rest of the batch.
var ErrRejected = errors.New("host: peer frame rejected by the module")

// ErrTampered is returned (by LocalPair) when the two modules' outputs do
// not pair: a frame was altered in transit, or the parties' requests
// differed. The batch is spent.
var ErrTampered = errors.New("host: the two modules' keys do not pair (a frame was altered, or the requests differ)")

// BatchError is a failed batch of Generate: requests Start … Start+Count-1
// of the call (those before it were answered, those after never reached
// the module).
type BatchError struct {
	Start, Count int
	// Spent: a module had opened (or may have opened) a peer frame of the
	// batch, so the α of its requests must not be used again; false when
	// nothing was opened (the submission failed, or the only peer frames
	// were refused for their authentication or length).
	Spent bool
	Err   error
}

func (e *BatchError) Error() string {
	s := "α reusable"
	if e.Spent {
		s = "α spent"
	}
	return fmt.Sprintf("%v (requests %d…%d, %s)", e.Err, e.Start, e.Start+e.Count-1, s)
}

func (e *BatchError) Unwrap() error { return e.Err }

// AlphaReusable reports whether the requests a Generate (or LocalPair)
// error names may be asked for again with the same α: only for a
// *BatchError that is not Spent. Requests after the failed batch were never
// submitted and may always be asked for again.
func AlphaReusable(err error) bool {
	var be *BatchError
	return errors.As(err, &be) && !be.Spent
}

// Host is one party's host.
type Host struct {
	dev      module.Device
	link     Link
	inFlight int
	log      *slog.Logger
	rounds   atomic.Uint64
}

// New returns a host for dev that talks to its peer over link, keeping up
// to inFlight keys in flight (0 = DefaultInFlight). log may be nil.
func New(dev module.Device, link Link, inFlight int, log *slog.Logger) *Host {
	if inFlight <= 0 {
		inFlight = DefaultInFlight
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Host{dev: dev, link: link, inFlight: inFlight, log: log}
}

// Device returns the host's module.
func (h *Host) Device() module.Device { return h.dev }

// Rounds counts frame exchanges (one send flight and one receive flight)
// this host has run.
func (h *Host) Rounds() uint64 { return h.rounds.Load() }

// Generate obtains this party's outputs for reqs under tier. The peer
// host must call Generate with requests of the same modes, types and
// widths, in the same order, with the same tier and batch size.
func (h *Host) Generate(ctx context.Context, tier msg.Tier, reqs []Request) ([]Result, error) {
	out := make([]Result, 0, len(reqs))
	for start := 0; start < len(reqs); start += h.inFlight {
		batch := reqs[start:min(start+h.inFlight, len(reqs))]
		res, spent, err := h.batch(ctx, tier, batch)
		if err != nil {
			return out, &BatchError{Start: start, Count: len(batch), Spent: spent, Err: err}
		}
		out = append(out, res...)
	}
	return out, nil
}

// batch runs one batch; spent reports whether the module opened (or may
// have opened) a peer frame of it.
func (h *Host) batch(ctx context.Context, tier msg.Tier, reqs []Request) (_ []Result, spent bool, _ error) {
	if bulkable(reqs) {
		return h.batchBulk(ctx, tier, reqs)
	}
	shares := make([]msg.Share, len(reqs))
	for i, r := range reqs {
		shares[i] = r.Share
	}
	sub, last, spent, err := h.submit(ctx, &msg.SubmitRequest{Kind: msg.SubmitShares, Tier: tier, Shares: shares}, "shares")
	clear(shares)
	if err != nil {
		return nil, spent, err
	}
	res := make([]Result, len(reqs))
	for i := range reqs {
		c := sub.FirstCounter + uint64(i)
		cr, err := h.dev.Collect(ctx, &msg.CollectRequest{Counter: c, Points: reqs[i].Points})
		if err != nil {
			h.abandon(ctx, last, false, res[:i])
			return nil, spent, fmt.Errorf("host: collecting counter %d: %w", c, err)
		}
		r := Result{Counter: c, Mode: cr.Mode, AlphaShare: cr.AlphaShare, BetaShare: cr.BetaShare, Evals: cr.Evals, PairTag: cr.PairTag}
		if cr.Key != nil && reqs[i].Profile != msg.KordV1 {
			r.Raw = cr.Key // the caller's now; the module kept no copy for it
		} else if cr.Key != nil {
			k, err := fss.ParseKey(cr.Key)
			clear(cr.Key)
			if err != nil {
				h.abandon(ctx, last, false, res[:i])
				return nil, spent, fmt.Errorf("host: key at counter %d: %w", c, err)
			}
			r.Key = k
		}
		res[i] = r
	}
	return res, spent, nil
}

// submit hands the module a submission (own shares, or a bulk: what names
// it in errors) and, when it returns frames, swaps them with the peer (the
// one round). last is the submission's last counter; spent reports
// whether the module opened (or may have opened) a peer frame of it.
func (h *Host) submit(ctx context.Context, req *msg.SubmitRequest, what string) (sub *msg.SubmitResponse, last uint64, spent bool, err error) {
	sub, err = h.dev.Submit(ctx, req)
	if err != nil {
		return nil, 0, false, fmt.Errorf("host: submitting %s: %w", what, err)
	}
	last = sub.FirstCounter + uint64(sub.Count) - 1
	if len(sub.Frames) > 0 {
		h.rounds.Add(1)
		opened, err := h.exchange(ctx, sub.Frames, last)
		if err != nil {
			return nil, last, opened, err
		}
		spent = true
	}
	return sub, last, spent, nil
}

// abandon drops a failed batch: the module wipes what it still holds up to
// last (even when ctx was cancelled), and the key shares already collected
// are wiped here, since the caller never receives them. mismatch: the pair
// tags disagreed, which the module counts.
func (h *Host) abandon(ctx context.Context, last uint64, mismatch bool, collected []Result) {
	for _, r := range collected {
		if r.Key != nil {
			r.Key.Wipe()
		}
		clear(r.Raw)
		clear(r.Evals)
	}
	req := &msg.SubmitRequest{Kind: msg.SubmitAbandon, Counter: last, Mismatch: mismatch}
	if _, err := h.dev.Submit(context.WithoutCancel(ctx), req); err != nil {
		h.log.Warn("abandon failed", "err", err)
	}
}

// exchange sends own frames and feeds the peer's frames to the module: the
// one round. On a rejected frame it abandons the batch. opened reports
// whether the module accepted (or may have accepted) a peer frame.
func (h *Host) exchange(ctx context.Context, frames [][]byte, last uint64) (opened bool, _ error) {
	sendErr := make(chan error, 1)
	go func() {
		for _, f := range frames {
			if err := h.link.Send(ctx, f); err != nil {
				sendErr <- fmt.Errorf("host: sending frame: %w", err)
				return
			}
		}
		sendErr <- nil
	}()
	// Receive every frame of the batch even after a rejection, so the link
	// stays in step with the peer; only feed the module until one fails.
	var err error
	for range frames {
		f, rerr := h.link.Recv(ctx)
		if rerr != nil {
			err = errors.Join(err, fmt.Errorf("host: receiving frame: %w", rerr))
			break
		}
		if err != nil {
			continue
		}
		r, serr := h.dev.Submit(ctx, &msg.SubmitRequest{Kind: msg.SubmitPeerFrame, Frame: f})
		switch {
		case serr != nil:
			opened = true // unknown: count it as opened
			err = fmt.Errorf("host: forwarding frame: %w", serr)
		case !r.Accepted:
			h.log.Warn("peer frame rejected", "reason", r.Reject)
			err = fmt.Errorf("%w (%s)", ErrRejected, r.Reject)
		default:
			opened = true
		}
	}
	if err != nil {
		// Our own frames still go out: the peer expects them.
		if serr := <-sendErr; serr != nil {
			err = errors.Join(err, serr)
		}
		// Abandon even when ctx was cancelled: the batch's shares must not
		// stay pending in the module.
		h.abandon(ctx, last, false, nil)
		return opened, err
	}
	if err := <-sendErr; err != nil {
		// Every peer frame was accepted, but the peer never got ours: its
		// keys will not exist, so ours must not be handed out either.
		h.abandon(ctx, last, false, nil)
		return true, err
	}
	return true, nil
}
