package kdf

import (
	"bytes"
	"encoding/binary"
	"math/rand/v2"
	"testing"

	"github.com/kord-fss/kord/internal/prg"
)

// refMAC is the documented vector CBC-MAC of one key, written out block
// by block: header (G in byte 13), α ‖ β_0, then β_j ‖ β_{j+1}.
func refMAC(enc func(dst, src []byte), counter uint64, index byte, g int, alpha uint64, beta []uint64) (x [16]byte) {
	binary.LittleEndian.PutUint64(x[0:8], counter)
	x[8], x[9], x[10], x[11], x[12], x[13] = 1, 0x12, 20, 33, index, byte(g)
	enc(x[:], x[:])
	words := append([]uint64{alpha}, beta...)
	if len(words)%2 == 1 {
		words = append(words, 0)
	}
	for k := 0; k < len(words); k += 2 {
		binary.LittleEndian.PutUint64(x[0:8], binary.LittleEndian.Uint64(x[0:8])^words[k])
		binary.LittleEndian.PutUint64(x[8:16], binary.LittleEndian.Uint64(x[8:16])^words[k+1])
		enc(x[:], x[:])
	}
	return x
}

// TestGroupForms pins RootsBatchG, PairTagsG and DerivedBetas to their
// documented blocks, checks that g = 1 is the one-element form, and that
// every payload element and the group size are bound.
func TestGroupForms(t *testing.T) {
	var kr [32]byte
	kr[3] = 5
	p, err := NewPRF(&kr)
	if err != nil {
		t.Fatal(err)
	}
	r := rand.New(rand.NewPCG(5, 6))
	const n = 9
	first := r.Uint64() >> 1
	for _, g := range []int{1, 2, 3, 19, 64} {
		alpha, beta := make([]uint64, n), make([]uint64, n*g)
		for i := range alpha {
			alpha[i] = r.Uint64()
		}
		for i := range beta {
			beta[i] = r.Uint64()
		}
		r0, r1 := make([]prg.Block, n), make([]prg.Block, n)
		tags := make([]byte, n*TagSize)
		p.RootsBatchG(first, 1, 0x12, 20, 33, g, alpha, beta, r0, r1)
		p.PairTagsG(first, 1, 0x12, 20, 33, g, alpha, beta, tags)
		for i := range n {
			c := first + uint64(i)
			if g == 1 {
				w0, w1 := p.Roots(c, 1, 0x12, 20, 33, alpha[i], beta[i])
				var tag [TagSize]byte
				p.PairTag(c, 1, 0x12, 20, 33, alpha[i], beta[i], &tag)
				if w0 != r0[i] || w1 != r1[i] || !bytes.Equal(tag[:], tags[i*TagSize:(i+1)*TagSize]) {
					t.Fatalf("g = 1, key %d: not the one-element roots and tag", i)
				}
				continue
			}
			bi := beta[i*g : (i+1)*g]
			if refMAC(p.root.Encrypt, c, 0, g, alpha[i], bi) != r0[i] || refMAC(p.root.Encrypt, c, 1, g, alpha[i], bi) != r1[i] {
				t.Fatalf("g = %d, key %d: roots are not the documented CBC-MAC", g, i)
			}
			if want := refMAC(p.tag.Encrypt, c, 0, g, alpha[i], bi); !bytes.Equal(want[:], tags[i*TagSize:(i+1)*TagSize]) {
				t.Fatalf("g = %d, key %d: pair tag is not the documented CBC-MAC", g, i)
			}
		}
		if g == 1 {
			continue
		}
		// Every element is bound: changing the last one changes key 0's
		// roots and tag.
		beta[g-1] ^= 1
		s0, s1 := make([]prg.Block, 1), make([]prg.Block, 1)
		tag := make([]byte, TagSize)
		p.RootsBatchG(first, 1, 0x12, 20, 33, g, alpha[:1], beta[:g], s0, s1)
		p.PairTagsG(first, 1, 0x12, 20, 33, g, alpha[:1], beta[:g], tag)
		if s0[0] == r0[0] || s1[0] == r1[0] || bytes.Equal(tag, tags[:TagSize]) {
			t.Fatalf("g = %d: the last payload element is not bound", g)
		}
		beta[g-1] ^= 1
		// The group size is bound: the same words read as a shorter
		// vector (an even g's last element is zero-padded at g−1) differ.
		if g%2 == 0 {
			beta[g-1] = 0
			p.RootsBatchG(first, 1, 0x12, 20, 33, g, alpha[:1], beta[:g], r0[:1], r1[:1])
			p.RootsBatchG(first, 1, 0x12, 20, 33, g-1, alpha[:1], beta[:g-1], s0, s1)
			if s0[0] == r0[0] {
				t.Fatalf("g = %d and g = %d with a zero last element share roots", g, g-1)
			}
		}
	}
	// DerivedBetas: element j ≥ 1 is block 1+j under k_der of the key's
	// description.
	const g = 5
	ds := &DerivedShape{Mode: 3, Type: 0x12, InBits: 20, OutBits: 33, G: g, DeriveBeta: true}
	beta, beta0 := make([]uint64, 3*g), make([]uint64, 3*g)
	p.DerivedBetas(first, ds, beta, beta0)
	for i := range 3 {
		if beta[i*g] != 0 || beta0[i*g] != 0 {
			t.Fatal("DerivedBetas wrote element 0")
		}
		for j := 1; j < g; j++ {
			want := derivedWant(t, &kr, first+uint64(i), ds, 1+j)
			if beta[i*g+j] != binary.LittleEndian.Uint64(want[:8]) || beta0[i*g+j] != binary.LittleEndian.Uint64(want[8:]) {
				t.Fatalf("key %d element %d: not block %d under k_der", i, j, 1+j)
			}
		}
	}
}
