package prg

import (
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"math/rand/v2"
	"testing"
	"time"
	"unsafe"
)

// withEachKernel runs f once per registered kernel, with that kernel active.
// withEachKernel is prgtest.Run, which this package's own tests cannot
// import.
func withEachKernel(t *testing.T, f func(t *testing.T)) {
	EachKernel(func(name string) { t.Run(name, f) })
}

func unhex(t *testing.T, s string) (b Block) {
	t.Helper()
	if n, err := hex.Decode(b[:], []byte(s)); err != nil || n != 16 {
		t.Fatalf("bad hex %q", s)
	}
	return
}

// TestHashWithFIPS197 checks every kernel on the FIPS-197 known answers
// (Appendix B and C.1), through MMO: out = AES(k, in) XOR in. The vectors
// are repeated to many lengths so that every unit of the kernels sees them.
func TestHashWithFIPS197(t *testing.T) {
	vectors := []struct{ key, pt, ct string }{
		{"2b7e151628aed2a6abf7158809cf4f3c", "3243f6a8885a308d313198a2e0370734", "3925841d02dc09fbdc118597196a0b32"},
		{"000102030405060708090a0b0c0d0e0f", "00112233445566778899aabbccddeeff", "69c4e0d86a7b0430d8cdb78070b4c55a"},
	}
	withEachKernel(t, func(t *testing.T) {
		for _, v := range vectors {
			s := ExpandKey(unhex(t, v.key))
			pt, ct := unhex(t, v.pt), unhex(t, v.ct)
			var want Block
			for i := range want {
				want[i] = ct[i] ^ pt[i]
			}
			for _, n := range []int{1, 2, 3, 7, 8, 15, 16, 23, 24, 25, 31, 33, 100} {
				in := make([]Block, n)
				for i := range in {
					in[i] = pt
				}
				out := make([]Block, n)
				HashWith(&s, out, in)
				for i := range out {
					if out[i] != want {
						t.Fatalf("key %s n=%d i=%d: got %x want %x", v.key, n, i, out[i], want)
					}
				}
			}
		}
	})
}

// unaligned returns n blocks that start at an odd address, backed by a byte
// buffer, so the kernels are checked on misaligned memory.
func unaligned(n int) []Block {
	buf := make([]byte, 16*n+17)
	if n == 0 {
		return nil
	}
	off := 1
	if uintptr(unsafe.Pointer(&buf[0]))%2 == 1 {
		off = 2
	}
	return unsafe.Slice((*Block)(unsafe.Pointer(&buf[off])), n)
}

// TestExpandAllAgrees checks the four-lane call against crypto/aes on random
// misaligned inputs of many lengths, with each output aliasing the input in
// turn.
func TestExpandAllAgrees(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	withEachKernel(t, func(t *testing.T) {
		for n := 0; n <= 200; n += 1 + n/8 {
			in := unaligned(n)
			for i := range in {
				for j := range in[i] {
					in[i][j] = byte(r.Uint32())
				}
			}
			want := make([][numLanes]Block, n)
			for i := range in {
				for l := Lane(0); l < numLanes; l++ {
					want[i][l] = reference(l, in[i])
				}
			}
			for alias := -1; alias < int(numLanes); alias++ {
				outs := [numLanes][]Block{unaligned(n), unaligned(n), unaligned(n), unaligned(n)}
				src := unaligned(n)
				copy(src, in)
				if alias >= 0 {
					outs[alias] = src
				}
				ExpandAll(outs[0], outs[1], outs[2], outs[3], src)
				for i := 0; i < n; i++ {
					for l := range outs {
						if outs[l][i] != want[i][l] {
							t.Fatalf("n=%d alias=%d lane %d block %d wrong", n, alias, l, i)
						}
					}
				}
			}
		}
	})
}

