package fss

import (
	"math/rand/v2"
	"testing"
	"unsafe"

	"github.com/kord-fss/kord/internal/prg"
	"github.com/kord-fss/kord/internal/prg/prgtest"
)

var diffWidths = []int{1, 2, 7, 8, 9, 31, 32, 33, 63, 64}

// oddBytes returns n bytes starting at an odd address.
func oddBytes(n int) []byte {
	buf := make([]byte, n+2)
	off := 1
	if uintptr(unsafe.Pointer(&buf[0]))%2 == 1 {
		off = 2
	}
	return buf[off : off+n : off+n]
}

// TestEvalAllRoutesLikeEvalRange checks, for every ℓ in 1..20 and both
// types, that EvalAll (batched for ℓ ≤ 28), EvalAllBatched and EvalRange
// agree on every point, and that the two parties' shares add up to f
// (computed directly from α and β), on every kernel.
func TestEvalAllRoutesLikeEvalRange(t *testing.T) {
	maxL := 20
	if testing.Short() {
		maxL = 16
	}
	prgtest.Run(t, func(t *testing.T) {
		r := rand.New(rand.NewPCG(11, 12))
		for l := 1; l <= maxL; l++ {
			for _, typ := range []Type{DPF, DCF} {
				p := Params{Type: typ, InBits: l, OutBits: diffWidths[r.IntN(len(diffWidths))]}
				alpha := r.Uint64() & prg.Mask(l)
				beta := r.Uint64() & prg.Mask(p.OutBits)
				k0, k1, err := GenWithRoots(p, alpha, beta, randRoot(r), randRoot(r))
				if err != nil {
					t.Fatal(err)
				}
				var sum []uint64
				for _, k := range []*Key{k0, k1} {
					all, bat, rng := make([]uint64, 1<<l), make([]uint64, 1<<l), make([]uint64, 1<<l)
					if err := k.EvalAll(all); err != nil {
						t.Fatal(err)
					}
					if err := k.EvalAllBatched(bat); err != nil {
						t.Fatal(err)
					}
					if err := k.EvalRange(0, 1<<l, rng); err != nil {
						t.Fatal(err)
					}
					for x := range all {
						if all[x] != rng[x] || bat[x] != rng[x] {
							t.Fatalf("%v party %d x=%d: EvalAll %#x, EvalAllBatched %#x, EvalRange %#x", p, k.Party(), x, all[x], bat[x], rng[x])
						}
					}
					if sum == nil {
						sum = all
					} else {
						for x := range sum {
							sum[x] += all[x]
						}
					}
				}
				for x := range sum {
					if want := Truth(p, alpha, beta, uint64(x)); sum[x]&prg.Mask(p.OutBits) != want {
						t.Fatalf("%v α=%d β=%d x=%d: shares add to %#x, want %#x", p, alpha, beta, x, sum[x], want)
					}
				}
			}
		}
	})
}

// TestBatchGenDifferential compares BatchGen with GenWithRoots over random
// shapes from the widths that sit at byte and word edges, batch sizes 0, 1,
// odd and not a multiple of the group, odd InFlight, several workers and
// output buffers at odd addresses, on every kernel.
func TestBatchGenDifferential(t *testing.T) {
	prgtest.Run(t, func(t *testing.T) {
		r := rand.New(rand.NewPCG(13, 14))
		trials := 24
		if testing.Short() {
			trials = 8
		}
		for trial := 0; trial < trials; trial++ {
			p := Params{Type: []Type{DPF, DCF}[trial%2], InBits: diffWidths[r.IntN(len(diffWidths))], OutBits: diffWidths[r.IntN(len(diffWidths))]}
			k := []int{0, 1, 2, 7, 63, 65, 131}[r.IntN(7)]
			g, err := NewBatchGen(p, BatchOptions{Workers: 1 + r.IntN(3), InFlight: []int{0, 1, 2, 3, 7, 9}[r.IntN(6)]})
			if err != nil {
				t.Fatal(err)
			}
			alpha, beta, root0, root1 := batchInputs(r, p, k)
			out0, out1 := oddBytes(k*p.KeySize()), oddBytes(k*p.KeySize())
			for i := range out0 {
				out0[i], out1[i] = byte(r.Uint32()), byte(r.Uint32())
			}
			if err := g.GenWithRoots(alpha, beta, root0, root1, out0, out1); err != nil {
				t.Fatal(err)
			}
			checkBatch(t, p, alpha, beta, root0, root1, out0, out1)
		}
	})
}

