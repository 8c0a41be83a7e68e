package module

import (
	"context"
	"fmt"

	"github.com/kord-fss/kord/module/internal/engine"
	"github.com/kord-fss/kord/module/msg"
	"github.com/kord-fss/kord/module/store"
)

// Errors of durable modules (test with errors.Is).
var (
	// ErrLocked: a restarted module refuses key requests until it has
	// checked a fresh counter witness of its peer (Syncer.Reconcile).
	ErrLocked = engine.ErrLocked
	// ErrWitness: a counter witness failed parsing or authentication.
	ErrWitness = engine.ErrWitness
)

// Syncer is the rollback witness of a paired module. On every
// (re)connection the hosts relay: Challenge from each module to the other,
// Witness (the module's counters, authenticated under a key only the two
// modules hold, bound to the peer's challenge) back, and Reconcile, which
// checks the peer's witness and moves both modules forward to the largest
// counter either has assigned or accepted. A module restored from an older
// state file sees that its peer has accepted counters it does not
// remember (Reconciled.RolledBack) and skips past them; it emits nothing
// before that.
//
// Each exchange also starts a session: a witness carries its sender's own
// challenge too, and Reconcile installs frame keys derived from both
// modules' challenges (docs/protocol.md, "Sessions"), dropping everything
// sealed under the previous ones. A module must have drawn its own
// Challenge before it makes a Witness. The party daemons' order: party 0
// Challenge; party 1 Challenge, Witness; party 0 Reconcile, Witness;
// party 1 Reconcile.
type Syncer interface {
	Challenge(context.Context) ([]byte, error)
	Witness(ctx context.Context, peerChallenge []byte) ([]byte, error)
	Reconcile(ctx context.Context, peerWitness []byte) (*Reconciled, error)
}

// Reconciled reports a witness check.
type Reconciled struct {
	RolledBack bool   // this module's state was older than its peer knows
	From, Next uint64 // next counter before and after
	Dropped    int    // pending requests and outputs dropped
}

// Durable is the software module of the module daemon: pairing and
// counters live in a PairingStore (store.Bolt), it restarts paired and
// locked, and it implements Syncer.
type Durable struct{ d *engine.Durable }

var (
	_ Device = (*Durable)(nil)
	_ Syncer = (*Durable)(nil)
)

// OpenDurable opens a durable software module; c.Store must be a
// store.PairingStore.
func OpenDurable(c Config) (*Durable, error) {
	if _, ok := c.Store.(store.PairingStore); !ok {
		return nil, fmt.Errorf("%w: Store must keep the pairing (store.PairingStore)", ErrBadRequest)
	}
	d, err := engine.OpenDurable(engine.Config{
		Party: c.Party, Secret: c.Secret, KEM: c.KEM, Rand: c.Rand, Store: c.Store, Logger: c.Logger, Workers: c.Workers,
		NoRecollect: c.NoRecollect,
	})
	if err != nil {
		return nil, err
	}
	return &Durable{d: d}, nil
}

// Locked reports whether the module waits for a witness.
func (m *Durable) Locked() bool { return m.d.Locked() }

// Provision runs one step of pairing.
func (m *Durable) Provision(ctx context.Context, r *msg.ProvisionRequest) (*msg.ProvisionResponse, error) {
	return m.d.Provision(ctx, r)
}

// Submit takes own shares (refused while locked), a peer frame or an abandon.
func (m *Durable) Submit(ctx context.Context, r *msg.SubmitRequest) (*msg.SubmitResponse, error) {
	return m.d.Submit(ctx, r)
}

// Poll reports status.
func (m *Durable) Poll(ctx context.Context, r *msg.PollRequest) (*msg.PollResponse, error) {
	return m.d.Poll(ctx, r)
}

// Collect returns the output at a counter; repeats return the same bytes.
func (m *Durable) Collect(ctx context.Context, r *msg.CollectRequest) (*msg.CollectResponse, error) {
	return m.d.Collect(ctx, r)
}

