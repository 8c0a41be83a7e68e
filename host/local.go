package host

import (
	"bytes"
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/kord-fss/kord/fss"
	"github.com/kord-fss/kord/internal/both"
	"github.com/kord-fss/kord/module"
	"github.com/kord-fss/kord/module/msg"
	"github.com/kord-fss/kord/module/socket"
	"github.com/kord-fss/kord/module/store"
	pb "github.com/kord-fss/kord/proto/kordpb"
	"github.com/kord-fss/kord/service"
)

// LocalPair is a freshly paired pair of software modules with the two
// parties of package service in one process, linked in process
// (service.LocalPair): the in-process dealerless key source. Applications
// and gate code that play both parties in one process (tests, benchmarks,
// simulations) obtain kord keys from it with no dealer — each key share
// comes out of its own party's module — through the same session protocol
// (batches, frames, transcript, pair digests, confirmations, abandon,
// resync, spent classes) as the party daemons.
type LocalPair struct {
	// Devices are the two modules (party 0's, party 1's).
	Devices [2]module.Device

	pair  *service.LocalPair
	batch int
	ids   atomic.Uint64 // the last request id used (both parties use the same)
	log   *slog.Logger
	// slabPool holds released slabs (wiped) for the next slab calls.
	slabPool sync.Pool
}

// LocalOptions configure NewLocalPair.
type LocalOptions struct {
	// KEM is the pairing KEM ("" = mlkem768); see module.KEMs.
	KEM string
	// InFlight is the batch size M: the most keys per batch (0 =
	// DefaultInFlight; at most service.MaxCount).
	InFlight int
	// Logger receives operational logs; nil discards.
	Logger *slog.Logger
	// Workers is the number of goroutines each module's batch Gen runs
	// on; 0 means GOMAXPROCS. The two modules generate at the same time,
	// so with all cores each, whichever finishes its share of a batch
	// first leaves the cores to the other (measured faster on 2 cores
	// than one worker each).
	Workers int
	// PeerConns, if set, returns a fresh connection pair for each of the
	// parties' peer sessions (e.g. a shaped TCP pair from
	// internal/netshape), which then cross it instead of memory.
	PeerConns func() (a, b net.Conn, err error)

	// tests: wrap (nil: none) wraps each module before the party gets it;
	// tap (nil: none) sees, and may alter, each message party 0 sends.
	wrap func(party int, d syncDevice) syncDevice
	tap  func(*pb.PeerMsg)
}

// syncDevice is a module with the rollback witness (module.Durable).
type syncDevice interface {
	module.Device
	module.Syncer
}

// NewLocalPair builds two software modules under a fresh random
// provisioning secret (their counters in memory), pairs them, and starts
// the two parties over them.
func NewLocalPair(ctx context.Context, o LocalOptions) (*LocalPair, error) {
	secret := make([]byte, 32)
	if _, err := rand.Read(secret); err != nil {
		return nil, fmt.Errorf("host: provisioning secret: %w", err)
	}
	defer clear(secret)
	lp := &LocalPair{log: o.Logger}
	if lp.log == nil {
		lp.log = slog.New(slog.DiscardHandler)
	}
	var mods [2]socket.Module
	for b := 0; b < 2; b++ {
		// No re-collect window: only the daemons' crash recovery
		// re-collects, and the two parties here die together.
		d, err := module.OpenDurable(module.Config{Party: b, Secret: secret, KEM: o.KEM, Logger: o.Logger, Workers: o.Workers,
			Store: &store.MemPairing{}, NoRecollect: true})
		if err != nil {
			return nil, err
		}
		var sd syncDevice = d
		if o.wrap != nil {
			sd = o.wrap(b, d)
		}
		lp.Devices[b], mods[b] = sd, socket.Local(sd)
	}
	if err := module.Pair(ctx, lp.Devices[0], lp.Devices[1]); err != nil {
		return nil, err
	}
	lp.batch = o.InFlight
	if lp.batch <= 0 {
		lp.batch = DefaultInFlight
	}
	lp.batch = min(lp.batch, service.MaxCount)
	sp, err := service.NewLocalPair(mods, service.Config{Batch: lp.batch, Logger: o.Logger}, service.LocalLink{Conns: o.PeerConns, Tap: o.tap})
	if err != nil {
		return nil, err
	}
	lp.pair = sp
	return lp, nil
}

// Close stops the two parties.
func (lp *LocalPair) Close() { lp.pair.Close() }

// SentBytes is the total of frame bytes party b has sent to the other.
func (lp *LocalPair) SentBytes(b int) uint64 { return lp.pair.SentBytes(b) }

