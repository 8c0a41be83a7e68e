package infer

import (
	"crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"sync"
)

// WeightMask is a fresh weight mask A for one linear layer: party b's
// additive shares A[b] (mod 2^ℓ, one word per weight) and the source's
// handle for drawing input correlations against it. A session opens the
// layer's weights once as Ŵ = W + A and keeps its share of A.
type WeightMask struct {
	Handle uint64
	A      [2][]uint64
}

// LinearCorr is one party's share of the per-evaluation correlation of one
// linear layer against the session's weight mask A: additive shares mod
// 2^ℓ of a fresh input mask R (one word per input value) and of
// Z = L(A, R) (one word per output), where L is the layer's bilinear map.
// It is single-use.
type LinearCorr struct {
	R, Z []uint64
	used bool
}

// wipe zeroes the shares.
func (c *LinearCorr) wipe() {
	if c == nil {
		return
	}
	clear(c.R)
	clear(c.Z)
}

// CorrSource supplies the multiplication correlations of linear layers.
// Layer l takes input shape in. Weights draws a fresh weight mask; Input
// draws a fresh input mask R with both parties' shares of Z = L(A, R)
// for a weight mask Weights returned.
type CorrSource interface {
	Weights(l *Layer, in Shape, ring int) (*WeightMask, error)
	Input(w *WeightMask, l *Layer, in Shape, ring int) ([2]*LinearCorr, error)
}

// DealerCorr is the TRUSTED-DEALER BASELINE (the LLAMA route): one process
// draws A and R, computes Z = L(A, R) in the clear and hands each party its
// shares; it keeps every weight mask it drew (for Input) for its lifetime.
// The dealer sees every mask, so it must be trusted not to collude with
// either party. kord's own path (ModuleCorr) draws these inside the paired
// key-generation modules instead; DealerCorr stays for comparison and
// tests. Safe for concurrent use.
type DealerCorr struct {
	// Rand is the dealer's randomness; nil means crypto/rand.
	Rand    io.Reader
	mu      sync.Mutex
	weights map[uint64][]uint64
	next    uint64
}

func (d *DealerCorr) words(n, ring int) ([]uint64, error) {
	buf := make([]byte, 8*n)
	r := d.Rand
	if r == nil {
		r = rand.Reader
	}
	d.mu.Lock()
	_, err := io.ReadFull(r, buf)
	d.mu.Unlock()
	if err != nil {
		return nil, fmt.Errorf("infer: dealer randomness: %w", err)
	}
	out := make([]uint64, n)
	for i := range out {
		out[i] = binary.LittleEndian.Uint64(buf[8*i:]) & mask(ring)
	}
	clear(buf)
	return out, nil
}

// split returns fresh additive shares of v.
func (d *DealerCorr) split(v []uint64, ring int) ([2][]uint64, error) {
	s0, err := d.words(len(v), ring)
	if err != nil {
		return [2][]uint64{}, err
	}
	s1 := make([]uint64, len(v))
	for i := range v {
		s1[i] = (v[i] - s0[i]) & mask(ring)
	}
	return [2][]uint64{s0, s1}, nil
}

// Weights deals a weight mask for layer l.
func (d *DealerCorr) Weights(l *Layer, in Shape, ring int) (*WeightMask, error) {
	if !l.Linear() {
		return nil, fmt.Errorf("infer: dealer: layer %v has no multiplication", l.Kind)
	}
	a, err := d.words(l.weightLen(), ring)
	if err != nil {
		return nil, err
	}
	as, err := d.split(a, ring)
	if err != nil {
		return nil, err
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.weights == nil {
		d.weights = map[uint64][]uint64{}
	}
	d.next++
	d.weights[d.next] = a
	return &WeightMask{Handle: d.next, A: as}, nil
}

// Input deals a fresh input mask and Z = L(A, R) for weight mask w.
func (d *DealerCorr) Input(w *WeightMask, l *Layer, in Shape, ring int) ([2]*LinearCorr, error) {
	var out [2]*LinearCorr
	if w == nil || !l.Linear() {
		return out, errors.New("infer: dealer: an input correlation needs a linear layer and its weight mask")
	}
	d.mu.Lock()
	a, ok := d.weights[w.Handle]
	d.mu.Unlock()
	if !ok || len(a) != l.weightLen() {
		return out, errors.New("infer: dealer: unknown weight mask for this layer")
	}
	r, err := d.words(in.Len(), ring)
	if err != nil {
		return out, err
	}
	z := make([]uint64, outLen(l, in))
	applyFast(l, in, a, r, z, ring)
	for i := range z {
		z[i] &= mask(ring)
	}
	rs, err := d.split(r, ring)
	if err != nil {
		return out, err
	}
	zs, err := d.split(z, ring)
	if err != nil {
		return out, err
	}
	clear(r)
	clear(z)
	for b := 0; b < 2; b++ {
		out[b] = &LinearCorr{R: rs[b], Z: zs[b]}
	}
	return out, nil
}

// outLen is the output length of a linear layer on input shape in.
func outLen(l *Layer, in Shape) int {
	if l.Kind == FC {
		return l.Out
	}
	return l.Out * (in.H - l.K + 1) * (in.W - l.K + 1)
}
