// Package host is the in-process dealerless key source: LocalPair, two
// paired software modules and the two parties of package service in one
// process, linked in process. It runs the party daemons' own session
// protocol (service: leader and follower over a peer link — batches,
// frames, transcript, pair digests, confirmations, abandon, resync, spent
// and unmatched classes); there is no second implementation of it here.
// The parties hold only opaque frames, their own shares and their own key
// shares; only the modules ever form α or β.
//
// Spent shares (the rule of package service, issue 18): once a module has
// opened a peer frame of a batch, it has rebuilt (α, β) and computed the
// pair tag, and whether the two parties' keys pair is an outcome that may
// depend on α (on the keystream tier an attacker on the link can make it
// reveal one bit). Requests whose frames no module opened are batched
// again by the parties themselves; a request that fails is returned as a
// *BatchError whose Spent says whether its α may be used again
// (AlphaReusable); after a spent one the caller must choose a fresh α,
// not a new sharing of it. Results carry each output's PairTag; LocalPair
// hands out only pairs whose tags agree (the parties compared their
// batches' digests already) and fails the rest with ErrTampered, spent.
package host

import (
	"errors"
	"fmt"

	"github.com/kord-fss/kord/fss"
	"github.com/kord-fss/kord/module/msg"
)

// DefaultInFlight is the default number of keys per batch.
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

// ErrRejected is returned when a request was refused before any frame of
// it was opened (the parties' requests differ, or one is malformed): its α
// may be used again.
var ErrRejected = errors.New("host: request refused before any frame was opened")

// ErrTampered is returned when the two modules' outputs do not pair, or a
// module refused a frame: a frame was altered in transit, or the parties'
// requests differed. The requests are spent.
var ErrTampered = errors.New("host: the two modules' keys do not pair (a frame was altered, or the requests differ)")

// BatchError is a failed part of a LocalPair call: requests Start …
// Start+Count-1 of the call (those before it were answered; those after
// are not handed out).
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

// AlphaReusable reports whether the requests a LocalPair error names may
// be asked for again with the same α: only for a *BatchError that is not
// Spent.
func AlphaReusable(err error) bool {
	var be *BatchError
	return errors.As(err, &be) && !be.Spent
}