// Rounds counts the batches party 0 has had answered (one batch message
// and its reply each).
func (lp *LocalPair) Rounds() uint64 { return lp.pair.Rounds() }

// request is one key request of a call, for both parties: req[b] is
// party b's (its shape and shares, and in consume mode its points);
// keys is how many keys it asks for (derived mode: its count).
type request struct {
	req  [2]Request
	tier msg.Tier // bound and consume mode
	keys int
	// A payload vector (llama profile, group ≥ 2; the application API
	// never packs one): group elements per key; bound, vec[b] is party
	// b's share of each; derived, betas is the public vector (none with
	// DeriveBeta).
	group int
	vec   [2][]uint64
	betas []uint64
	// bulk (a slab call's bound requests): party b's request is bulk[b]
	// (its ID is set at run), one job of keys keys; req is then unused.
	bulk *[2]service.BoundBulk
}

// pack is party b's requests as one message of the application API, ids
// base, base+1, …: packed (pb.PackedRequests, no per-request message)
// unless one has points or a payload vector.
func pack(rs []request, b int, base uint64) *pb.KeyRequests {
	n := len(rs)
	for i := range rs {
		if len(rs[i].req[b].Points) > 0 || rs[i].group > 1 {
			krs := &pb.KeyRequests{Requests: make([]*pb.KeyRequest, n)}
			for i := range rs {
				krs.Requests[i] = keyRequest(base+uint64(i), &rs[i], b)
			}
			return krs
		}
	}
	pk := &pb.PackedRequests{Ids: make([]uint64, n), Shapes: make([]byte, 0, 6*n), AlphaShares: make([]uint64, n),
		BetaShares: make([]uint64, n), Counts: make([]uint32, n), Betas: make([]uint64, n)}
	for i := range rs {
		r := &rs[i].req[b]
		var tier, db byte
		if r.Mode != msg.Derived {
			tier = byte(rs[i].tier)
		} else {
			pk.Counts[i] = uint32(rs[i].keys)
		}
		if r.DeriveBeta {
			db = 1
		}
		pk.Ids[i], pk.AlphaShares[i], pk.BetaShares[i], pk.Betas[i] = base+uint64(i), r.AlphaShare, r.BetaShare, r.Beta
		pk.Shapes = append(pk.Shapes, byte(r.Mode), tier, msg.TypeByte(r.Profile, r.Type), byte(r.InBits), byte(r.OutBits), db)
	}
	return &pb.KeyRequests{Packed: pk}
}

// keyRequest is party b's request r as one message with id id.
func keyRequest(id uint64, r *request, b int) *pb.KeyRequest {
	q := &r.req[b]
	kr := &pb.KeyRequest{Id: id, Mode: q.Mode.String(), Type: q.Type.String(), InBits: uint32(q.InBits), OutBits: uint32(q.OutBits),
		AlphaShare: q.AlphaShare, BetaShare: q.BetaShare, DeriveBeta: q.DeriveBeta, Beta: q.Beta, Points: q.Points}
	if q.Profile != msg.KordV1 {
		kr.Profile = q.Profile.String()
	}
	if q.Mode != msg.Derived {
		kr.Tier = r.tier.String()
	} else if r.keys > 1 {
		kr.Count = uint32(r.keys)
	}
	if r.group > 1 {
		kr.Group, kr.BetaShare = uint32(r.group), 0
		if q.Mode == msg.Derived {
			kr.Betas, kr.Beta = r.betas, 0
		} else {
			kr.BetaShares = r.vec[b]
		}
	}
	return kr
}

// run asks both parties for the requests (ids are assigned here, the
// same at both) and returns each party's answers, request by request.
// On an error (ctx ended) nothing is returned.
func (lp *LocalPair) run(ctx context.Context, rs []request) ([2][]service.Answer, error) {
	base := lp.ids.Add(uint64(len(rs))) - uint64(len(rs)) + 1
	out, err := lp.ask(ctx, func(b int) (*service.Queued, error) {
		if rs[0].bulk != nil {
			bs := make([]service.BoundBulk, len(rs))
			for i := range rs {
				bs[i] = rs[i].bulk[b]
				bs[i].ID = base + uint64(i)
			}
			return lp.pair.EnqueueBulk(b, bs)
		}
		return lp.pair.Enqueue(b, pack(rs, b, base))
	})
	if err != nil {
		return out, fmt.Errorf("host: %w", err)
	}
	return out, nil
}