// TestKernelsAgreeMisaligned compares every kernel with the generic one on
// misaligned buffers of random lengths, for all three call shapes, with the
// right output aliasing the input (the left case is in TestKernelsAgree).
func TestKernelsAgreeMisaligned(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for trial := 0; trial < 60; trial++ {
		n := r.IntN(400)
		in := unaligned(n)
		for i := range in {
			for j := range in[i] {
				in[i][j] = byte(r.Uint32())
			}
		}
		var got []string
		var first []byte
		withEachKernel(t, func(t *testing.T) {
			l := unaligned(n)
			src := unaligned(n)
			copy(src, in)
			ExpandSeeds(l, src, src) // right output over the input
			h := unaligned(n)
			Hash(ValueLeft, h, in)
			var all bytes.Buffer
			for i := 0; i < n; i++ {
				all.Write(l[i][:])
				all.Write(src[i][:])
				all.Write(h[i][:])
			}
			if first == nil {
				first = all.Bytes()
			} else if !bytes.Equal(first, all.Bytes()) {
				t.Fatalf("n=%d: differs from kernel %s", n, got[0])
			}
			got = append(got, Active())
		})
	}
}

func TestUseUnknownKernel(t *testing.T) {
	if err := Use("no-such-kernel"); err == nil {
		t.Fatal("Use accepted an unknown kernel")
	}
	if len(Kernels()) == 0 || Kernels()[len(Kernels())-1] != "generic" {
		t.Fatalf("generic kernel missing or not last: %v", Kernels())
	}
}

func BenchmarkKernels(b *testing.B) {
	const n = 1024
	in := make([]Block, n)
	o := [numLanes][]Block{make([]Block, n), make([]Block, n), make([]Block, n), make([]Block, n)}
	EachKernel(func(name string) {
		b.Run(name+"/hash1", func(b *testing.B) {
			for b.Loop() {
				Hash(SeedLeft, o[0], in)
			}
			b.ReportMetric(float64(n*b.N)/b.Elapsed().Seconds(), "blocks/s")
		})
		b.Run(name+"/hash4", func(b *testing.B) {
			for b.Loop() {
				ExpandAll(o[0], o[1], o[2], o[3], in)
			}
			b.ReportMetric(float64(4*n*b.N)/b.Elapsed().Seconds(), "blocks/s")
		})
	})
}

// TestExpandTree checks every kernel's folded tree expansion against its
// definition on crypto/aes, for parents with either control bit and
// lengths that exercise every unit.
func TestExpandTree(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	withEachKernel(t, func(t *testing.T) {
		for n := 0; n <= 70; n++ {
			in := unaligned(n)
			for i := range in {
				for j := range in[i] {
					in[i][j] = byte(r.Uint32())
				}
			}
			var cwL, cwR Block
			for j := range cwL {
				cwL[j], cwR[j] = byte(r.Uint32()), byte(r.Uint32())
			}
			out := unaligned(2 * n)
			ExpandTree(out, in, &cwL, &cwR)
			for i := range in {
				x := in[i]
				x[0] &^= 1
				wl, wr := reference(SeedLeft, x), reference(SeedRight, x)
				if in[i][0]&1 == 1 {
					for j := range wl {
						wl[j] ^= cwL[j]
						wr[j] ^= cwR[j]
					}
				}
				if out[2*i] != wl || out[2*i+1] != wr {
					t.Fatalf("n=%d parent %d (t=%d) wrong", n, i, in[i][0]&1)
				}
			}
			vl, vr := unaligned(n), unaligned(n)
			ExpandValuesFolded(vl, vr, in)
			for i := range in {
				x := in[i]
				x[0] &^= 1
				if vl[i] != reference(ValueLeft, x) || vr[i] != reference(ValueRight, x) {
					t.Fatalf("n=%d: ExpandValuesFolded wrong at %d", n, i)
				}
			}
			final := r.Uint64()
			for v := 0; v < 4; v++ {
				neg := v&1 == 1
				mask := Mask(64) // every variant: both parties, full and masked
				if v >= 2 {
					mask = Mask(1 + r.IntN(63))
				}
				words := make([]uint64, 2*n)
				ExpandTreeLeaves(words, in, &cwL, &cwR, final, neg, mask)
				for j := range words {
					v := binary.LittleEndian.Uint64(out[j][8:])
					if out[j][0]&1 == 1 {
						v += final
					}
					if neg {
						v = -v
					}
					if words[j] != v&mask {
						t.Fatalf("n=%d leaf %d (neg=%v) = %#x, want %#x", n, j, neg, words[j], v&mask)
					}
				}
			}
		}
	})
}

