package fss_test

import (
	"bytes"
	"fmt"

	"github.com/kord-fss/kord/fss"
)

// A DPF pair shares the point function f(x) = β at x = α: the two parties'
// outputs add up to β at α and to 0 everywhere else.
func ExampleGen() {
	p := fss.Params{Type: fss.DPF, InBits: 16, OutBits: 32}
	k0, k1, err := fss.Gen(nil, p, 1234, 99)
	if err != nil {
		panic(err)
	}
	for _, x := range []uint64{1233, 1234, 1235} {
		y0, _ := k0.Eval(x)
		y1, _ := k1.Eval(x)
		fmt.Printf("f(%d) = %d\n", x, uint32(y0+y1))
	}
	// Output:
	// f(1233) = 0
	// f(1234) = 99
	// f(1235) = 0
}

// A DCF pair shares f(x) = β for x < α. Each party can evaluate its key over
// the whole domain at once.
func ExampleKey_EvalAll() {
	p := fss.Params{Type: fss.DCF, InBits: 3, OutBits: 8}
	k0, k1, _ := fss.Gen(nil, p, 5, 7)
	out0 := make([]uint64, 8)
	out1 := make([]uint64, 8)
	k0.EvalAll(out0)
	k1.EvalAll(out1)
	for x := range out0 {
		fmt.Print(uint8(out0[x]+out1[x]), " ")
	}
	fmt.Println()
	// Output: 7 7 7 7 7 0 0 0
}

// Keys travel in the kord-v1 wire format.
func ExampleParseKey() {
	p := fss.Params{Type: fss.DPF, InBits: 32, OutBits: 32}
	k0, _, _ := fss.Gen(nil, p, 7, 1)
	raw, _ := k0.MarshalBinary()
	k, err := fss.ParseKey(raw)
	fmt.Println(len(raw), err, k.Params(), k.Party())
	_, err = fss.ParseKey(raw[:len(raw)-1])
	fmt.Println(err)
	// Output:
	// 546 <nil> dpf-32→32 0
	// fss: key length does not match its header: got 545 bytes, a dpf-32→32 key is 546
}

// A BatchGen makes many key pairs of one shape at once, interleaving their
// levels through the batched AES kernels; its bytes are those of
// GenWithRoots with the same roots. GenPartyWithRoots writes one party's
// keys only, as a key-generation module keeping its own share does.
func ExampleBatchGen() {
	p := fss.Params{Type: fss.DPF, InBits: 16, OutBits: 16}
	g, err := fss.NewBatchGen(p, fss.BatchOptions{Workers: 1})
	if err != nil {
		panic(err)
	}
	alpha, beta := []uint64{10, 20, 30}, []uint64{1, 2, 3}
	root0 := [][16]byte{{1}, {2}, {3}} // in practice: fresh random seeds
	root1 := [][16]byte{{4}, {5}, {6}}
	ks := p.KeySize()
	out0, out1 := make([]byte, 3*ks), make([]byte, 3*ks)
	if err := g.GenWithRoots(alpha, beta, root0, root1, out0, out1); err != nil {
		panic(err)
	}
	for i := range alpha {
		k0, _ := fss.ParseKey(out0[i*ks : (i+1)*ks])
		k1, _ := fss.ParseKey(out1[i*ks : (i+1)*ks])
		y0, _ := k0.Eval(alpha[i])
		y1, _ := k1.Eval(alpha[i])
		fmt.Printf("key %d: f(%d) = %d\n", i, alpha[i], uint16(y0+y1))
	}
	only1 := make([]byte, 3*ks)
	g.GenPartyWithRoots(1, alpha, beta, root0, root1, only1)
	fmt.Println("party 1 alone, same bytes:", bytes.Equal(only1, out1))
	// Output:
	// key 0: f(10) = 1
	// key 1: f(20) = 2
	// key 2: f(30) = 3
	// party 1 alone, same bytes: true
}

// Keys that arrive as one buffer — N key shares of one shape end to end,
// as a batch generator writes them or a party delivers them — are read in
// place: ViewSlab validates them all (as ParseKey would) without copying
// or allocating, and each view evaluates like the parsed key.
func ExampleViewSlab() {
	p := fss.Params{Type: fss.DPF, InBits: 16, OutBits: 32}
	alphas, betas := []uint64{10, 20, 30}, []uint64{1, 2, 3}
	roots0, roots1 := make([][16]byte, 3), make([][16]byte, 3)
	for i := range roots0 {
		roots0[i][0], roots1[i][0] = byte(2*i+1), byte(2*i+2) // fresh random roots in practice
	}
	slab0, slab1, err := fss.GenBatchWithRoots(p, alphas, betas, roots0, roots1)
	if err != nil {
		panic(err)
	}
	s0, err := fss.ViewSlab(slab0, p, 3) // party 0's buffer
	if err != nil {
		panic(err)
	}
	s1, err := fss.ViewSlab(slab1, p, 3) // party 1's buffer
	if err != nil {
		panic(err)
	}
	for i := 0; i < s0.Len(); i++ {
		y0, _ := s0.Key(i).Eval(alphas[i])
		y1, _ := s1.Key(i).Eval(alphas[i])
		z0, _ := s0.Key(i).Eval(alphas[i] + 1)
		z1, _ := s1.Key(i).Eval(alphas[i] + 1)
		fmt.Printf("key %d: f(α) = %d, f(α+1) = %d\n", i, uint32(y0+y1), uint32(z0+z1))
	}
	// One key alone: ViewKey refuses what ParseKey refuses, with its error.
	if _, err := fss.ViewKey(slab0[:10]); err != nil {
		fmt.Println(err)
	}
	// Output:
	// key 0: f(α) = 1, f(α+1) = 0
	// key 1: f(α) = 2, f(α+1) = 0
	// key 2: f(α) = 3, f(α+1) = 0
	// fss: key length does not match its header: got 10 bytes, a dpf-16→32 key is 286
}