// CollectRange hands emit the outputs at counters first … first+count-1 in
// order, as Collect would (repeats return the same bytes), without a copy
// per key: each output is valid only during emit. points is nil or one
// list per counter; it stops at the first error.
func (m *Durable) CollectRange(_ context.Context, first uint64, count int, points [][]uint64, emit func(*msg.CollectResponse)) error {
	return m.d.CollectRange(first, count, points, emit)
}

// RecollectRange hands emit the outputs handed out before at counters
// first … first+count-1, each only if it was generated for expect[i] (the
// request's own shares, shape and payload, as submitted): a party that
// restarted completes a request only with the output made for it. It
// refuses the whole call (ErrBadRequest) otherwise, emitting nothing.
func (m *Durable) RecollectRange(_ context.Context, first uint64, count int, points [][]uint64, expect []msg.Share, emit func(*msg.CollectResponse)) error {
	return m.d.RecollectRange(first, count, points, expect, emit)
}

// CollectSlab hands emit the slab of the bulk at first (count keys); a
// repeat of a recent one gives the same bytes. The slab is the module's
// remembered copy, valid only during emit.
func (m *Durable) CollectSlab(_ context.Context, first uint64, count int, emit func(*msg.Slab)) error {
	return m.d.CollectSlab(first, count, nil, nil, 0, emit)
}

// CheckSlab refuses a collect of the bulk at first (count keys) unless
// the module generated it for expect, the bulk request as submitted
// (shape, count and public payload, a digest the module keeps with the
// slab, and in bound mode the own shares of keys at… of it, which it
// keeps too: msg.CollectRequest.Expect, ExpectAt); a refusal counts as
// RejectRecollect. A socket checks
// this before a slab collect that carries msg.CollectRequest.Expect.
func (m *Durable) CheckSlab(_ context.Context, first uint64, count int, expect *msg.Bulk, at int) error {
	return m.d.CheckSlab(first, count, expect, at)
}

// CollectSlabPinned is CollectSlab with the slab valid after the call,
// until release (exactly once): emit may keep a view of it, e.g. a socket
// that writes the keys out after the module's lock is released.
func (m *Durable) CollectSlabPinned(_ context.Context, first uint64, count int, emit func(*msg.Slab)) (release func(), err error) {
	return m.d.CollectSlabPinned(first, count, emit)
}

// SlabFDs makes (a sealed memfd holding keys) and closes the memfds a
// slab's keys are handed out in (module/socket, Linux).
type SlabFDs interface {
	Make(keys []byte) (fd int, err error)
	Close(fd int)
}

// CollectSlabFD is CollectSlab for a party that takes the keys as a
// sealed memfd: the first collect writes them into one (fds.Make) and the
// module keeps the fd, not the bytes, for repeats; emit gets the fd,
// valid during the call, or -1 and the keys as bytes (see
// engine.Durable.CollectSlabFD).
func (m *Durable) CollectSlabFD(_ context.Context, first uint64, count int, fds SlabFDs, emit func(s *msg.Slab, fd int)) error {
	return m.d.CollectSlabFD(first, count, fds, emit)
}

// Recycle takes back a slab this module's Collect handed out (see
// Recycler).
func (m *Durable) Recycle(s *msg.Slab) { m.d.Recycle(s) }

// Challenge draws a fresh nonce for the peer's witness and this module's
// share of the next session's keys.
func (m *Durable) Challenge(context.Context) ([]byte, error) { return m.d.Challenge() }

// Witness authenticates this module's counters and its own challenge
// against the peer's nonce (112 bytes); Challenge must come first.
func (m *Durable) Witness(_ context.Context, c []byte) ([]byte, error) { return m.d.Witness(c) }

// Reconcile checks the peer's witness, resynchronises forward and starts
// the session.
func (m *Durable) Reconcile(_ context.Context, w []byte) (*Reconciled, error) {
	r, err := m.d.Reconcile(w)
	if err != nil {
		return nil, err
	}
	return &Reconciled{RolledBack: r.RolledBack, From: r.From, Next: r.Next, Dropped: r.Dropped}, nil
}
