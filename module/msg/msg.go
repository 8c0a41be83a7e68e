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
	"strings"

	"github.com/kord-fss/kord/fss"
	"github.com/kord-fss/kord/fss/llama"
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

var modes = enum[Mode]{"mode", []Mode{Bound, Derived, Consume}, []string{"bound", "derived", "consume"}}

func (m Mode) String() string { return modes.name(m) }

// ParseMode maps a mode name to its Mode.
func ParseMode(s string) (Mode, error) { return modes.parse(s) }

// enum names the values of a small enumeration (Mode, Tier): String and
// Parse read the one table, so a name and its parse cannot drift apart.
type enum[T ~uint8] struct {
	kind  string // the noun of an unknown value ("mode(9)") and of the parse error
	vals  []T
	names []string // names[i] is vals[i]'s
}

func (e enum[T]) name(v T) string {
	for i, x := range e.vals {
		if x == v {
			return e.names[i]
		}
	}
	return fmt.Sprintf("%s(%d)", e.kind, uint8(v))
}

func (e enum[T]) parse(s string) (T, error) {
	for i, n := range e.names {
		if n == s {
			return e.vals[i], nil
		}
	}
	last := len(e.names) - 1
	return 0, fmt.Errorf("msg: unknown %s %q (want %s or %s)", e.kind, s, strings.Join(e.names[:last], ", "), e.names[last])
}

// Profile is the key format a request asks for; it is part of the key's
// shape. The zero value is kord-v1, so a request that names no profile is
// exactly what it was before profiles existed.
type Profile uint8

const (
	// KordV1 is kord's own key format (docs/keyformat.md), DPF and DCF.
	KordV1 Profile = 0
	// Llama is EzPC LLAMA's DCF (package fss/llama): DCF only, one payload
	// element (group 1) or, in a bulk, a payload vector (Bulk.Group), the
	// key in LLAMA's headerless layout, party 0 = LLAMA's server key.
	Llama Profile = 1
)

func (p Profile) String() string {
	switch p {
	case KordV1:
		return "kord-v1"
	case Llama:
		return "llama"
	}
	return fmt.Sprintf("profile(%d)", uint8(p))
}

// ParseProfile maps a profile name (kord-v1, llama; "" is kord-v1) to its
// Profile.
func ParseProfile(s string) (Profile, error) {
	switch s {
	case "", "kord-v1":
		return KordV1, nil
	case "llama":
		return Llama, nil
	}
	return 0, fmt.Errorf("msg: unknown key profile %q (want kord-v1 or llama)", s)
}

// CheckShape reports whether profile pr can make keys of shape p, naming
// what is wrong: kord-v1 takes any valid fss.Params, llama only DCFs.
func CheckShape(pr Profile, p fss.Params) error {
	switch pr {
	case KordV1:
		return p.Validate()
	case Llama:
		if p.Type != fss.DCF {
			return fmt.Errorf("msg: the llama profile has only DCF keys (LLAMA's FSS has no DPF), got type %v", p.Type)
		}
		return LlamaParams(p).Validate()
	}
	return fmt.Errorf("msg: unknown key profile %d (want 0 kord-v1 or 1 llama)", uint8(pr))
}

// LlamaParams is the llama shape of a llama-profile key of shape p with
// one payload element (LLAMA's groupSize 1).
func LlamaParams(p fss.Params) llama.Params { return LlamaParamsG(p, 1) }

// LlamaParamsG is the llama shape of a llama-profile key of shape p whose
// payload β is a vector of group elements (0 counts as 1).
func LlamaParamsG(p fss.Params, group int) llama.Params {
	return llama.Params{InBits: p.InBits, OutBits: p.OutBits, Group: max(group, 1)}
}

// KeySize is the length of one serialized key of profile pr and shape p
// with one payload element (CheckShape(pr, p) must hold).
func KeySize(pr Profile, p fss.Params) int { return KeySizeG(pr, p, 1) }

