package infer

import (
	"crypto/rand"
	"encoding/binary"
	"fmt"
	"io"
	"sync"
)

// LinearCorr is one party's share of the correlation of one linear layer
// for one evaluation: additive shares mod 2^ℓ of the input mask R (one word
// per input value), the weight mask A (one word per weight) and their
// product Z = L(A, R) (one word per output), where L is the layer's
// bilinear map. It is single-use: Used is set by the online phase.
type LinearCorr struct {
	R, A, Z []uint64
	used    bool
}

// wipe zeroes the shares.
func (c *LinearCorr) wipe() {
	if c == nil {
		return
	}
	clear(c.R)
	clear(c.A)
	clear(c.Z)
}

// CorrSource supplies the multiplication correlations of linear layers.
// Layer l takes input shape in; the result holds party b's shares at [b].
// Every call returns fresh, independent masks.
type CorrSource interface {
	Linear(l *Layer, in Shape, ring int) ([2]*LinearCorr, error)
}

// DealerCorr is the TRUSTED-DEALER BASELINE (the LLAMA route): one process
// draws A and R, computes Z = L(A, R) in the clear and hands each party its
// shares. The dealer sees every mask, so it must be trusted not to collude
// with either party. kord's own path draws these inside the paired
// key-generation modules instead; DealerCorr stays for comparison and
// tests. Safe for concurrent use.
type DealerCorr struct {
	// Rand is the dealer's randomness; nil means crypto/rand.
	Rand io.Reader
	mu   sync.Mutex
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

// Linear deals one correlation for layer l.
func (d *DealerCorr) Linear(l *Layer, in Shape, ring int) ([2]*LinearCorr, error) {
	var out [2]*LinearCorr
	if !l.Linear() {
		return out, fmt.Errorf("infer: dealer: layer %v has no multiplication", l.Kind)
	}
	nOut := outLen(l, in)
	a, err := d.words(l.weightLen(), ring)
	if err != nil {
		return out, err
	}
	r, err := d.words(in.Len(), ring)
	if err != nil {
		return out, err
	}
	z := make([]uint64, nOut)
	apply(l, in, a, r, z)
	split := func(v []uint64) ([2][]uint64, error) {
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
	as, err := split(a)
	if err != nil {
		return out, err
	}
	rs, err := split(r)
	if err != nil {
		return out, err
	}
	zs, err := split(z)
	if err != nil {
		return out, err
	}
	clear(a)
	clear(r)
	clear(z)
	for b := 0; b < 2; b++ {
		out[b] = &LinearCorr{R: rs[b], A: as[b], Z: zs[b]}
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
