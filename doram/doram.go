// Package doram is a small Floram-style two-party distributed ORAM whose
// accesses are driven by DPF keys generated from a secret-shared index.
//
// Both parties P0 and P1 hold a replicated read-only memory (ROM) of 2^d
// 64-bit words (its initial contents are public to both, as a Floram ROM's
// ciphertexts are) and a stash of secret-shared writes. Every access takes
// the index as additive shares mod 2^d — the index never exists in one
// place — and returns the word as additive shares mod 2^64:
//
//   - ROM read: one DPF key pair with α = i (from the shares, bound mode)
//     and β = 1. Each party evaluates its key on the whole domain and takes
//     the inner product with the ROM: y0 + y1 = ROM[i].
//   - Stash read: for every stash entry (i_k, Δ_k), one DPF key pair with α =
//     r_k, a fresh random mask whose shares the parties draw themselves, and
//     β = Δ_k (shares). The parties open x = i − i_k + r_k (uniform, so it
//     hides i − i_k) and evaluate at x: the shares add to Δ_k·[i = i_k].
//   - Write(i, v): a read of the old value, then a stash entry (i, v − old)
//     kept as shares.
//
// So an access consumes 1 + |stash| key pairs, all of the same shape
// (DPF d→64). Keys come from a KeySource: the dealer-backed DealerSource,
// or ModuleSource, the dealerless key-generation modules in bound mode
// (host.LocalPair.BoundKeys), where neither host ever sees α or β.
//
// Limits (see docs/pir.md): Floram re-encrypts the ROM with the stash folded
// in inside a garbled circuit every √N accesses; kord has no generic 2PC,
// so the ROM stays public and the stash is capped (ErrStashFull). The model
// is semi-honest.
package doram

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"io"

	"github.com/kord-fss/kord/fss"
	"github.com/kord-fss/kord/host"
	"github.com/kord-fss/kord/internal/both"
	"github.com/kord-fss/kord/module/msg"
)

// ErrStashFull reports that the stash reached its capacity.
var ErrStashFull = errors.New("doram: stash is full")

// KeySource supplies DPF key pairs for secret-shared points: pair i shares
// the point function at α = alpha[0][i] + alpha[1][i] mod 2^ℓ with value
// β = beta[0][i] + beta[1][i] mod 2^n. keys[b][i] is party b's share.
type KeySource interface {
	BoundDPFs(ctx context.Context, p fss.Params, alpha, beta [2][]uint64) (keys [2][]*fss.Key, err error)
	Name() string
}

// DealerSource is the trusted-dealer key source: it reconstructs α and β.
type DealerSource struct {
	Rand io.Reader // nil: crypto/rand
}

// Name implements KeySource.
func (DealerSource) Name() string { return "dealer" }

// BoundDPFs implements KeySource.
func (s DealerSource) BoundDPFs(_ context.Context, p fss.Params, alpha, beta [2][]uint64) ([2][]*fss.Key, error) {
	var keys [2][]*fss.Key
	n := len(alpha[0])
	if len(alpha[1]) != n || len(beta[0]) != n || len(beta[1]) != n {
		return keys, errors.New("doram: share lists differ in length")
	}
	keys[0], keys[1] = make([]*fss.Key, n), make([]*fss.Key, n)
	am, bm := mask(p.InBits), mask(p.OutBits)
	for i := 0; i < n; i++ {
		k0, k1, err := fss.Gen(s.Rand, p, (alpha[0][i]+alpha[1][i])&am, (beta[0][i]+beta[1][i])&bm)
		if err != nil {
			return keys, err
		}
		keys[0][i], keys[1][i] = k0, k1
	}
	return keys, nil
}

// ModuleSource is the dealerless key source: a pair of key-generation
// modules in bound mode; α and β exist only as shares outside the modules.
type ModuleSource struct {
	Pair *host.LocalPair
	Tier msg.Tier // 0: msg.MAC
}

// Name implements KeySource.
func (ModuleSource) Name() string { return "module" }

// BoundDPFs implements KeySource.
func (s ModuleSource) BoundDPFs(ctx context.Context, p fss.Params, alpha, beta [2][]uint64) ([2][]*fss.Key, error) {
	tier := s.Tier
	if tier == 0 {
		tier = msg.MAC
	}
	return s.Pair.BoundKeys(ctx, tier, p, alpha, beta)
}

func mask(n int) uint64 {
	if n >= 64 {
		return ^uint64(0)
	}
	return 1<<uint(n) - 1
}

type entry struct{ idx, delta [2]uint64 } // shares, per party

// ORAM is the two parties' state, simulated in one process: everything
// indexed [b] belongs to party b alone, and the only values that cross
// between them are the opened masked differences x.
type ORAM struct {
	d        int
	rom      []uint64
	stash    []entry
	maxStash int
	src      KeySource
	rnd      [2]io.Reader // each party's own randomness for masks
	consumed uint64
}

