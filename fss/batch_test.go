package fss

import (
	"bytes"
	"math/rand/v2"
	"testing"

	"github.com/kord-fss/kord/internal/prg"
	"github.com/kord-fss/kord/internal/prg/prgtest"
)

// batchInputs draws k random points and roots for p, with the extreme α
// values and the largest β among them.
func batchInputs(r *rand.Rand, p Params, k int) (alpha, beta []uint64, root0, root1 []prg.Block) {
	alpha, beta = make([]uint64, k), make([]uint64, k)
	root0, root1 = make([]prg.Block, k), make([]prg.Block, k)
	for i := range alpha {
		alpha[i] = r.Uint64() & prg.Mask(p.InBits)
		beta[i] = r.Uint64() & prg.Mask(p.OutBits)
		switch i % 7 {
		case 1:
			alpha[i] = 0
		case 2:
			alpha[i] = prg.Mask(p.InBits)
			beta[i] = prg.Mask(p.OutBits)
		}
		root0[i], root1[i] = randRoot(r), randRoot(r)
	}
	return
}

// checkBatch compares every batch key with the single-key GenWithRoots and
// MarshalBinary of the same inputs, byte for byte.
func checkBatch(t *testing.T, p Params, alpha, beta []uint64, root0, root1 []prg.Block, out0, out1 []byte) {
	t.Helper()
	ks := p.KeySize()
	for i := range alpha {
		k0, k1, err := GenWithRoots(p, alpha[i], beta[i], root0[i], root1[i])
		if err != nil {
			t.Fatal(err)
		}
		b0, _ := k0.MarshalBinary()
		b1, _ := k1.MarshalBinary()
		if !bytes.Equal(b0, out0[i*ks:(i+1)*ks]) || !bytes.Equal(b1, out1[i*ks:(i+1)*ks]) {
			t.Fatalf("%v key %d of %d (α=%d β=%d): batch bytes differ from GenWithRoots", p, i, len(alpha), alpha[i], beta[i])
		}
	}
}

// TestBatchGenMatchesSingle checks batch generation against single-key
// generation for both types, many widths, batch sizes that leave partial
// groups and chunks, one and several workers, and every kernel.
func TestBatchGenMatchesSingle(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	shapes := [][2]int{{1, 1}, {2, 64}, {7, 7}, {16, 9}, {32, 32}, {33, 63}, {64, 64}, {64, 1}, {20, 16}, {12, 20}, {9, 41}}
	sizes := []int{0, 1, 3, GroupKeys - 1, GroupKeys, GroupKeys + 1, 5*GroupKeys + 17}
	prgtest.Run(t, func(t *testing.T) {
		kern := prg.Active()
		for _, typ := range []Type{DPF, DCF} {
			for si, sh := range shapes {
				p := Params{typ, sh[0], sh[1]}
				for _, workers := range []int{1, 3} {
					g, err := NewBatchGen(p, BatchOptions{Workers: workers})
					if err != nil {
						t.Fatal(err)
					}
					for zi, k := range sizes {
						// Keep the generic kernel's share of the run small.
						if kern == "generic" && (zi+si)%3 != 0 {
							continue
						}
						alpha, beta, root0, root1 := batchInputs(r, p, k)
						out0 := make([]byte, k*p.KeySize())
						out1 := make([]byte, k*p.KeySize())
						if err := g.GenWithRoots(alpha, beta, root0, root1, out0, out1); err != nil {
							t.Fatal(err)
						}
						checkBatch(t, p, alpha, beta, root0, root1, out0, out1)
						// One party's keys alone are the same bytes.
						for b, want := range [][]byte{out0, out1} {
							one := make([]byte, len(want))
							if err := g.GenPartyWithRoots(b, alpha, beta, root0, root1, one); err != nil {
								t.Fatal(err)
							}
							if !bytes.Equal(one, want) {
								t.Fatalf("%s %v k=%d: party %d's keys alone differ from the pair's", kern, p, k, b)
							}
						}
					}
				}
			}
		}
	})
}