// BenchmarkDPFGenLevel reports, for every kernel with a fused DPF Gen
// level, the level's block rate as a fraction of that kernel's
// ExpandSeeds ("ratio"), both the fastest of interleaved 2 ms runs on the
// same blocks-in-flight budget (64 keys: 256 blocks).
func BenchmarkDPFGenLevel(b *testing.B) {
	EachKernel(func(name string) {
		if HasDPFGenLevel() {
			b.Run(name, benchDPFGenLevel)
		}
	})
}

func benchDPFGenLevel(b *testing.B) {
	const n, stride = 64, 546
	quads := make([]Block, 2*n)
	alpha := make([]uint64, n)
	out := make([]byte, n*stride)
	// The kernel reference hashes 2n seeds under two lanes: 4n = 256
	// blocks a call, as many as one DPFGenLevel call over n keys.
	in, l, r := make([]Block, 2*n), make([]Block, 2*n), make([]Block, 2*n)
	for i := range alpha {
		alpha[i] = uint64(i) * 0x9e3779b97f4a7c15
	}
	bestK, bestG := kernelAndStep(b, l, r, in, func() int {
		for j := range 16 {
			DPFGenLevel(quads, alpha, uint(j), out, stride, 22+16*j, 600-60, 0, false)
		}
		return 16 * 4 * n
	})
	b.ReportMetric(bestG/bestK, "ratio")
	b.ReportMetric(bestK, "kernel-blocks/s")
}

// kernelAndStep alternates ExpandSeeds(l, r, in) with step (which returns
// the blocks it hashed) in 2 ms runs and returns the best blocks/s of each.
func kernelAndStep(b *testing.B, l, r, in []Block, step func() int) (bestK, bestS float64) {
	for b.Loop() {
		for range 3 {
			c := 0
			start := time.Now()
			for c == 0 || time.Since(start) < 2*time.Millisecond {
				for range 16 {
					ExpandSeeds(l, r, in)
				}
				c += 16 * 2 * len(in)
			}
			bestK = max(bestK, float64(c)/time.Since(start).Seconds())
			c = 0
			start = time.Now()
			for c == 0 || time.Since(start) < 2*time.Millisecond {
				c += step()
			}
			bestS = max(bestS, float64(c)/time.Since(start).Seconds())
		}
	}
	return bestK, bestS
}

// BenchmarkDCFValues measures the fused DCF value step of each kernel that
// has one (4-byte values), as blocks/s (four value blocks per key) and as a
// fraction of that kernel's ExpandSeeds rate in the same run.
func BenchmarkDCFValues(b *testing.B) {
	EachKernel(func(name string) {
		if HasDCFValues(4) {
			b.Run(name, benchDCFValues)
		}
	})
}

func benchDCFValues(b *testing.B) {
	const n, stride = 64, 674
	quads := make([]Block, 2*n)
	alpha, beta, v := make([]uint64, n), make([]uint64, n), make([]uint64, n)
	out := make([]byte, n*stride)
	in, l, r := make([]Block, 2*n), make([]Block, 2*n), make([]Block, 2*n)
	for i := range alpha {
		alpha[i] = uint64(i) * 0x9e3779b97f4a7c15
		beta[i] = uint64(i)
	}
	bestK, bestV := kernelAndStep(b, l, r, in, func() int {
		for j := range 16 {
			DCFValues(quads, alpha, uint(j), beta, v, out[22+4*j:], stride, 4, Mask(32), false)
		}
		return 16 * 4 * n
	})
	b.ReportMetric(bestV/bestK, "ratio")
	b.ReportMetric(bestV, "blocks/s")
}