// KeySizeG is KeySize for a payload of group elements (0 counts as 1;
// more than one only for llama, CheckGroup).
func KeySizeG(pr Profile, p fss.Params, group int) int {
	if pr == Llama {
		return LlamaParamsG(p, group).KeySize()
	}
	return p.KeySize()
}

// MaxGroup bounds the payload vector of a module-made key (Bulk.Group):
// LLAMA's own vectors go to 19 elements, a ReLU key pack takes 2. A key of
// MaxGroup 64-bit elements is about 35 KB.
const MaxGroup = 64

// MaxSlabBytes bounds the key bytes of one bulk (N · key size): it never
// binds a one-element payload (16384 of the largest keys are 25 MB) and
// keeps a vector-payload bulk's frame, scratch and slab bounded.
const MaxSlabBytes = 32 << 20

// CheckGroup reports whether profile pr takes a payload of group elements:
// 0 and 1 (one element) for every profile, 2..MaxGroup for llama only.
func CheckGroup(pr Profile, group int) error {
	switch {
	case group < 0 || group > MaxGroup:
		return fmt.Errorf("msg: payload group %d is outside 1..%d", group, MaxGroup)
	case group > 1 && pr != Llama:
		return fmt.Errorf("msg: a payload vector (group %d) needs the llama profile, not %v", group, pr)
	}
	return nil
}

// TypeByte is the byte that stands for a key's type wherever the module
// binds a shape (frame associated data, pair tags, root derivation): the
// fss.Type in the low four bits and the profile in the high four. A
// kord-v1 key's byte is its fss.Type alone, so kord-v1 frames, tags and
// roots are the bytes they were before profiles existed.
func TypeByte(pr Profile, t fss.Type) byte { return byte(t) | byte(pr)<<4 }

// TypeLabel names a type byte (TypeByte) for metrics and logs: the type
// alone for kord-v1 ("dpf", "dcf"), the type and the profile for any
// other ("dcf-llama").
func TypeLabel(b byte) string {
	t, pr := fss.Type(b&15), Profile(b>>4)
	if pr == KordV1 {
		return t.String()
	}
	return t.String() + "-" + pr.String()
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

var tiers = enum[Tier]{"tier", []Tier{Keystream, MAC, BatchMAC}, []string{"otp", "mac", "batchmac"}}

func (t Tier) String() string { return tiers.name(t) }

// ParseTier maps a tier name (otp, mac, batchmac) to its Tier.
func ParseTier(s string) (Tier, error) { return tiers.parse(s) }

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
	Profile Profile // key format; zero = kord-v1
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
	// SubmitBulk: Bulk keys of one shape (Bulk) under one tier; at most
	// one own frame out (bound mode), none (derived mode). See Bulk.
	SubmitBulk SubmitKind = 4
)

