package infer

import (
	"crypto/rand"
	"encoding/binary"
	"fmt"
	"io"
	"sync"

	"github.com/kord-fss/kord/fss"
	"github.com/kord-fss/kord/gates"
)

// BatchDealer is the TRUSTED-DEALER BASELINE at the speed a dealer would
// run it: derived-style key pairs (α drawn, β = 1 or drawn, both split
// into additive shares) generated a batch at a time with fss.BatchGen on
// every core, the same generator the modules use, and parsed into keys.
// gates.DealerSource does the same one key at a time. The dealer sees
// every α and β. Safe for concurrent use (calls are serialised).
type BatchDealer struct {
	// Rand is the dealer's randomness; nil means crypto/rand.
	Rand io.Reader
	mu   sync.Mutex
	gens map[fss.Params]*fss.BatchGen
}

var _ gates.BatchSource = (*BatchDealer)(nil)

// Bound deals one key pair for shared α and β (gates.DealerSource does).
func (d *BatchDealer) Bound(p fss.Params, alpha, beta [2]uint64) ([2]*fss.Key, error) {
	return (&gates.DealerSource{Rand: d.Rand}).Bound(p, alpha, beta)
}

// BoundBatch deals bound key pairs one at a time (not on ResNet's path).
func (d *BatchDealer) BoundBatch(p fss.Params, alpha, beta [2][]uint64) ([2][]*fss.Key, error) {
	var out [2][]*fss.Key
	for i := range alpha[0] {
		k, err := d.Bound(p, [2]uint64{alpha[0][i], alpha[1][i]}, [2]uint64{beta[0][i], beta[1][i]})
		if err != nil {
			return out, err
		}
		out[0], out[1] = append(out[0], k[0]), append(out[1], k[1])
	}
	return out, nil
}

// Derived deals one derived-style key pair.
func (d *BatchDealer) Derived(p fss.Params, wantBeta bool) ([2]*fss.Key, [2]uint64, [2]uint64, error) {
	k, a, b, err := d.DerivedBatch(p, 1, wantBeta)
	if err != nil {
		return [2]*fss.Key{}, [2]uint64{}, [2]uint64{}, err
	}
	return [2]*fss.Key{k[0][0], k[1][0]}, [2]uint64{a[0][0], a[1][0]}, [2]uint64{b[0][0], b[1][0]}, nil
}

// DerivedBatch deals count key pairs with fresh α (and β when wantBeta,
// else 1) and fresh additive shares of both.
func (d *BatchDealer) DerivedBatch(p fss.Params, count int, wantBeta bool) (keys [2][]*fss.Key, as, bs [2][]uint64, err error) {
	if count == 0 {
		return
	}
	if err = p.Validate(); err != nil {
		return
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	g := d.gens[p]
	if g == nil {
		if g, err = fss.NewBatchGen(p, fss.BatchOptions{}); err != nil {
			return
		}
		if d.gens == nil {
			d.gens = map[fss.Params]*fss.BatchGen{}
		}
		d.gens[p] = g
	}
	r := d.Rand
	if r == nil {
		r = rand.Reader
	}
	// per key: α, β, α_0, β_0 (8 bytes each) and two 16-byte roots
	buf := make([]byte, count*64)
	defer clear(buf)
	if _, err = io.ReadFull(r, buf); err != nil {
		return keys, as, bs, fmt.Errorf("infer: dealer randomness: %w", err)
	}
	ma, mb := mask(p.InBits), mask(p.OutBits)
	alpha, beta := make([]uint64, count), make([]uint64, count)
	defer clear(alpha)
	defer clear(beta)
	r0, r1 := make([]fss.Block, count), make([]fss.Block, count)
	defer clear(r0)
	defer clear(r1)
	for b := 0; b < 2; b++ {
		as[b], bs[b] = make([]uint64, count), make([]uint64, count)
	}
	for i := 0; i < count; i++ {
		w := buf[64*i:]
		alpha[i] = binary.LittleEndian.Uint64(w) & ma
		beta[i] = 1 & mb
		if wantBeta {
			beta[i] = binary.LittleEndian.Uint64(w[8:]) & mb
		}
		as[0][i] = binary.LittleEndian.Uint64(w[16:]) & ma
		bs[0][i] = binary.LittleEndian.Uint64(w[24:]) & mb
		as[1][i] = (alpha[i] - as[0][i]) & ma
		bs[1][i] = (beta[i] - bs[0][i]) & mb
		copy(r0[i][:], w[32:48])
		copy(r1[i][:], w[48:64])
	}
	ks := p.KeySize()
	out0, out1 := make([]byte, count*ks), make([]byte, count*ks)
	if err = g.GenWithRoots(alpha, beta, r0, r1, out0, out1); err != nil {
		return
	}
	for b, out := range [][]byte{out0, out1} {
		if keys[b], err = fss.ParseKeys(out, ks, count); err != nil {
			return [2][]*fss.Key{}, as, bs, err
		}
	}
	return keys, as, bs, nil
}