// TestBatchGenInFlight checks that the keys in flight per worker change
// nothing in the output: every InFlight value, odd ones and ones larger
// than the batch included, gives the bytes of single-key generation, on
// every kernel, one and two workers.
func TestBatchGenInFlight(t *testing.T) {
	r := rand.New(rand.NewPCG(15, 16))
	prgtest.Run(t, func(t *testing.T) {
		kern := prg.Active()
		for _, p := range []Params{{DPF, 32, 32}, {DCF, 19, 64}, {DPF, 5, 3}} {
			k := 131
			if kern == "generic" {
				k = 37
			}
			alpha, beta, root0, root1 := batchInputs(r, p, k)
			for _, m := range []int{1, 3, 64, 200} {
				for _, w := range []int{1, 2} {
					g, err := NewBatchGen(p, BatchOptions{Workers: w, InFlight: m})
					if err != nil {
						t.Fatal(err)
					}
					if g.InFlight() != m {
						t.Fatalf("InFlight() = %d, want %d", g.InFlight(), m)
					}
					out0, out1 := make([]byte, k*p.KeySize()), make([]byte, k*p.KeySize())
					if err := g.GenWithRoots(alpha, beta, root0, root1, out0, out1); err != nil {
						t.Fatal(err)
					}
					checkBatch(t, p, alpha, beta, root0, root1, out0, out1)
				}
			}
		}
	})
	for _, m := range []int{-1, maxInFlight + 1} {
		if _, err := NewBatchGen(Params{DPF, 8, 8}, BatchOptions{InFlight: m}); err == nil {
			t.Errorf("accepted InFlight = %d", m)
		}
	}
	g, err := NewBatchGen(Params{DPF, 8, 8}, BatchOptions{Workers: 1})
	if err != nil {
		t.Fatal(err)
	}
	if g.InFlight() != GroupKeys {
		t.Errorf("NewBatchGen: InFlight %d, want the default %d", g.InFlight(), GroupKeys)
	}
}

// TestBatchGenReuse runs one generator twice over dirty output buffers: the
// second run must not depend on what the first left behind.
func TestBatchGenReuse(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	p := Params{DCF, 12, 13}
	g, err := NewBatchGen(p, BatchOptions{Workers: 2})
	if err != nil {
		t.Fatal(err)
	}
	k := 2*GroupKeys + 5
	out0, out1 := make([]byte, k*p.KeySize()), make([]byte, k*p.KeySize())
	for i := range out0 {
		out0[i], out1[i] = 0xff, 0xa5
	}
	for range 2 {
		alpha, beta, root0, root1 := batchInputs(r, p, k)
		if err := g.GenWithRoots(alpha, beta, root0, root1, out0, out1); err != nil {
			t.Fatal(err)
		}
		checkBatch(t, p, alpha, beta, root0, root1, out0, out1)
	}
}

// TestBatchGenErrors checks argument validation: nothing panics, and a bad
// point is reported without touching the output.
func TestBatchGenErrors(t *testing.T) {
	if _, err := NewBatchGen(Params{DPF, 0, 8}, BatchOptions{Workers: 1}); err == nil {
		t.Error("accepted ℓ = 0")
	}
	if _, err := NewBatchGen(Params{DPF, 8, 8}, BatchOptions{Workers: -1}); err == nil {
		t.Error("accepted negative workers")
	}
	p := Params{DPF, 8, 8}
	g, err := NewBatchGen(p, BatchOptions{})
	if err != nil {
		t.Fatal(err)
	}
	roots := make([]prg.Block, 2)
	buf := make([]byte, 2*p.KeySize())
	if err := g.GenWithRoots([]uint64{1, 256}, []uint64{1, 1}, roots, roots, buf, buf); err == nil {
		t.Error("accepted α ≥ 2^ℓ")
	}
	if err := g.GenWithRoots([]uint64{1, 2}, []uint64{1, 256}, roots, roots, buf, buf); err == nil {
		t.Error("accepted β ≥ 2^n")
	}
	if !bytes.Equal(buf, make([]byte, len(buf))) {
		t.Error("a rejected batch wrote output")
	}
	if err := g.GenWithRoots([]uint64{1}, []uint64{1, 2}, roots, roots, buf, buf); err == nil {
		t.Error("accepted mismatched lengths")
	}
	if err := g.GenWithRoots([]uint64{1, 2}, []uint64{1, 2}, roots, roots, buf[:3], buf); err == nil {
		t.Error("accepted a short output")
	}
	if err := g.GenPartyWithRoots(2, []uint64{1, 2}, []uint64{1, 2}, roots, roots, buf); err == nil {
		t.Error("accepted party 2")
	}
	if err := g.GenPartyWithRoots(1, []uint64{1, 2}, []uint64{1, 2}, roots, roots, buf[:3]); err == nil {
		t.Error("one party: accepted a short output")
	}
	if err := g.GenPartyWithRoots(0, []uint64{1, 256}, []uint64{1, 1}, roots, roots, buf); err == nil {
		t.Error("one party: accepted α ≥ 2^ℓ")
	}
}

