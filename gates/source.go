package gates

import (
	"crypto/rand"
	"encoding/binary"
	"fmt"
	"io"
	"sync"

	"github.com/kord-fss/kord/fss"
)

// KeySource supplies dealerless key pairs. Key share k[b] belongs to party b.
//
// Bound mode: each party submits additive shares of α (mod 2^ℓ) and β
// (mod 2^n); the pair shares f(α, β) and nobody learns α or β.
//
// Derived mode: α (and, when wantBeta is true, β) is drawn inside the
// key-generation modules; each party receives its key share and its
// additive share of α (and β). When wantBeta is false, β = 1. Derived keys
// cost no network bytes.
type KeySource interface {
	Bound(p fss.Params, alpha, beta [2]uint64) (k [2]*fss.Key, err error)
	Derived(p fss.Params, wantBeta bool) (k [2]*fss.Key, alphaShares, betaShares [2]uint64, err error)
}

// DealerSource is the trusted-dealer BASELINE: it reconstructs α and β from
// the submitted shares (or draws them) and calls fss.Gen. It produces the
// same keys and shares a pair of key-generation modules would, but the
// dealer sees every secret. It exists for tests, benchmarks and as the
// reference the module adapter is checked against.
type DealerSource struct {
	// Rand is the randomness for roots, derived points and shares; nil
	// means crypto/rand. DealerSource is safe for concurrent use.
	Rand io.Reader
	mu   sync.Mutex
}

func (d *DealerSource) rnd() io.Reader {
	if d.Rand == nil {
		return rand.Reader
	}
	return d.Rand
}

func (d *DealerSource) word(bits int) (uint64, error) {
	var b [8]byte
	d.mu.Lock()
	_, err := io.ReadFull(d.rnd(), b[:])
	d.mu.Unlock()
	if err != nil {
		return 0, fmt.Errorf("gates: dealer randomness: %w", err)
	}
	return binary.LittleEndian.Uint64(b[:]) & mask(bits), nil
}

// Bound reconstructs α = α0+α1 and β = β0+β1 and deals a key pair.
func (d *DealerSource) Bound(p fss.Params, alpha, beta [2]uint64) (k [2]*fss.Key, err error) {
	if err := p.Validate(); err != nil {
		return k, err
	}
	a := (alpha[0] + alpha[1]) & mask(p.InBits)
	bt := (beta[0] + beta[1]) & mask(p.OutBits)
	d.mu.Lock()
	k[0], k[1], err = fss.Gen(d.rnd(), p, a, bt)
	d.mu.Unlock()
	return k, err
}

// Derived draws α (and β when wantBeta, else β = 1), deals a key pair and
// splits α and β into fresh additive shares.
func (d *DealerSource) Derived(p fss.Params, wantBeta bool) (k [2]*fss.Key, as, bs [2]uint64, err error) {
	if err = p.Validate(); err != nil {
		return
	}
	var a, bt, a0, b0 uint64
	if a, err = d.word(p.InBits); err != nil {
		return
	}
	bt = 1 & mask(p.OutBits)
	if wantBeta {
		if bt, err = d.word(p.OutBits); err != nil {
			return
		}
	}
	if a0, err = d.word(p.InBits); err != nil {
		return
	}
	if b0, err = d.word(p.OutBits); err != nil {
		return
	}
	as = [2]uint64{a0, (a - a0) & mask(p.InBits)}
	bs = [2]uint64{b0, (bt - b0) & mask(p.OutBits)}
	d.mu.Lock()
	k[0], k[1], err = fss.Gen(d.rnd(), p, a, bt)
	d.mu.Unlock()
	return
}

// KeyUse records one key of a complement: its shape and how it was made.
type KeyUse struct {
	Params  fss.Params
	Derived bool
}

// Meter wraps a KeySource and records every key it hands out, so the
// offline cost of a complement is counted from what was actually
// requested, not from a formula.
type Meter struct {
	Src KeySource
	// WireBytes, when set, returns the module protocol's offline bytes per
	// party for one key; nil means the keystream-tier cost: ⌈ℓ/8⌉+⌈n/8⌉
	// for a bound key, 0 for a derived key.
	WireBytes func(p fss.Params, derived bool) int

	mu   sync.Mutex
	uses []KeyUse
}

// Bound forwards to the wrapped source and records the key.
func (m *Meter) Bound(p fss.Params, alpha, beta [2]uint64) ([2]*fss.Key, error) {
	m.record(p, false)
	return m.Src.Bound(p, alpha, beta)
}

// Derived forwards to the wrapped source and records the key.
func (m *Meter) Derived(p fss.Params, wantBeta bool) ([2]*fss.Key, [2]uint64, [2]uint64, error) {
	m.record(p, true)
	return m.Src.Derived(p, wantBeta)
}

func (m *Meter) record(p fss.Params, derived bool) {
	m.mu.Lock()
	m.uses = append(m.uses, KeyUse{p, derived})
	m.mu.Unlock()
}

// Reset forgets the recorded keys.
func (m *Meter) Reset() { m.mu.Lock(); m.uses = nil; m.mu.Unlock() }

// Uses returns a copy of the recorded keys.
func (m *Meter) Uses() []KeyUse {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]KeyUse(nil), m.uses...)
}

// Bytes returns the offline wire bytes per party over all recorded keys.
func (m *Meter) Bytes() int {
	total := 0
	for _, u := range m.Uses() {
		if m.WireBytes != nil {
			total += m.WireBytes(u.Params, u.Derived)
		} else {
			total += KeystreamBytes(u.Params, u.Derived)
		}
	}
	return total
}

// KeystreamBytes is the module protocol's offline wire cost per party for
// one key in the keystream tier: ⌈ℓ/8⌉+⌈n/8⌉ bytes in bound mode (the
// masked shares of α and β), 0 in derived mode.
func KeystreamBytes(p fss.Params, derived bool) int {
	if derived {
		return 0
	}
	return (p.InBits+7)/8 + (p.OutBits+7)/8
}