// ask queues each party's requests (enqueue(b)), party 1's first
// (service.LocalPair.Enqueue: party 0's batches then always find them
// there), and waits for both parties' answers. On an error nothing is
// returned and what was answered is wiped.
func (lp *LocalPair) ask(ctx context.Context, enqueue func(b int) (*service.Queued, error)) ([2][]service.Answer, error) {
	var out [2][]service.Answer
	var qs [2]*service.Queued
	for _, b := range []int{1, 0} {
		q, err := enqueue(b)
		if err != nil {
			if qs[1] != nil { // abandon party 1's
				if ans, werr := qs[1].Wait(cancelled); werr == nil {
					for i := range ans {
						ans[i].Wipe()
					}
				}
			}
			return out, err
		}
		qs[b] = q
	}
	err := both.Each(func(b int) (err error) {
		out[b], err = qs[b].Wait(ctx)
		return err
	})
	if err != nil {
		for b := range 2 {
			for i := range out[b] {
				out[b][i].Wipe()
			}
		}
		return [2][]service.Answer{}, err
	}
	return out, nil
}

// cancelled is a context that has ended: waiting with it abandons what a
// party still has queued.
var cancelled = func() context.Context {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	return ctx
}()

// failure is the first request of a call that failed at either party, or
// whose outputs do not pair; -1 when none did. err says why.
func failure(ans [2][]service.Answer, rs []request) (int, error) {
	for i := range rs {
		a0, a1 := &ans[0][i], &ans[1][i]
		for _, a := range []*service.Answer{a0, a1} {
			if a.ErrorClass == "" {
				continue
			}
			switch {
			case a.ErrorClass == service.ErrClassTampered:
				return i, fmt.Errorf("%w (request %d: %s)", ErrTampered, i, a.Error)
			case pb.AlphaReusable(a.ErrorClass):
				return i, fmt.Errorf("%w (request %d: %s: %s)", ErrRejected, i, a.ErrorClass, a.Error)
			default:
				return i, fmt.Errorf("host: request %d: %s: %s", i, a.ErrorClass, a.Error)
			}
		}
		if len(a0.Outputs) != rs[i].keys || len(a1.Outputs) != rs[i].keys {
			return i, fmt.Errorf("host: request %d: %d and %d outputs for %d keys", i, len(a0.Outputs), len(a1.Outputs), rs[i].keys)
		}
		for k := range a0.Outputs {
			if a0.Outputs[k].PairTag != a1.Outputs[k].PairTag {
				// The parties compared their batches' digests already:
				// this is a second line.
				return i, fmt.Errorf("%w (request %d)", ErrTampered, i)
			}
		}
	}
	return -1, nil
}

// failed wipes the answers from request i on and returns the error for
// them: a *BatchError from i to the end, Spent when any of them failed
// with a class that spends α, or was delivered (its frames were opened)
// in bound or consume mode and is dropped here.
func failed(ans [2][]service.Answer, i int, err error) error {
	be := &BatchError{Start: i, Count: len(ans[0]) - i, Err: err}
	if errors.Is(err, ErrTampered) {
		be.Spent = true
	}
	for b := range 2 {
		for j := i; j < len(ans[b]); j++ {
			a := &ans[b][j]
			switch {
			case a.ErrorClass != "":
				be.Spent = be.Spent || !pb.AlphaReusable(a.ErrorClass)
			case len(a.Outputs) > 0:
				be.Spent = be.Spent || a.Outputs[0].Mode != msg.Derived
			}
			a.Wipe()
		}
	}
	return be
}

