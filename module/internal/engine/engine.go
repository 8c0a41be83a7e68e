// Package engine is the software module: the one place in kord where (α, β),
// root seeds and channel keys exist. It runs pairing, seals the own frame,
// opens the peer frame, reconstructs (α, β), derives both roots from kr,
// the counter, the key's shape and (α, β), runs the ordinary dealer Gen,
// keeps only its own party's key share, commits counters and wipes
// everything else.
//
// Nothing here logs or returns a secret: logs and errors carry counters,
// reasons and field names only.
//
// The files, one concept each:
//
//	engine.go    the Engine, its limits and errors, pairing, Poll and Submit's dispatch
//	validate.go  every field of a submitted share checked before a counter moves
//	slot.go      one submission's own shares waiting for the peer's frame
//	round.go     the one round: own frame sealed, the peer's frame opened and matched
//	generate.go  accepted outputs through the dealer's Gen on the module's workers
//	output.go    outputs waiting for collection and their pooled key buffers
//	collect.go   Collect (each output handed out once) and abandon
//	bulk.go      bulk requests: one reservation, frame and slab for N keys of one shape
//	corr.go      derived multiplication correlations, bound to their description
//	tuple.go     MP-SPDZ tuples (triples, squares, bits, matrix triples) on the correlation path
//	gates.go     LLAMA gate key packs on the correlation path
//	profile.go   key profiles (kord-v1, llama) and their Gen
//	durable.go   the engine with its counter store: commit before emit, restore, recollect
package engine

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sync"

	"github.com/kord-fss/kord/fss"
	"github.com/kord-fss/kord/module/internal/channel"
	"github.com/kord-fss/kord/module/internal/kdf"
	"github.com/kord-fss/kord/module/internal/pairing"
	"github.com/kord-fss/kord/module/msg"
	"github.com/kord-fss/kord/module/store"
)

// Limits on one request.
const (
	MaxBatch  = msg.MaxShares
	MaxPoints = 1 << 16
)

// MaxPendingShares bounds the own shares a module holds waiting for the
// peer's frames: 64 full batches, 256 times what a party with the default
// --batch (256) and --in-flight (4) keeps outstanding. A submission that
// would pass it is refused and moves nothing.
const MaxPendingShares = 64 * MaxBatch

// MaxReady bounds what a module holds for its host: own shares waiting for
// peer frames plus outputs not yet collected (derived outputs included),
// four times MaxPendingShares. Each output holds its key once generated
// (about 1.2 KiB for a 64-bit DCF), so this caps a module that its host
// never collects from at about a gigabyte. A submission that would pass it
// is refused (ErrBadRequest, naming the numbers) before any counter moves;
// collecting or abandoning makes room.
const MaxReady = 4 * MaxPendingShares

// ErrBadRequest marks a request that names a field wrongly; nothing moved.
var ErrBadRequest = errors.New("module: bad request")

// ErrNotPaired is returned for key requests before pairing.
var ErrNotPaired = errors.New("module: not paired")

// Reject reasons for peer frames (public; counted in Poll).
const (
	RejectNotPaired  = "not_paired"
	RejectNoPending  = "no_pending"
	RejectLength     = "length"
	RejectReplay     = "replay"
	RejectOrder      = "out_of_order"
	RejectAuth       = "authentication"
	RejectRange      = "range"
	RejectPairingMsg = "pairing"
	// RejectNoSession: a module restored from its state file has no frame
	// keys until the witness exchange starts a session.
	RejectNoSession = "no_session"
	// RejectPairMismatch counts abandons whose host reported that the two
	// modules' pair tags disagreed (SubmitRequest.Mismatch): frames altered
	// in transit, or requests that differed between the sites.
	RejectPairMismatch = "pair_mismatch"
)

// errNoSession is returned for framed shares while the module has no
// frame keys (restored from its state file, before Reconcile).
var errNoSession = fmt.Errorf("%w: no frame keys until the witness exchange starts a session (a restored module seals nothing under old keys)", ErrLocked)