// TestBatchGenNoAllocs checks that steady-state generation allocates
// nothing per key (one worker: no goroutines either).
func TestBatchGenNoAllocs(t *testing.T) {
	r := rand.New(rand.NewPCG(9, 10))
	p := Params{DCF, 32, 32}
	g, err := NewBatchGen(p, BatchOptions{Workers: 1})
	if err != nil {
		t.Fatal(err)
	}
	k := 3 * GroupKeys
	alpha, beta, root0, root1 := batchInputs(r, p, k)
	out0, out1 := make([]byte, k*p.KeySize()), make([]byte, k*p.KeySize())
	allocs := testing.AllocsPerRun(3, func() {
		if err := g.GenWithRoots(alpha, beta, root0, root1, out0, out1); err != nil {
			t.Fatal(err)
		}
	})
	if allocs != 0 {
		t.Fatalf("%v allocations per batch of %d keys", allocs, k)
	}
}

// TestBatchEvalMatchesEval checks batched evaluation against Key.Eval for
// both parties, both types and several widths, with batch sizes that leave
// partial groups.
func TestBatchEvalMatchesEval(t *testing.T) {
	r := rand.New(rand.NewPCG(11, 12))
	for _, typ := range []Type{DPF, DCF} {
		for _, sh := range [][2]int{{1, 1}, {9, 7}, {32, 32}, {64, 64}} {
			p := Params{typ, sh[0], sh[1]}
			e, err := NewBatchEval(p)
			if err != nil {
				t.Fatal(err)
			}
			k := 2*GroupKeys + 9
			alpha, beta, root0, root1 := batchInputs(r, p, k)
			keys := make([]*Key, 2*k)
			xs := make([]uint64, 2*k)
			for i := range alpha {
				k0, k1, err := GenWithRoots(p, alpha[i], beta[i], root0[i], root1[i])
				if err != nil {
					t.Fatal(err)
				}
				keys[2*i], keys[2*i+1] = k0, k1
				x := r.Uint64() & prg.Mask(p.InBits)
				if i%3 == 0 {
					x = alpha[i]
				}
				xs[2*i], xs[2*i+1] = x, x
			}
			out := make([]uint64, 2*k)
			if err := e.Eval(keys, xs, out); err != nil {
				t.Fatal(err)
			}
			for i, key := range keys {
				want, _ := key.Eval(xs[i])
				if out[i] != want {
					t.Fatalf("%v key %d x=%d: batch %d, Eval %d", p, i, xs[i], out[i], want)
				}
			}
			if err := e.Eval(keys[:1], []uint64{prg.Mask(p.InBits) + 1}, out[:1]); p.InBits < 64 && err == nil {
				t.Fatal("accepted an x beyond ℓ bits")
			}
		}
	}
}

