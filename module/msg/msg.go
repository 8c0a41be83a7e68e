// Package msg defines the messages of the module's fixed, uniform interface
// (module.Device): Provision, Submit, Poll and Collect. Every message is a
// plain struct of integers, strings and byte slices, so any backend — the
// software module in this process, a daemon behind a socket, an enclave or
// an FPGA driver — can carry them in its own encoding.
//
// No message ever carries α, β, a root seed, a channel key or the peer's
// key share. The only secrets a message may carry are the caller's own:
// its own additive shares (Submit) and its own key share or mask shares
// (Collect).
package msg

import (
	"fmt"

	"github.com/kord-fss/kord/fss"
)

// Mode is how a module obtains the point (α, β) of a key.
type Mode uint8

const (
	// Bound: each party submits additive shares of (α, β); the modules swap
	// one frame each (KORD Algorithms 1 and 2).
	Bound Mode = 1
	// Derived: α (and β when DeriveBeta is set) are drawn inside both
	// modules from the shared secret and the counter; each module emits
	// its key share and its additive share of α (and β). No frame.
	Derived Mode = 2
	// Consume: as Bound, but the key never leaves the module; Collect takes
	// public points and returns only this party's evaluation shares.
	Consume Mode = 3
)

func (m Mode) String() string {
	switch m {
	case Bound:
		return "bound"
	case Derived:
		return "derived"
	case Consume:
		return "consume"
	}
	return fmt.Sprintf("mode(%d)", uint8(m))
}

// ParseMode maps a mode name to its Mode.
func ParseMode(s string) (Mode, error) {
	for _, m := range []Mode{Bound, Derived, Consume} {
		if m.String() == s {
			return m, nil
		}
	}
	return 0, fmt.Errorf("msg: unknown mode %q (want bound, derived or consume)", s)
}

// Tier is the protection of the one exchanged frame.
type Tier uint8

const (
	// Keystream: shares XOR a per-direction keystream; no nonce, no tag.
	// For a semi-honest network only.
	Keystream Tier = 1
	// MAC: AES-GCM under a per-direction key; 36 bytes of overhead per frame.
	MAC Tier = 2
	// BatchMAC: one AES-GCM envelope over all frames of one submission;
	// 36 bytes of overhead per batch.
	BatchMAC Tier = 3
)

func (t Tier) String() string {
	switch t {
	case Keystream:
		return "otp"
	case MAC:
		return "mac"
	case BatchMAC:
		return "batchmac"
	}
	return fmt.Sprintf("tier(%d)", uint8(t))
}

// ParseTier maps a tier name (otp, mac, batchmac) to its Tier.
func ParseTier(s string) (Tier, error) {
	for _, t := range []Tier{Keystream, MAC, BatchMAC} {
		if t.String() == s {
			return t, nil
		}
	}
	return 0, fmt.Errorf("msg: unknown tier %q (want otp, mac or batchmac)", s)
}

// ProvisionRequest drives pairing. The host relays Message between the two
// modules verbatim; it is public (ephemeral public keys, KEM ciphertexts,
// confirmation tags). An empty Message asks party 0 to start.
type ProvisionRequest struct {
	Message []byte
}

// ProvisionResponse carries the next pairing message to relay to the peer
// module (empty when there is none) and whether this module is now paired.
type ProvisionResponse struct {
	Message []byte
	Paired  bool
}

// Share is one key request with this party's own additive shares.
type Share struct {
	Mode    Mode
	Type    fss.Type
	InBits  int // ℓ, 1..64
	OutBits int // n, 1..64
	// AlphaShare and BetaShare are this party's additive shares
	// ⟨α⟩_b mod 2^ℓ and ⟨β⟩_b mod 2^n (Bound and Consume).
	AlphaShare uint64
	BetaShare  uint64
	// Derived mode: when DeriveBeta is false, β is the public value Beta,
	// which both parties must submit alike; when true, β is drawn inside
	// the modules and Beta must be zero.
	DeriveBeta bool
	Beta       uint64
}

