package kdf

import (
	"bytes"
	"math/rand/v2"
	"testing"

	"github.com/kord-fss/kord/internal/prg"
)

// TestBatchFormsMatchOneKey pins RootsBatch, PairTags and DerivedBatch to
// Roots, PairTag and Derived, block for block.
func TestBatchFormsMatchOneKey(t *testing.T) {
	var kr [32]byte
	kr[0], kr[31] = 7, 9
	p, err := NewPRF(&kr)
	if err != nil {
		t.Fatal(err)
	}
	r := rand.New(rand.NewPCG(3, 4))
	const n = 37
	first := r.Uint64()
	alpha, beta := make([]uint64, n), make([]uint64, n)
	for i := range alpha {
		alpha[i], beta[i] = r.Uint64(), r.Uint64()
	}
	r0, r1 := make([]prg.Block, n), make([]prg.Block, n)
	tags := make([]byte, n*TagSize)
	a, a0, b, b0 := make([]uint64, n), make([]uint64, n), make([]uint64, n), make([]uint64, n)
	p.RootsBatch(first, 1, 2, 32, 17, alpha, beta, r0, r1)
	p.PairTags(first, 1, 2, 32, 17, alpha, beta, tags)
	ds := &DerivedShape{Mode: 3, Type: 2, InBits: 32, OutBits: 17, DeriveBeta: true}
	p.DerivedBatch(first, ds, a, a0, b, b0)
	for i := range n {
		c := first + uint64(i)
		w0, w1 := p.Roots(c, 1, 2, 32, 17, alpha[i], beta[i])
		if w0 != r0[i] || w1 != r1[i] {
			t.Fatalf("key %d: batch roots differ from Roots", i)
		}
		var tag [TagSize]byte
		p.PairTag(c, 1, 2, 32, 17, alpha[i], beta[i], &tag)
		if string(tag[:]) != string(tags[i*TagSize:(i+1)*TagSize]) {
			t.Fatalf("key %d: batch tag differs from PairTag", i)
		}
		x, x0, y, y0 := p.Derived(c, ds)
		if x != a[i] || x0 != a0[i] || y != b[i] || y0 != b0[i] {
			t.Fatalf("key %d: batch derived values differ from Derived", i)
		}
	}
}

// TestMultiMatchesCryptoAES pins the multi-block cipher (each kernel this
// CPU has) to crypto/aes, for counts of blocks around both kernels
// strides (8 and 32 blocks).
func TestMultiMatchesCryptoAES(t *testing.T) {
	r := rand.New(rand.NewPCG(8, 9))
	for trial := range 8 {
		var key [32]byte
		for i := range key {
			key[i] = byte(r.Uint32())
		}
		m, err := newMulti(&key)
		if err != nil {
			t.Fatal(err)
		}
		if trial%2 == 1 {
			withoutWideKernel(m) // the narrower kernel too, where there is a choice
		}
		ref, _ := newPortable(&key)
		for _, n := range []int{0, 1, 7, 8, 9, 15, 16, 17, 31, 32, 33, 40, 63, 64, 65, 100, 130} {
			buf := make([]byte, 16*n)
			for i := range buf {
				buf[i] = byte(r.Uint32())
			}
			want := bytes.Clone(buf)
			ref.encrypt(want)
			m.encrypt(buf)
			if !bytes.Equal(buf, want) {
				t.Fatalf("trial %d, %d blocks: multi-block AES-256 differs from crypto/aes", trial, n)
			}
		}
	}
}
