package llama

import (
	"bytes"
	"encoding/hex"
	"errors"
	"math/rand/v2"
	"testing"
)

// TestBatchVectors: GenBatch, one LLAMA vector at a time, writes LLAMA's
// key files byte for byte.
func TestBatchVectors(t *testing.T) {
	for i, v := range loadVectors(t) {
		p := Params{InBits: v.InBits, OutBits: v.OutBits, Group: len(v.Payload)}
		out0, out1 := make([]byte, p.KeySize()), make([]byte, p.KeySize())
		err := GenBatch(p, []uint64{v.Alpha}, v.Payload, []Block{block(t, v.Root0)}, []Block{block(t, v.Root1)}, out0, out1)
		if err != nil {
			t.Fatalf("vector %d: %v", i, err)
		}
		if hex.EncodeToString(out0) != v.Key0 || hex.EncodeToString(out1) != v.Key1 {
			t.Fatalf("vector %d (%v): GenBatch differs from LLAMA's files", i, p)
		}
	}
}

// TestBatchMatchesGen: for random shapes and more keys than one batch
// chunk, GenBatch's two outputs (branch-free, the production path) are the
// spec-shaped reference generator's files concatenated
// (so they are LLAMA's server.dat and client.dat), and they split back
// into keys that evaluate to β·[x < α].
func TestBatchMatchesGen(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 23))
	for trial := 0; trial < 6; trial++ {
		p := Params{InBits: 1 + r.IntN(64), OutBits: 1 + r.IntN(64), Group: 1 + r.IntN(5)}
		if trial == 0 {
			p = Params{32, 32, 1}
		}
		if trial == 1 {
			p.Group = 17 // the AES-stream side of convert
		}
		n := BatchKeys + 1 + r.IntN(2*BatchKeys)
		alpha, beta, r0, r1 := batchInputs(r, p, n)
		size := p.KeySize()
		out0, out1 := make([]byte, n*size), make([]byte, n*size)
		if err := GenBatch(p, alpha, beta, r0, r1, out0, out1); err != nil {
			t.Fatalf("%v: %v", p, err)
		}
		var want0, want1 []byte
		for j := range alpha {
			k0, k1, err := genReference(p, alpha[j], beta[j*p.Group:(j+1)*p.Group], r0[j], r1[j])
			if err != nil {
				t.Fatal(err)
			}
			if want0, err = k0.AppendBinary(want0); err != nil {
				t.Fatal(err)
			}
			if want1, err = k1.AppendBinary(want1); err != nil {
				t.Fatal(err)
			}
		}
		if !bytes.Equal(out0, want0) || !bytes.Equal(out1, want1) {
			t.Fatalf("%v, %d keys: GenBatch differs from the reference generator", p, n)
		}
		keys0, err0 := SplitKeys(p, out0)
		keys1, err1 := SplitKeys(p, out1)
		if err0 != nil || err1 != nil || len(keys0) != n || len(keys1) != n {
			t.Fatalf("SplitKeys: %v %v", err0, err1)
		}
		for j := range keys0 {
			x := r.Uint64() & mask(p.InBits)
			if j%3 == 0 {
				x = alpha[j]
			}
			y0, _ := Eval(0, keys0[j], x)
			y1, _ := Eval(1, keys1[j], x)
			for el := range y0 {
				want := uint64(0)
				if x < alpha[j] {
					want = beta[j*p.Group+el]
				}
				if (y0[el]+y1[el])&mask(p.OutBits) != want {
					t.Fatalf("%v key %d x=%d element %d wrong", p, j, x, el)
				}
			}
		}
	}
}

func TestBatchBadInput(t *testing.T) {
	p := Params{8, 8, 1}
	var a, b Block
	b[0] = 1
	out := make([]byte, 2*p.KeySize())
	cases := []struct {
		name   string
		alpha  []uint64
		beta   []uint64
		r0, r1 []Block
		o0     []byte
		want   error
	}{
		{"short payload", []uint64{1, 2}, []uint64{1}, []Block{a, a}, []Block{b, b}, out, ErrPayload},
		{"wide α", []uint64{1, 256}, []uint64{1, 1}, []Block{a, a}, []Block{b, b}, out, ErrAlpha},
		{"wide payload", []uint64{1, 2}, []uint64{1, 256}, []Block{a, a}, []Block{b, b}, out, ErrValue},
		{"equal control bits", []uint64{1, 2}, []uint64{1, 1}, []Block{a, b}, []Block{b, b}, out, ErrRoots},
		{"short output", []uint64{1, 2}, []uint64{1, 1}, []Block{a, a}, []Block{b, b}, out[1:], ErrLength},
	}
	for _, c := range cases {
		if err := GenBatch(p, c.alpha, c.beta, c.r0, c.r1, c.o0, out); !errors.Is(err, c.want) {
			t.Errorf("%s: got %v, want %v", c.name, err, c.want)
		}
	}
}

// TestKernelMatchesGeneric: the node kernel in use (AES-NI on amd64)
// gives crypto/aes's bytes for random seeds, bits 0 and 1 included (they
// must be ignored), and for lengths around the loop's edges.
func TestKernelMatchesGeneric(t *testing.T) {
	if !hasKernel {
		t.Skip("no node kernel on this build; crypto/aes is the only path")
	}
	r := rand.New(rand.NewPCG(4, 23))
	for _, z := range kernelVariants() {
		setKernelVariant(z)
		t.Cleanup(func() { setKernelVariant(true) })
		checkKernel(t, r)
	}
}

