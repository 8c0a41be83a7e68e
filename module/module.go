// Package module is the public face of a kord key-generation module: the
// fixed, uniform Device interface of four operations — Provision, Submit,
// Poll, Collect — and the software backend that implements it.
//
// A module is the only component of kord that ever holds a secret: (α, β),
// root seeds, the channel keys. Everything secret lives under
// module/internal/, which Go forbids any package outside module/ to import;
// hosts, services and applications only ever hold a Device and exchange the
// messages of package msg with it. Other backends (an enclave, an FPGA
// driver, the socket client of the module daemon) implement the same
// interface.
package module

import (
	"context"
	"errors"
	"io"
	"log/slog"

	"github.com/kord-fss/kord/module/internal/engine"
	"github.com/kord-fss/kord/module/msg"
	"github.com/kord-fss/kord/module/store"
)

// Device is a key-generation module. Every operation takes and returns
// plain, serializable messages; a rejected peer frame is a normal answer
// (Accepted false, Reject set), while a malformed request is an error
// wrapping ErrBadRequest that names the field, and moves nothing.
type Device interface {
	// Provision runs one step of the one-time pairing with the peer module.
	Provision(context.Context, *msg.ProvisionRequest) (*msg.ProvisionResponse, error)
	// Submit takes own share requests (returning own frames), a bulk
	// request of N keys of one shape (msg.Bulk: one frame out in bound
	// mode), one peer frame (accepted or rejected), or an abandon.
	Submit(context.Context, *msg.SubmitRequest) (*msg.SubmitResponse, error)
	// Poll reports status, counters and reject counts.
	Poll(context.Context, *msg.PollRequest) (*msg.PollResponse, error)
	// Collect returns this party's key share (or, in consume mode, its
	// evaluation shares) at a counter, once; with Count > 0, a bulk's
	// whole slab (msg.Slab), which the caller then owns.
	Collect(context.Context, *msg.CollectRequest) (*msg.CollectResponse, error)
}

// Recycler is implemented by a Device that takes back the slabs it hands
// out (msg.Slab, from a range collect) to reuse their buffers: Recycle
// wipes the slab (the one wipe its buffers get) and keeps it for a later
// bulk; the caller must not use it after. The software module implements
// it.
type Recycler interface {
	Recycle(*msg.Slab)
}

// Errors a Device returns (test with errors.Is).
var (
	ErrBadRequest = engine.ErrBadRequest
	ErrNotPaired  = engine.ErrNotPaired
)

// Config configures a software module.
type Config struct {
	// Party is 0 or 1; party 0 starts pairing.
	Party int
	// Secret is the provisioning secret both modules of a pair were given
	// at manufacture (at least 16 bytes). It authenticates pairing.
	Secret []byte
	// KEM names the post-quantum half of the hybrid pairing KEM; see KEMs.
	// Empty means "mlkem768".
	KEM string
	// Rand is the module's entropy; nil means crypto/rand.
	Rand io.Reader
	// Store keeps the counters; nil means in memory.
	Store store.Store
	// Logger receives operational logs (never secrets); nil discards.
	Logger *slog.Logger
	// Workers is the number of goroutines each batch Gen of the module
	// runs on; 0 means runtime.GOMAXPROCS.
	Workers int
	// NoRecollect (OpenDurable only) drops the durable module's
	// re-collect window: each output is handed out once, as by
	// NewSoftware, and a range collect hands out the module's own slab
	// (the caller owns it: Recycle, or wipe it) instead of a copy of a
	// remembered one. A repeated Collect is then refused. Crash recovery
	// of the party daemons re-collects by counter and needs the window:
	// this is only for a module whose parties cannot outlive it, such as
	// the in-process pair (host.LocalPair), where both die together. The
	// rollback witness, counters and commit-before-emit are unchanged.
	NoRecollect bool
}

// NewSoftware returns an unpaired software module: the default backend.
func NewSoftware(c Config) (Device, error) {
	e, err := engine.New(engine.Config{
		Party: c.Party, Secret: c.Secret, KEM: c.KEM, Rand: c.Rand, Store: c.Store, Logger: c.Logger, Workers: c.Workers,
	})
	if err != nil {
		return nil, err
	}
	return e, nil
}

// MaxWeights is the most weight masks (msg.CorrWeight) a software module
// keeps for input correlations; a new one beyond it makes the module
// forget the oldest.
const MaxWeights = engine.MaxWeights

// RejectRecollect is the Poll reject class of re-collects refused because
// the output was generated for another request (Durable.RecollectRange).
const RejectRecollect = engine.RejectRecollect

// KEMs lists the pairing KEM names this build supports, each run hybrid
// with X25519.
func KEMs() []string { return engine.KEMs() }

// Pair runs pairing between two modules by relaying their messages, as
// hosts do. The relay sees only public messages.
func Pair(ctx context.Context, d0, d1 Device) error {
	r, err := d0.Provision(ctx, &msg.ProvisionRequest{})
	if err != nil {
		return err
	}
	devs := [2]Device{d1, d0}
	paired := [2]bool{}
	for i := 0; i < 4 && len(r.Message) > 0; i++ {
		d := devs[i%2]
		r, err = d.Provision(ctx, &msg.ProvisionRequest{Message: r.Message})
		if err != nil {
			return err
		}
		if r.Paired {
			paired[i%2] = true
		}
	}
	if !paired[0] || !paired[1] {
		return errors.New("module: pairing did not complete")
	}
	return nil
}