// Config configures a software module.
type Config struct {
	Party  int          // 0 or 1
	Secret []byte       // provisioning secret shared with the peer module
	KEM    string       // post-quantum half of the pairing ("" = mlkem768)
	Rand   io.Reader    // nil = crypto/rand
	Store  store.Store  // nil = in memory
	Logger *slog.Logger // nil = discard
	// Workers is the goroutines each batch Gen runs on (0 = GOMAXPROCS).
	Workers int
	// NoRecollect (Durable only): keep no re-collect window; see
	// module.Config.NoRecollect.
	NoRecollect bool
}

// Engine is one software module. It is safe for concurrent use; requests
// are served one at a time.
type Engine struct {
	mu     sync.Mutex
	party  int
	secret []byte
	kem    pairing.KEM
	rand   io.Reader
	store  store.Store
	log    *slog.Logger

	pair   *pairing.State
	paired bool
	// ch seals and opens frames: the pairing's keys until the first
	// session, then the session's (Durable.Reconcile). Nil in a module
	// restored from its state file until its first session, so that it
	// can seal nothing under keys it may have used before.
	ch  *channel.Channel
	prf *kdf.PRF
	// maxReady is MaxReady (a test may lower it).
	maxReady int

	ctr        store.Counters
	slots      []*slot
	ready      map[uint64]*output
	pending    int // outputs in ready whose key is not generated yet
	dispatches uint64
	rejects    map[string]uint64

	gens    map[fss.Params]*fss.BatchGen // batch generators, by shape
	workers int                          // each generator's goroutines

	bulk      bulkScratch // a bulk's working buffers, wiped after each use
	slabs     []*msg.Slab // generated bulk outputs not collected yet, in order
	slabKeys  int         // keys in slabs
	slabReqs  []slabReq   // the request of each of slabs, index for index
	freeSlabs []*msg.Slab // recycled slabs (wiped), for the next bulks

	corrs   map[uint64]*msg.CorrShares // derived correlations not collected yet (corr.go)
	weights map[uint64]msg.Correlation // kept weight masks, by first counter (corr.go)

	plain []byte    // a frame's plaintext shares while sealed or opened; cleared after
	arena []output  // outputs are carved from slabs: fewer allocations per key
	queue []*output // accepted outputs whose keys are not made yet, in order
	keys  chunkPool // buffers for generated keys
}

// New returns an unpaired software module.
func New(c Config) (*Engine, error) {
	if c.Party != 0 && c.Party != 1 {
		return nil, fmt.Errorf("%w: Party %d is not 0 or 1", ErrBadRequest, c.Party)
	}
	if len(c.Secret) < pairing.MinSecret {
		return nil, fmt.Errorf("%w: Secret (provisioning secret) is shorter than %d bytes", ErrBadRequest, pairing.MinSecret)
	}
	name := c.KEM
	if name == "" {
		name = pairing.DefaultKEM
	}
	kem, err := pairing.Lookup(name)
	if err != nil {
		return nil, fmt.Errorf("%w: KEM: %v", ErrBadRequest, err)
	}
	e := &Engine{
		party:    c.Party,
		secret:   append([]byte(nil), c.Secret...),
		kem:      kem,
		rand:     c.Rand,
		store:    c.Store,
		log:      c.Logger,
		ready:    map[uint64]*output{},
		rejects:  map[string]uint64{},
		maxReady: MaxReady,
	}
	if e.workers, err = workers(c.Workers); err != nil {
		return nil, err
	}
	if e.rand == nil {
		e.rand = rand.Reader
	}
	if e.store == nil {
		e.store = &store.Mem{}
	}
	if e.log == nil {
		e.log = slog.New(slog.DiscardHandler)
	}
	return e, nil
}

// KEMs lists the pairing KEMs this build supports.
func KEMs() []string { return pairing.Names() }