// Generate obtains both parties' outputs for their requests (the two
// lists must match in modes, types and widths; request i of one party
// pairs with request i of the other) under tier, and returns each party's
// results once every pair of outputs pairs (equal pair tags). On an error
// it returns the results before the first failed request and a
// *BatchError covering the rest: Spent if any of them may have had its
// frames opened (α spent), or the outputs did not pair (ErrTampered).
// Nothing is retried here: after a spent error the caller must choose a
// fresh α for those requests (AlphaReusable).
func (lp *LocalPair) Generate(ctx context.Context, tier msg.Tier, reqs [2][]Request) ([2][]Result, error) {
	var out [2][]Result
	if len(reqs[0]) != len(reqs[1]) {
		return out, errors.New("host: both parties must make the same number of requests")
	}
	if len(reqs[0]) == 0 {
		return out, nil
	}
	rs := make([]request, len(reqs[0]))
	for i := range rs {
		rs[i] = request{req: [2]Request{reqs[0][i], reqs[1][i]}, tier: tier, keys: 1}
	}
	ans, err := lp.run(ctx, rs)
	if err != nil {
		return out, &BatchError{Start: 0, Count: len(rs), Spent: true, Err: err}
	}
	bad, ferr := failure(ans, rs)
	n := len(rs)
	if bad >= 0 {
		n = bad
	}
	spent := false
	for b := range 2 {
		out[b] = make([]Result, 0, n)
		for i := range n {
			r, err := result(&ans[b][i].Outputs[0], rs[i].req[b].Profile)
			if err != nil {
				// A module's key that does not parse: nothing from this
				// request on is handed out, and its frames were opened.
				n, bad, ferr, spent = i, i, fmt.Errorf("host: request %d: %w", i, err), true
				out[0], out[1] = truncate(out[0], n), truncate(out[1], n)
				break
			}
			out[b] = append(out[b], r)
		}
	}
	for b := range 2 {
		for i := range n {
			ans[b][i].Wipe()
		}
	}
	if bad >= 0 {
		lp.log.Warn("requests failed", "first", bad, "err", ferr)
		err := failed(ans, bad, ferr)
		if spent {
			err.(*BatchError).Spent = true
		}
		return out, err
	}
	return out, nil
}

// result is one output of a request of profile pr as a Result (a
// kord-v1 key parsed, another profile's key bytes and the evaluations
// copied: the output is wiped after).
func result(o *msg.CollectResponse, pr msg.Profile) (Result, error) {
	r := Result{Counter: o.Counter, Mode: o.Mode, AlphaShare: o.AlphaShare, BetaShare: o.BetaShare, PairTag: o.PairTag}
	if len(o.Evals) > 0 {
		r.Evals = slices.Clone(o.Evals)
	}
	if len(o.Key) > 0 && pr != msg.KordV1 {
		r.Raw = bytes.Clone(o.Key)
	} else if len(o.Key) > 0 {
		k, err := fss.ParseKey(o.Key)
		if err != nil {
			return Result{}, err
		}
		r.Key = k
	}
	return r, nil
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
// party's key share, keys[b][i] for party b and request i. Neither party
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
		for b := range 2 {
			truncate(res[b], 0)
		}
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

// derivedRequests asks for count derived keys of shape p, at most per
// keys per request.
func derivedRequests(pr msg.Profile, p fss.Params, count, per int, beta uint64, deriveBeta bool) []request {
	var rs []request
	for left := count; left > 0; {
		k := min(left, per)
		r := Request{Share: msg.Share{Mode: msg.Derived, Profile: pr, Type: p.Type, InBits: p.InBits, OutBits: p.OutBits, Beta: beta, DeriveBeta: deriveBeta}}
		rs = append(rs, request{req: [2]Request{r, r}, keys: k})
		left -= k
	}
	return rs
}

// DerivedKeys is the dealerless key API for random-mask keys: it returns
// count keys whose α is drawn inside both modules (β too when deriveBeta;
// otherwise β is the public value beta), with each party's key share and
// its additive shares of α and β. No frame crosses between the parties.
func (lp *LocalPair) DerivedKeys(ctx context.Context, p fss.Params, count int, beta uint64, deriveBeta bool) (out [2][]MaskedKey, err error) {
	if count <= 0 {
		return out, &BatchError{Start: 0, Count: max(count, 0), Err: fmt.Errorf("%w: count %d, want at least 1", module.ErrBadRequest, count)}
	}
	rs := derivedRequests(msg.KordV1, p, count, lp.batch, beta, deriveBeta)
	ans, err := lp.run(ctx, rs)
	if err != nil {
		return out, &BatchError{Start: 0, Count: count, Err: err}
	}
	if bad, ferr := failure(ans, rs); bad >= 0 {
		failed(ans, 0, ferr)
		return out, &BatchError{Start: 0, Count: count, Err: ferr} // derived: no α of the caller's is involved
	}
	for b := range 2 {
		out[b] = make([]MaskedKey, 0, count)
		for i := range ans[b] {
			for k := range ans[b][i].Outputs {
				o := &ans[b][i].Outputs[k]
				key, err := fss.ParseKey(o.Key)
				if err != nil {
					for _, m := range out[b] {
						m.Key.Wipe()
					}
					failed(ans, 0, err)
					return [2][]MaskedKey{}, &BatchError{Start: 0, Count: count, Err: fmt.Errorf("host: derived key: %w", err)}
				}
				out[b] = append(out[b], MaskedKey{Key: key, AlphaShare: o.AlphaShare, BetaShare: o.BetaShare})
			}
			ans[b][i].Wipe()
		}
	}
	return out, nil
}