// TestBatchEvalDifferential compares BatchEval with Key.Eval on mixed
// parties, batch sizes around the group size and every kernel.
func TestBatchEvalDifferential(t *testing.T) {
	prgtest.Run(t, func(t *testing.T) {
		r := rand.New(rand.NewPCG(15, 16))
		for trial := 0; trial < 16; trial++ {
			p := Params{Type: []Type{DPF, DCF}[trial%2], InBits: diffWidths[r.IntN(len(diffWidths))], OutBits: diffWidths[r.IntN(len(diffWidths))]}
			n := []int{0, 1, 7, GroupKeys - 1, GroupKeys, GroupKeys + 1, 2*GroupKeys + 3}[r.IntN(7)]
			e, err := NewBatchEval(p)
			if err != nil {
				t.Fatal(err)
			}
			keys := make([]*Key, n)
			xs, out := make([]uint64, n), make([]uint64, n)
			for i := range keys {
				alpha := r.Uint64() & prg.Mask(p.InBits)
				k0, k1, err := GenWithRoots(p, alpha, r.Uint64()&prg.Mask(p.OutBits), randRoot(r), randRoot(r))
				if err != nil {
					t.Fatal(err)
				}
				keys[i] = k0
				if r.IntN(2) == 1 {
					keys[i] = k1
				}
				xs[i] = r.Uint64() & prg.Mask(p.InBits)
				if r.IntN(3) == 0 {
					xs[i] = alpha
				}
			}
			if err := e.Eval(keys, xs, out); err != nil {
				t.Fatal(err)
			}
			for i, k := range keys {
				want, _ := k.Eval(xs[i])
				if out[i] != want {
					t.Fatalf("%v key %d of %d: BatchEval %#x, Eval %#x", p, i, n, out[i], want)
				}
			}
		}
	})
}

// TestXorEvalAllDifferential checks type 0x03 EvalAll and EvalLeaves
// against point-by-point Eval for every ℓ in 1..18, on every kernel.
func TestXorEvalAllDifferential(t *testing.T) {
	prgtest.Run(t, func(t *testing.T) {
		r := rand.New(rand.NewPCG(17, 18))
		for l := 1; l <= 18; l++ {
			alpha := r.Uint64() & prg.Mask(l)
			beta := uint8(r.IntN(2))
			k0, k1, err := GenXorWithRoots(l, alpha, beta, randRoot(r), randRoot(r))
			if err != nil {
				t.Fatal(err)
			}
			var all [2][]prg.Block
			for b, k := range []*XorKey{k0, k1} {
				all[b] = make([]prg.Block, k.Leaves())
				if err := k.EvalAll(all[b]); err != nil {
					t.Fatal(err)
				}
				for x := uint64(0); x < 1<<l; x++ {
					y, _ := k.Eval(x)
					if got := all[b][x/128][x%128/8] >> (x % 8) & 1; got != y {
						t.Fatalf("ℓ=%d party %d x=%d: EvalAll bit %d, Eval %d", l, b, x, got, y)
					}
				}
				if n := k.Leaves(); n > 2 {
					lo := 1 + r.Uint64N(n-2)
					part := make([]prg.Block, 1+r.Uint64N(n-lo))
					if err := k.EvalLeaves(lo, part); err != nil {
						t.Fatal(err)
					}
					for i := range part {
						if part[i] != all[b][lo+uint64(i)] {
							t.Fatalf("ℓ=%d party %d: EvalLeaves(%d) word %d differs", l, b, lo, i)
						}
					}
				}
			}
			for x := uint64(0); x < 1<<l; x++ {
				got := (all[0][x/128][x%128/8] ^ all[1][x/128][x%128/8]) >> (x % 8) & 1
				if want := beta * b2u(x == alpha); got != want {
					t.Fatalf("ℓ=%d α=%d x=%d: XOR of shares %d, want %d", l, alpha, x, got, want)
				}
			}
			if l < XorLeafBits {
				var x prg.Block
				for b := range all[0][0] {
					x[b] = all[0][0][b] | all[1][0][b]
				}
				for bit := 1 << l; bit < 128; bit++ {
					if x[bit/8]>>(bit%8)&1 != 0 {
						t.Fatalf("ℓ=%d: unused output bit %d set", l, bit)
					}
				}
			}
		}
	})
}

func b2u(c bool) uint8 {
	if c {
		return 1
	}
	return 0
}
