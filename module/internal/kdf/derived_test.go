package kdf

import (
	"crypto/aes"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/binary"
	"testing"
)

// derivedWant computes block j of the derived key at counter with shape
// s from its definition (derived.go) with crypto/aes alone.
func derivedWant(t *testing.T, kr *[32]byte, counter uint64, s *DerivedShape, j int) (out [16]byte) {
	t.Helper()
	root, err := aes.NewCipher(kr[:])
	if err != nil {
		t.Fatal(err)
	}
	var k [32]byte
	for i := range 2 {
		var in [16]byte
		in[0], in[9] = DomainDerivedKey, byte(i)
		root.Encrypt(k[16*i:16*i+16], in[:])
	}
	b, err := aes.NewCipher(k[:])
	if err != nil {
		t.Fatal(err)
	}
	var in [16]byte
	binary.LittleEndian.PutUint64(in[:8], counter)
	in[8], in[9], in[10], in[11], in[12] = s.Mode, s.Type, s.InBits, s.OutBits, byte(j)
	in[13] = byte(max(s.G, 1))
	if s.DeriveBeta {
		in[14] = 1
	}
	b.Encrypt(out[:], in[:])
	return out
}

// corrWant computes words 0…n−1 of the draw of d and its tag from their
// definition (corr.go) with crypto/aes and crypto/hmac alone.
func corrWant(t *testing.T, kr *[32]byte, d *CorrDesc, n int) ([]uint64, [TagSize]byte) {
	t.Helper()
	root, err := aes.NewCipher(kr[:])
	if err != nil {
		t.Fatal(err)
	}
	var kc [32]byte
	for i := range 2 {
		var in [16]byte
		in[0], in[9] = DomainCorrKey, byte(i)
		root.Encrypt(kc[16*i:16*i+16], in[:])
	}
	enc := binary.LittleEndian.AppendUint64(nil, d.Counter)
	enc = binary.LittleEndian.AppendUint64(enc, d.Blocks)
	enc = append(enc, d.Kind, d.Ring, d.Part)
	for _, v := range []uint32{d.In, d.Out, d.K, d.H, d.W} {
		enc = binary.LittleEndian.AppendUint32(enc, v)
	}
	enc = binary.LittleEndian.AppendUint64(enc, d.WeightFrom)
	mac := func(label string) []byte {
		m := hmac.New(sha256.New, kc[:])
		m.Write([]byte(label))
		m.Write(enc)
		return m.Sum(nil)
	}
	kd := mac("kord/v1/corr/words")
	b, err := aes.NewCipher(kd)
	if err != nil {
		t.Fatal(err)
	}
	words := make([]uint64, n)
	for i := range words {
		var in, out [16]byte
		binary.LittleEndian.PutUint64(in[:8], uint64(i/2))
		b.Encrypt(out[:], in[:])
		words[i] = binary.LittleEndian.Uint64(out[8*(i%2):])
	}
	return words, [TagSize]byte(mac("kord/v1/corr/tag"))
}

// TestDerivedBoundToShape: the derived words of one counter differ in
// every word for every change of the description, and two modules with
// one kr agree.
func TestDerivedBoundToShape(t *testing.T) {
	var kr [32]byte
	kr[7] = 1
	p, _ := NewPRF(&kr)
	q, _ := NewPRF(&kr)
	base := DerivedShape{Mode: 3, Type: 1, InBits: 16, OutBits: 8, G: 1, DeriveBeta: true}
	variants := []DerivedShape{base}
	for _, f := range []func(*DerivedShape){
		func(s *DerivedShape) { s.Mode = 2 },
		func(s *DerivedShape) { s.Type = 2 },
		func(s *DerivedShape) { s.InBits = 64 },
		func(s *DerivedShape) { s.OutBits = 64 },
		func(s *DerivedShape) { s.G = 4 },
		func(s *DerivedShape) { s.DeriveBeta = false },
	} {
		v := base
		f(&v)
		variants = append(variants, v)
	}
	const c = 99
	seen := map[uint64]int{}
	for i, v := range variants {
		a, a0, b, b0 := p.Derived(c, &v)
		x, x0, y, y0 := q.Derived(c, &v)
		if a != x || a0 != x0 || b != y || b0 != y0 {
			t.Fatalf("variant %d: two modules with one kr disagree", i)
		}
		for _, w := range []uint64{a, a0, b, b0} {
			if j, ok := seen[w]; ok {
				t.Fatalf("variants %d and %d share a drawn word at counter %d", j, i, c)
			}
			seen[w] = i
		}
	}
}

// TestCorrWordsDefinition pins CorrWords and CorrTag to their definition,
// across the kernel's chunk boundary and for an odd word count.
func TestCorrWordsDefinition(t *testing.T) {
	var kr [32]byte
	kr[0] = 3
	p, _ := NewPRF(&kr)
	d := &CorrDesc{Counter: 1 << 40, Blocks: 4097, Kind: 2, Ring: 32, Part: 2, In: 3, Out: 5, K: 3, H: 28, W: 28, WeightFrom: 77}
	for _, n := range []int{1, 7, 8193} {
		got := make([]uint64, n)
		p.CorrWords(d, got)
		want, tag := corrWant(t, &kr, d, n)
		for i := range got {
			if got[i] != want[i] {
				t.Fatalf("n=%d: word %d differs from its definition", n, i)
			}
		}
		var g [TagSize]byte
		p.CorrTag(d, &g)
		if g != tag {
			t.Fatal("CorrTag differs from its definition")
		}
	}
}

// TestCorrBoundToDescription: every field of the description changes every
// word (no word in common with the honest draw) and the tag.
func TestCorrBoundToDescription(t *testing.T) {
	var kr [32]byte
	kr[1] = 9
	p, _ := NewPRF(&kr)
	base := CorrDesc{Counter: 10, Blocks: 40, Kind: 1, Ring: 64, Part: 0, In: 8, Out: 4}
	const n = 80
	honest := make([]uint64, n)
	p.CorrWords(&base, honest)
	have := map[uint64]bool{}
	for _, w := range honest {
		have[w] = true
	}
	var honestTag [TagSize]byte
	p.CorrTag(&base, &honestTag)
	for i, f := range []func(*CorrDesc){
		func(d *CorrDesc) { d.Counter++ },
		func(d *CorrDesc) { d.Blocks++ },
		func(d *CorrDesc) { d.Kind = 2 },
		func(d *CorrDesc) { d.Ring = 63 },
		func(d *CorrDesc) { d.Part = 1 },
		func(d *CorrDesc) { d.In = 4; d.Out = 8 },
		func(d *CorrDesc) { d.K = 1 },
		func(d *CorrDesc) { d.H = 1 },
		func(d *CorrDesc) { d.W = 1 },
		func(d *CorrDesc) { d.WeightFrom = 1 },
	} {
		v := base
		f(&v)
		other := make([]uint64, 4*n)
		p.CorrWords(&v, other)
		for _, w := range other {
			if have[w] {
				t.Fatalf("variant %d draws a word of the honest correlation", i)
			}
		}
		var tag [TagSize]byte
		p.CorrTag(&v, &tag)
		if tag == honestTag {
			t.Fatalf("variant %d has the honest tag", i)
		}
	}
}