// SubmitRequest is either a batch of own share requests under one tier, a
// peer frame, or an abandon.
type SubmitRequest struct {
	Kind    SubmitKind
	Tier    Tier    // SubmitShares: tier of the frames for Bound/Consume
	Shares  []Share // SubmitShares
	Bulk    *Bulk   // SubmitBulk
	Frame   []byte  // SubmitPeerFrame
	Counter uint64  // SubmitAbandon
	// Corr (SubmitCorrelation): one derived multiplication correlation;
	// see Correlation.
	Corr *Correlation
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
//
// A range collect (Count > 0) asks for the outputs of one bulk submission
// at once: Counter must be its first counter and Count its N; the answer
// is CollectResponse.Slab.
type CollectRequest struct {
	Counter uint64
	Points  []uint64
	Count   int
	// Corr asks for the correlation submitted at Counter
	// (SubmitCorrelation); the answer is CollectResponse.Corr.
	Corr bool
	// Expect (a range collect, Count > 0): the bulk request the caller
	// answers, as submitted (a re-collect after a party restart). The
	// module hands out the slab only if it was generated for exactly that
	// request, and refuses the collect otherwise. Nil: no check. Expect.N
	// is the bulk's N; in bound mode its shares are those of keys
	// ExpectAt… of the bulk (at least one key: the ones the caller
	// answers), in derived mode it has none.
	Expect   *Bulk
	ExpectAt int
}

// CollectResponse carries this party's output for one counter.
type CollectResponse struct {
	Counter uint64
	Mode    Mode
	// Key is this party's serialized key share (Bound, Derived), in the
	// request's profile: kord-v1, or LLAMA's layout for llama.
	Key []byte
	// AlphaShare and BetaShare are this party's additive shares of the
	// drawn α and β (Derived; BetaShare only with DeriveBeta, otherwise
	// party 0 holds β and party 1 zero).
	AlphaShare uint64
	BetaShare  uint64
	// BetaShares are this party's shares of each element of a drawn
	// payload vector (a party daemon's reply to a derived llama request
	// with derive_beta and a group ≥ 2; BetaShare is then 0).
	BetaShares []uint64
	// Evals are this party's evaluation shares at Points (Consume).
	Evals []uint64
	// PairTag is the pair tag of the output, every mode: the peer
	// module's output at the same counter has the same tag exactly when
	// the two were generated from the same counter, shape, α and β — when
	// they are the two shares of one key pair. Hosts compare tags (or a
	// digest of them) to never hand out a mismatched pair; a tag tells
	// nothing about α or β. See docs/protocol.md.
	PairTag [PairTagSize]byte
	// Slab is the answer to a range collect (CollectRequest.Count > 0);
	// every other field is then zero.
	Slab *Slab
	// Corr is the answer to a correlation collect (CollectRequest.Corr);
	// every other field but Counter is then zero.
	Corr *CorrShares
}

// PairTagSize is the size of CollectResponse.PairTag.
const PairTagSize = 16

// MaxShares bounds the shares of one SubmitShares request. A host that
// must move its module past more counters (a skipped batch) submits them
// in requests of at most MaxShares.
const MaxShares = 4096

// MaxBulk bounds Bulk.N: a slab of the largest shape (64-bit DCF keys,
// about 1.2 KiB each) stays under 20 MiB.
const MaxBulk = 16384

// Bulk is a request for N keys of one shape: one counter reservation, one
// frame and one slab for all of them.
//
// Bound mode (N share pairs at once): AlphaShares and BetaShares hold
// this party's N additive shares, ⟨α_i⟩ mod 2^ℓ and ⟨β_i⟩ mod 2^n; the
// keys take the counters FirstCounter … FirstCounter+N-1 in order. The one
// own frame carries them all: it is the bytes of the frames the one-key
// path (SubmitShares) sends for the same N requests, concatenated, so
// every tier keeps its format and its cost on the wire:
//
//   - otp (Keystream): the N keystream-tier frames of the keys
//     (N · (⌈ℓ/8⌉+⌈n/8⌉) bytes);
//   - mac: the N one-key envelopes, each at its own counter (36 bytes of
//     overhead per key);
//   - batchmac: one envelope over the N share pairs at the first counter
//     (36 bytes per bulk).
//
// The peer host must submit a Bulk of the same shape, N and tier, and
// forward the one peer frame; it is accepted or rejected as a whole.
//
// Derived mode: AlphaShares and BetaShares must be empty; Beta and
// DeriveBeta are as in Share, for every key. No frame.
type Bulk struct {
	Mode    Mode    // Bound or Derived
	Profile Profile // key format; zero = kord-v1
	Type    fss.Type
	InBits  int // ℓ, 1..64
	OutBits int // n, 1..64
	N       int // 1..MaxBulk
	// Group is the number of payload elements of each key's β (LLAMA's
	// groupSize): 0 or 1 for one element, 2..MaxGroup (llama profile only)
	// for a vector. With a vector, BetaShares holds N·Group shares (key
	// i's at [i·Group:(i+1)·Group]), and a derived bulk's public payload
	// is Betas (Group elements, Beta zero) or, with DeriveBeta, Group
	// elements drawn per key; the frames carry every element, and Group is
	// bound in the frames' associated data, the pair tags and the roots.
	Group int
	// Bound: this party's shares, N each (N·Group with a vector).
	AlphaShares, BetaShares []uint64
	// Derived: see Share. Betas is the public payload vector (Group ≥ 2),
	// alike at both parties.
	DeriveBeta bool
	Beta       uint64
	Betas      []uint64
}

// G is the bulk's payload group size: Group, or 1 when Group is 0.
func (b *Bulk) G() int { return max(b.Group, 1) }

// Params returns the key shape of the request.
func (b *Bulk) Params() fss.Params {
	return fss.Params{Type: b.Type, InBits: b.InBits, OutBits: b.OutBits}
}

// Slab is this party's outputs of one bulk submission: N keys of one
// shape, at counters First … First+N-1.
//
// Key i is Keys[i·Stride : (i+1)·Stride], a serialized key share of
// Profile (Stride = KeySizeG(Profile, Params, Group)). AlphaShares and
// BetaShares (derived mode, N each, BetaShares N·Group with a payload
// vector; empty in bound mode) are this party's shares of the drawn α_i
// and β_i, as CollectResponse.AlphaShare and BetaShare. PairTags holds key
// i's pair tag at [i·PairTagSize : (i+1)·PairTagSize]: the two parties'
// slabs pair exactly when their PairTags are equal.
//
// A Slab's secrets belong to whoever holds it: Wipe clears them.
type Slab struct {
	First       uint64
	N           int
	Mode        Mode
	Profile     Profile
	Params      fss.Params
	Group       int // payload elements per key (0 or 1: one; Bulk.Group)
	Stride      int
	Keys        []byte
	AlphaShares []uint64
	BetaShares  []uint64
	PairTags    []byte
}

// Key returns key i's bytes (a slice of Keys, not a copy).
func (s *Slab) Key(i int) []byte { return s.Keys[i*s.Stride : (i+1)*s.Stride : (i+1)*s.Stride] }

// PairTag returns key i's pair tag (a slice of PairTags).
func (s *Slab) PairTag(i int) []byte {
	return s.PairTags[i*PairTagSize : (i+1)*PairTagSize : (i+1)*PairTagSize]
}

// Check reports whether the slab's fields agree with each other: N keys
// of Stride bytes, N pair tags, and N shares of each or none.
func (s *Slab) Check() error {
	if s.N < 1 || s.N > MaxBulk {
		return fmt.Errorf("msg: slab N %d, want 1..%d", s.N, MaxBulk)
	}
	if err := CheckShape(s.Profile, s.Params); err != nil {
		return fmt.Errorf("msg: slab Params: %w", err)
	}
	if err := CheckGroup(s.Profile, s.Group); err != nil {
		return fmt.Errorf("msg: slab Group: %w", err)
	}
	if ks := KeySizeG(s.Profile, s.Params, s.Group); s.Stride != ks {
		return fmt.Errorf("msg: slab Stride %d, want %d for %v %v group %d", s.Stride, ks, s.Profile, s.Params, max(s.Group, 1))
	}
	if len(s.Keys) != s.N*s.Stride {
		return fmt.Errorf("msg: slab Keys is %d bytes, want %d", len(s.Keys), s.N*s.Stride)
	}
	if len(s.PairTags) != s.N*PairTagSize {
		return fmt.Errorf("msg: slab PairTags is %d bytes, want %d", len(s.PairTags), s.N*PairTagSize)
	}
	if a, b, g := len(s.AlphaShares), len(s.BetaShares), max(s.Group, 1); (a != 0 || b != 0) && (a != s.N || b != s.N*g) {
		return fmt.Errorf("msg: slab has %d α and %d β shares, want %d and %d or none", a, b, s.N, s.N*g)
	}
	return nil
}

// Wipe clears the slab's key shares and mask shares (one pass over each
// buffer).
func (s *Slab) Wipe() {
	clear(s.Keys)
	clear(s.AlphaShares)
	clear(s.BetaShares)
}