// New returns an ORAM over the 2^d words of rom (not copied), with room for
// maxStash writes (≤ 0: 2^(d/2), Floram's refresh period).
func New(d int, rom []uint64, maxStash int, src KeySource) (*ORAM, error) {
	if d < 1 || d > 30 {
		return nil, fmt.Errorf("doram: address width %d outside 1..30", d)
	}
	if len(rom) != 1<<uint(d) {
		return nil, fmt.Errorf("doram: ROM of %d words, want 2^%d", len(rom), d)
	}
	if maxStash <= 0 {
		maxStash = 1 << uint(d/2)
	}
	return &ORAM{d: d, rom: rom, maxStash: maxStash, src: src, rnd: [2]io.Reader{rand.Reader, rand.Reader}}, nil
}

// Consumed returns how many key pairs the accesses have used.
func (o *ORAM) Consumed() uint64 { return o.consumed }

// StashLen returns the number of writes in the stash.
func (o *ORAM) StashLen() int { return len(o.stash) }

// KeysPerAccess returns the key pairs the next access will consume.
func (o *ORAM) KeysPerAccess() int { return 1 + len(o.stash) }

// Read returns additive shares (mod 2^64) of the word at the index whose
// additive shares (mod 2^d) are idx.
func (o *ORAM) Read(ctx context.Context, idx [2]uint64) ([2]uint64, error) {
	keys, masks, err := o.fetchKeys(ctx, idx)
	if err != nil {
		return [2]uint64{}, err
	}
	return o.evaluate(idx, keys, masks)
}

// Write sets the word at the shared index idx to the shared value v (shares
// mod 2^64), obliviously; it returns the old value's shares.
func (o *ORAM) Write(ctx context.Context, idx, v [2]uint64) ([2]uint64, error) {
	if len(o.stash) >= o.maxStash {
		return [2]uint64{}, fmt.Errorf("%w: %d writes", ErrStashFull, o.maxStash)
	}
	old, err := o.Read(ctx, idx)
	if err != nil {
		return old, err
	}
	o.stash = append(o.stash, entry{idx: idx, delta: [2]uint64{v[0] - old[0], v[1] - old[1]}})
	return old, nil
}

// fetchKeys asks the key source for this access's key pairs.
func (o *ORAM) fetchKeys(ctx context.Context, idx [2]uint64) ([2][]*fss.Key, [2][]uint64, error) {
	n := 1 + len(o.stash)
	var alpha, beta, masks [2][]uint64
	am := mask(o.d)
	for b := 0; b < 2; b++ {
		alpha[b] = make([]uint64, n)
		beta[b] = make([]uint64, n)
		masks[b] = make([]uint64, len(o.stash))
		alpha[b][0] = idx[b] & am
		beta[b][0] = uint64(b) // β = 0 + 1
		for k, e := range o.stash {
			r, err := randWord(o.rnd[b])
			if err != nil {
				return [2][]*fss.Key{}, masks, err
			}
			masks[b][k] = r & am
			alpha[b][1+k] = r & am
			beta[b][1+k] = e.delta[b]
		}
	}
	keys, err := o.src.BoundDPFs(ctx, fss.Params{Type: fss.DPF, InBits: o.d, OutBits: 64}, alpha, beta)
	return keys, masks, err
}

// evaluate runs both parties' local work for one access (in parallel, as
// two machines would) and returns their output shares.
func (o *ORAM) evaluate(idx [2]uint64, keys [2][]*fss.Key, masks [2][]uint64) ([2]uint64, error) {
	am := mask(o.d)
	// The opened values x_k = Σ_b (idx_b − i_k,b + r_k,b): each party sends
	// its summand; both learn x_k and nothing else.
	xs := make([]uint64, len(o.stash))
	for k, e := range o.stash {
		for b := 0; b < 2; b++ {
			xs[k] += idx[b] - e.idx[b] + masks[b][k]
		}
		xs[k] &= am
	}
	var out [2]uint64
	err := both.Each(func(b int) (err error) {
		out[b], err = o.party(b, keys[b], xs)
		return err
	})
	o.consumed += uint64(len(keys[0]))
	for b := 0; b < 2; b++ {
		for _, k := range keys[b] {
			k.Wipe()
		}
	}
	return out, err
}

// party is party b's local work: a full-domain evaluation against the ROM
// and one point evaluation per stash entry.
func (o *ORAM) party(b int, keys []*fss.Key, xs []uint64) (uint64, error) {
	y := make([]uint64, len(o.rom))
	if err := keys[0].EvalAll(y); err != nil {
		return 0, err
	}
	var z uint64
	for j, w := range o.rom {
		z += y[j] * w
	}
	for k, x := range xs {
		v, err := keys[1+k].Eval(x)
		if err != nil {
			return 0, err
		}
		z += v
	}
	return z, nil
}

func randWord(r io.Reader) (uint64, error) {
	var b [8]byte
	if _, err := io.ReadFull(r, b[:]); err != nil {
		return 0, fmt.Errorf("doram: randomness: %w", err)
	}
	return binary.LittleEndian.Uint64(b[:]), nil
}
