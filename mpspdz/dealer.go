package mpspdz

import (
	"crypto/aes"
	"crypto/cipher"
	"encoding/binary"
	"fmt"
)

// Dealer is a trusted dealer of semi2k tuples from a seed (AES-256-CTR): it
// draws every value and both players' shares itself, as MP-SPDZ's
// Fake-Offline does. It is the reference the module pair is measured
// against and the source of the known-answer files in testdata; it is not
// dealerless.
type Dealer struct {
	s   cipher.Stream
	buf []byte
}

// NewDealer keys a dealer with seed.
func NewDealer(seed *[32]byte) (*Dealer, error) {
	b, err := aes.NewCipher(seed[:])
	if err != nil {
		return nil, fmt.Errorf("mpspdz: keying the dealer: %w", err)
	}
	return &Dealer{s: cipher.NewCTR(b, make([]byte, aes.BlockSize))}, nil
}

// words fills v with fresh pseudorandom words.
func (d *Dealer) words(v []uint64) {
	if cap(d.buf) < 8*len(v) {
		d.buf = make([]byte, 8*len(v))
	}
	b := d.buf[:8*len(v)]
	clear(b)
	d.s.XORKeyStream(b, b)
	for i := range v {
		v[i] = binary.LittleEndian.Uint64(b[8*i:])
	}
}

// Tuples deals n tuples of kind k: both players' shares, k.Words() per
// tuple, in file order.
func (d *Dealer) Tuples(k Kind, n int) (s [Players][]uint64, err error) {
	if !k.valid() || n < 0 {
		return s, fmt.Errorf("mpspdz: dealer: kind %+v, count %d", k, n)
	}
	w := k.Words()
	v := make([]uint64, w*n)
	s[0] = make([]uint64, w*n)
	d.words(s[0])
	switch k.Name {
	case "Triples":
		d.words(v)
		for i := 0; i < len(v); i += 3 {
			v[i+2] = v[i] * v[i+1]
		}
	case "Squares":
		d.words(v)
		for i := 0; i < len(v); i += 2 {
			v[i+1] = v[i] * v[i]
		}
	case "Bits":
		d.words(v)
		for i := range v {
			v[i] &= 1
		}
	case "Matrix":
		ab := k.M*k.K + k.K*k.N
		for t := 0; t < n; t++ {
			x := v[t*w : (t+1)*w]
			d.words(x[:ab])
			MatMul(k.M, k.K, k.N, x[:k.M*k.K], x[k.M*k.K:ab], x[ab:])
		}
	}
	s[1] = v
	for i := range v {
		v[i] -= s[0][i]
	}
	return s, nil
}

// MatMul sets z to the m×k by k×n product of a and b (row-major, mod 2^64).
func MatMul(m, k, n int, a, b, z []uint64) {
	clear(z[:m*n])
	for i := 0; i < m; i++ {
		zr := z[i*n : (i+1)*n]
		for l, av := range a[i*k : (i+1)*k] {
			for j, bv := range b[l*n : (l+1)*n] {
				zr[j] += av * bv
			}
		}
	}
}