func checkKernel(t *testing.T, r *rand.Rand) {
	for _, n := range []int{0, 1, 2, 3, 7, 8, 9, 15, 16, 17, 64, 129} {
		seeds := make([]Block, n)
		for i := range seeds {
			for j := range seeds[i] {
				seeds[i][j] = byte(r.Uint32())
			}
		}
		got, want := make([][4]Block, n), make([][4]Block, n)
		if !kernelExpand(got, seeds) {
			t.Fatal("kernel declined")
		}
		if err := expandNodesGeneric(want, seeds); err != nil {
			t.Fatal(err)
		}
		for i := range got {
			if got[i] != want[i] {
				t.Fatalf("n=%d node %d: kernel %x, crypto/aes %x", n, i, got[i], want[i])
			}
		}
	}
}

// TestBatchAllocs: with the node kernel and the direct convert (payload
// fits one block), GenBatch's allocations do not grow with the number of
// keys: the per-call scratch only.
func TestBatchAllocs(t *testing.T) {
	if !hasKernel {
		t.Skip("crypto/aes path allocates a cipher per node")
	}
	p := Params{32, 32, 1}
	allocs := func(n int) float64 {
		alpha, beta, r0, r1 := batchInputs(rand.New(rand.NewPCG(5, 23)), p, n)
		out0, out1 := make([]byte, n*p.KeySize()), make([]byte, n*p.KeySize())
		return testing.AllocsPerRun(5, func() {
			if err := GenBatch(p, alpha, beta, r0, r1, out0, out1); err != nil {
				t.Fatal(err)
			}
		})
	}
	small, large := allocs(BatchKeys), allocs(10*BatchKeys)
	if large != small {
		t.Fatalf("allocations grow with the batch: %v for %d keys, %v for %d", small, BatchKeys, large, 10*BatchKeys)
	}
	t.Logf("%v allocations per GenBatch call", small)
}

// TestGenBatchParty: each party's half written alone is byte for byte that
// half of GenBatch, and the halves pair (CheckPair); a wrong party or
// length is refused.
func TestGenBatchParty(t *testing.T) {
	r := rand.New(rand.NewPCG(21, 22))
	for _, p := range []Params{{InBits: 1, OutBits: 1, Group: 1}, {InBits: 32, OutBits: 32, Group: 1}, {InBits: 13, OutBits: 64, Group: 3}} {
		const n = 70 // more than BatchKeys: two batches
		alpha, beta, r0, r1 := batchInputs(r, p, n)
		size := p.KeySize()
		out0, out1 := make([]byte, n*size), make([]byte, n*size)
		if err := GenBatch(p, alpha, beta, r0, r1, out0, out1); err != nil {
			t.Fatal(err)
		}
		for party, want := range [][]byte{out0, out1} {
			got := make([]byte, n*size)
			if err := GenBatchParty(p, party, alpha, beta, r0, r1, got); err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got, want) {
				t.Fatalf("%v party %d: GenBatchParty differs from GenBatch", p, party)
			}
		}
		for j := range n {
			if err := CheckPair(p, out0[j*size:(j+1)*size], out1[j*size:(j+1)*size], alpha[j], beta[j*p.Group:(j+1)*p.Group]); err != nil {
				t.Fatal(err)
			}
		}
		if err := GenBatchParty(p, 2, alpha, beta, r0, r1, out0); !errors.Is(err, ErrParty) {
			t.Fatalf("party 2: %v", err)
		}
		if err := GenBatchParty(p, 0, alpha, beta, r0, r1, out0[1:]); !errors.Is(err, ErrLength) {
			t.Fatalf("short output: %v", err)
		}
	}
}

// TestCheckPairFails: CheckPair notices a pair that does not add up.
func TestCheckPairFails(t *testing.T) {
	p := Params{InBits: 8, OutBits: 8, Group: 1}
	r0, r1 := randomRoots(rand.New(rand.NewPCG(1, 2)))
	k0, k1, err := Gen(p, 100, []uint64{7}, r0, r1)
	if err != nil {
		t.Fatal(err)
	}
	if err := CheckPair(p, k0, k1, 100, []uint64{7}); err != nil {
		t.Fatal(err)
	}
	if CheckPair(p, k0, k1, 101, []uint64{7}) == nil || CheckPair(p, k0, k1, 100, []uint64{8}) == nil || CheckPair(p, k1, k0, 100, []uint64{7}) == nil {
		t.Fatal("CheckPair accepted a pair for another α, β or with the parties swapped")
	}
}

// batchInputs draws the inputs of n keys of shape p: each α below 2^ℓ,
// n·Group payload elements below 2^n, and two roots per key.
func batchInputs(r *rand.Rand, p Params, n int) (alpha, beta []uint64, r0, r1 []Block) {
	alpha, beta = make([]uint64, n), make([]uint64, n*p.Group)
	r0, r1 = make([]Block, n), make([]Block, n)
	for j := range alpha {
		alpha[j] = r.Uint64() & mask(p.InBits)
		r0[j], r1[j] = randomRoots(r)
	}
	for j := range beta {
		beta[j] = r.Uint64() & mask(p.OutBits)
	}
	return alpha, beta, r0, r1
}