// TestEvalAllBatchedMatchesEvalAll compares the batched full-domain
// evaluation with the depth-first EvalRange walk for both parties, both types and widths on both
// sides of the subtree split, and checks that the shares reconstruct f.
func TestEvalAllBatchedMatchesEvalAll(t *testing.T) {
	r := rand.New(rand.NewPCG(13, 14))
	for _, typ := range []Type{DPF, DCF} {
		for _, sh := range [][2]int{{1, 1}, {3, 64}, {9, 7}, {10, 32}, {11, 64}, {14, 13}} {
			p := Params{typ, sh[0], sh[1]}
			for trial := 0; trial < 3; trial++ {
				alpha := r.Uint64() & prg.Mask(p.InBits)
				beta := r.Uint64() & prg.Mask(p.OutBits)
				k0, k1, err := GenWithRoots(p, alpha, beta, randRoot(r), randRoot(r))
				if err != nil {
					t.Fatal(err)
				}
				n := 1 << p.InBits
				want0, want1 := make([]uint64, n), make([]uint64, n)
				got0, got1 := make([]uint64, n), make([]uint64, n)
				// EvalRange is the independent reference (EvalAll itself
				// delegates to EvalAllBatched).
				k0.EvalRange(0, uint64(n), want0)
				k1.EvalRange(0, uint64(n), want1)
				if err := k0.EvalAllBatched(got0); err != nil {
					t.Fatal(err)
				}
				if err := k1.EvalAllBatched(got1); err != nil {
					t.Fatal(err)
				}
				for x := range got0 {
					if got0[x] != want0[x] || got1[x] != want1[x] {
						t.Fatalf("%v α=%d x=%d: batched (%d,%d), EvalRange (%d,%d)", p, alpha, x, got0[x], got1[x], want0[x], want1[x])
					}
					if s := (got0[x] + got1[x]) & prg.Mask(p.OutBits); s != Truth(p, alpha, beta, uint64(x)) {
						t.Fatalf("%v α=%d x=%d: shares sum to %d", p, alpha, x, s)
					}
				}
			}
			k0, _, _ := GenWithRoots(p, 0, 0, prg.Block{}, prg.Block{})
			if err := k0.EvalAllBatched(make([]uint64, 3)); err == nil {
				t.Fatal("accepted a wrong-size output")
			}
		}
	}
}

func BenchmarkEvalAll20(b *testing.B) {
	p := Params{DPF, 20, 64}
	k0, _, _ := GenWithRoots(p, 12345, 6789, prg.Block{1}, prg.Block{2})
	out := make([]uint64, 1<<20)
	b.Run("EvalAll", func(b *testing.B) {
		for b.Loop() {
			k0.EvalAll(out)
		}
	})
	b.Run("EvalAllBatched", func(b *testing.B) {
		kb := kernelBlocksPerSec(b)
		for b.Loop() {
			k0.EvalAllBatched(out)
		}
		perSec := float64(b.N) / b.Elapsed().Seconds()
		b.ReportMetric(perSec*BlocksPerEvalAll(p)/kb, "ratio")
	})
}

// TestBatchGenOverwritesOutput: BatchGen writes every byte of its output,
// so keys generated into buffers full of old bytes equal keys generated
// into zeroed ones (runGroup does not clear the output first).
func TestBatchGenOverwritesOutput(t *testing.T) {
	prgtest.Run(t, func(t *testing.T) {
		r := rand.New(rand.NewPCG(3, 4))
		for _, typ := range []Type{DPF, DCF} {
			for _, l := range []int{1, 3, 8, 17, 32, 64} {
				for _, n := range []int{1, 7, 8, 12, 32, 64} {
					p := Params{typ, l, n}
					for _, k := range []int{1, 5, 2*GroupKeys + 3} {
						alpha, beta, root0, root1 := batchInputs(r, p, k)
						g, err := NewBatchGen(p, BatchOptions{Workers: 2})
						if err != nil {
							t.Fatal(err)
						}
						size := k * p.KeySize()
						z0, z1 := make([]byte, size), make([]byte, size)
						d0, d1 := bytes.Repeat([]byte{0xff}, size), bytes.Repeat([]byte{0xa5}, size)
						d := bytes.Repeat([]byte{0x5a}, size)
						if err := g.GenWithRoots(alpha, beta, root0, root1, z0, z1); err != nil {
							t.Fatal(err)
						}
						if err := g.GenWithRoots(alpha, beta, root0, root1, d0, d1); err != nil {
							t.Fatal(err)
						}
						if err := g.GenPartyWithRoots(1, alpha, beta, root0, root1, d); err != nil {
							t.Fatal(err)
						}
						if !bytes.Equal(z0, d0) || !bytes.Equal(z1, d1) || !bytes.Equal(z1, d) {
							t.Fatalf("%v, %d keys: old bytes of the output survive Gen", p, k)
						}
					}
				}
			}
		}
	})
}