// Params returns the key shape of the request.
func (s Share) Params() fss.Params {
	return fss.Params{Type: s.Type, InBits: s.InBits, OutBits: s.OutBits}
}

// SubmitKind says what a SubmitRequest carries.
type SubmitKind uint8

const (
	// SubmitShares: own share requests in, own frames out.
	SubmitShares SubmitKind = 1
	// SubmitPeerFrame: one peer frame in, accepted or rejected.
	SubmitPeerFrame SubmitKind = 2
	// SubmitAbandon: drop every pending request and uncollected output up
	// to and including Counter (a resync after a rejected frame or a peer
	// that gave up); their counters are never reused, their shares and keys
	// are wiped.
	SubmitAbandon SubmitKind = 3
)

// SubmitRequest is either a batch of own share requests under one tier, a
// peer frame, or an abandon.
type SubmitRequest struct {
	Kind    SubmitKind
	Tier    Tier    // SubmitShares: tier of the frames for Bound/Consume
	Shares  []Share // SubmitShares
	Frame   []byte  // SubmitPeerFrame
	Counter uint64  // SubmitAbandon
	// Mismatch (SubmitAbandon): the host abandons because the two modules'
	// pair tags (or their digest) disagreed for outputs up to Counter — a
	// frame was altered in transit, or the sites' requests differed. The
	// module counts and logs it (Poll: Rejects["pair_mismatch"]), so that
	// both sites see a rate of tamper outcomes; the shares behind those
	// outputs are spent and never submitted again.
	Mismatch bool
}

// SubmitResponse answers a SubmitRequest.
type SubmitResponse struct {
	// SubmitShares: the counters FirstCounter … FirstCounter+Count-1 were
	// assigned to the requests in order; Frames are the frames to send to
	// the peer, in order (one per Bound/Consume request, or one in all for
	// BatchMAC, none for Derived).
	FirstCounter uint64
	Count        int
	Frames       [][]byte
	// SubmitPeerFrame: whether the frame was accepted, the counters its
	// keys were generated for, and why it was rejected if it was.
	Accepted bool
	Counters []uint64
	Reject   string
}

// PollRequest asks for the module's status.
type PollRequest struct{}

// PollResponse reports status, counters and reject counts. None of it is
// secret.
type PollResponse struct {
	Party  int
	Paired bool
	KEM    string
	// NextCounter is the next counter to assign to an own request.
	NextCounter uint64
	// PeerFloor is the replay high-water mark: the smallest counter a
	// fresh peer frame may carry.
	PeerFloor uint64
	// Generated counts keys generated; Dispatches counts Gen engine runs.
	Generated  uint64
	Dispatches uint64
	// Pending counts own requests waiting for a peer frame; Ready counts
	// keys waiting for Collect.
	Pending int
	Ready   int
	// Rejects counts rejected peer frames and pairing messages by reason.
	Rejects map[string]uint64
}

// CollectRequest asks for the output at Counter. In Consume mode Points are
// the public points (masked inputs) to evaluate at; the key is wiped after.
type CollectRequest struct {
	Counter uint64
	Points  []uint64
}

// CollectResponse carries this party's output for one counter.
type CollectResponse struct {
	Counter uint64
	Mode    Mode
	// Key is this party's serialized kord-v1 key share (Bound, Derived).
	Key []byte
	// AlphaShare and BetaShare are this party's additive shares of the
	// drawn α and β (Derived; BetaShare only with DeriveBeta, otherwise
	// party 0 holds β and party 1 zero).
	AlphaShare uint64
	BetaShare  uint64
	// Evals are this party's evaluation shares at Points (Consume).
	Evals []uint64
	// PairTag is the pair tag of the output, every mode: the peer
	// module's output at the same counter has the same tag exactly when
	// the two were generated from the same counter, shape, α and β — when
	// they are the two shares of one key pair. Hosts compare tags (or a
	// digest of them) to never hand out a mismatched pair; a tag tells
	// nothing about α or β. See docs/protocol.md.
	PairTag [PairTagSize]byte
}

// PairTagSize is the size of CollectResponse.PairTag.
const PairTagSize = 16