// Provision runs one step of pairing.
func (e *Engine) Provision(_ context.Context, req *msg.ProvisionRequest) (*msg.ProvisionResponse, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.paired {
		return nil, fmt.Errorf("%w: module is already paired; pair a fresh module instead", ErrBadRequest)
	}
	if e.party == 0 && len(req.Message) == 0 {
		st, err := pairing.New(e.party, e.secret, e.kem, e.rand)
		if err != nil {
			return nil, err
		}
		if e.pair != nil {
			e.pair.Wipe()
		}
		e.pair = st
		out, err := st.Start()
		if err != nil {
			return nil, err
		}
		return &msg.ProvisionResponse{Message: out}, nil
	}
	if e.pair == nil {
		if e.party == 0 {
			e.rejects[RejectPairingMsg]++
			return nil, fmt.Errorf("%w: Message: party 0 must start pairing with an empty message", ErrBadRequest)
		}
		st, err := pairing.New(e.party, e.secret, e.kem, e.rand)
		if err != nil {
			return nil, err
		}
		e.pair = st
	}
	out, err := e.pair.Step(req.Message)
	if err != nil {
		e.rejects[RejectPairingMsg]++
		e.pair = nil
		e.log.Warn("pairing message rejected", "party", e.party)
		return nil, err
	}
	resp := &msg.ProvisionResponse{Message: out}
	if e.pair.Done() {
		if err := e.finishPairing(); err != nil {
			return nil, err
		}
		resp.Paired = true
	}
	return resp, nil
}

func (e *Engine) finishPairing() error {
	kch, err := e.pair.Secret()
	e.pair.Wipe()
	e.pair = nil
	if err != nil {
		return err
	}
	defer clear(kch)
	keys, err := kdf.Derive(kch)
	if err != nil {
		return err
	}
	defer keys.Wipe()
	ch, err := channel.New(keys, e.party)
	if err != nil {
		return err
	}
	prf, err := kdf.NewPRF(&keys.Root)
	if err != nil {
		return err
	}
	// A store that persists the pairing (the module daemon's) keeps K_ch
	// so the module restarts paired; see durable.go.
	if ps, ok := e.store.(store.PairingStore); ok {
		if err := ps.SavePairing(store.Pairing{Party: e.party, KEM: e.kem.Name(), Secret: kch}); err != nil {
			return fmt.Errorf("module: saving pairing: %w", err)
		}
	}
	if err := e.store.Save(store.Counters{}); err != nil {
		return fmt.Errorf("module: saving counters: %w", err)
	}
	e.ch, e.prf, e.ctr, e.paired = ch, prf, store.Counters{}, true
	clear(e.secret)
	e.log.Info("module paired", "party", e.party, "kem", e.kem.Name())
	return nil
}

// Poll reports status.
func (e *Engine) Poll(context.Context, *msg.PollRequest) (*msg.PollResponse, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	r := &msg.PollResponse{
		Party: e.party, Paired: e.paired, KEM: e.kem.Name(),
		NextCounter: e.ctr.Next, PeerFloor: e.ctr.PeerFloor, Generated: e.ctr.Generated,
		Dispatches: e.dispatches, Ready: e.readyCount(), Rejects: map[string]uint64{},
	}
	r.Pending = e.pendingShares()
	for k, v := range e.rejects {
		r.Rejects[k] = v
	}
	return r, nil
}

// Submit handles own shares, a peer frame or an abandon.
func (e *Engine) Submit(_ context.Context, req *msg.SubmitRequest) (*msg.SubmitResponse, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	switch req.Kind {
	case msg.SubmitShares:
		return e.submitShares(req)
	case msg.SubmitPeerFrame:
		return e.submitFrame(req.Frame)
	case msg.SubmitAbandon:
		return e.abandon(req.Counter, req.Mismatch)
	case msg.SubmitBulk:
		return e.submitBulk(req)
	case msg.SubmitCorrelation:
		return e.submitCorr(req)
	}
	return nil, fmt.Errorf("%w: Kind: unknown submit kind %d", ErrBadRequest, req.Kind)
}
