package infer

import (
	"math/rand/v2"
	"testing"

	"github.com/kord-fss/kord/fss"
	"github.com/kord-fss/kord/gates"
)

// BenchmarkConv compares the plain convolution loop (apply) with the
// im2col GEMM (applyFast, uint32 words at ℓ = 32) on ResNet-18 layer
// shapes as lowered (stride 1, padding already applied): stage 1's 3×3
// 64→64 on 58×58, stage 4's 3×3 512→512 on 9×9, and the stem as
// space-to-depth, 4×4 12→64 on 115×115. Report the ratio of the two
// ns/op of one run (the machine is shared).
func BenchmarkConv(b *testing.B) {
	shapes := []struct {
		name string
		l    Layer
		in   Shape
	}{
		{"stage1", Layer{Kind: Conv, In: 64, Out: 64, K: 3}, Shape{64, 58, 58}},
		{"stage4", Layer{Kind: Conv, In: 512, Out: 512, K: 3}, Shape{512, 9, 9}},
		{"stem", Layer{Kind: Conv, In: 12, Out: 64, K: 4}, Shape{12, 115, 115}},
	}
	r := rand.New(rand.NewPCG(1, 1))
	for _, s := range shapes {
		w := make([]uint64, s.l.weightLen())
		x := make([]uint64, s.in.Len())
		for i := range w {
			w[i] = r.Uint64() & mask(32)
		}
		for i := range x {
			x[i] = r.Uint64() & mask(32)
		}
		y := make([]uint64, outLen(&s.l, s.in))
		macs := float64(len(y) * s.l.In * s.l.K * s.l.K)
		b.Run(s.name+"/loop", func(b *testing.B) {
			for b.Loop() {
				apply(&s.l, s.in, w, x, y)
			}
			b.ReportMetric(macs*float64(b.N)/b.Elapsed().Seconds()/1e9, "GMAC/s")
		})
		b.Run(s.name+"/gemm32", func(b *testing.B) {
			for b.Loop() {
				applyFast(&s.l, s.in, w, x, y, 32)
			}
			b.ReportMetric(macs*float64(b.N)/b.Elapsed().Seconds()/1e9, "GMAC/s")
		})
		b.Run(s.name+"/gemm64", func(b *testing.B) {
			for b.Loop() {
				applyFast(&s.l, s.in, w, x, y, 64)
			}
			b.ReportMetric(macs*float64(b.N)/b.Elapsed().Seconds()/1e9, "GMAC/s")
		})
	}
}

// BenchmarkDCFCmp compares the ReLU/truncation comparison one key at a
// time (dcfCmp, two Key.Eval each) with the batched form the layers use
// (dcfCmpBatch, fss.BatchEval), on 8192 DCF(32→32) keys of one party.
func BenchmarkDCFCmp(b *testing.B) {
	const n = 8192
	p := fss.Params{Type: fss.DCF, InBits: 32, OutBits: 32}
	k, _, _, err := derivedN(&gates.DealerSource{}, p, n, false)
	if err != nil {
		b.Fatal(err)
	}
	keys := k[0]
	r := rand.New(rand.NewPCG(2, 2))
	xs := make([]uint64, n)
	for i := range xs {
		xs[i] = r.Uint64() & mask(32)
	}
	one := func(int) uint64 { return 1 }
	b.Run("single", func(b *testing.B) {
		for b.Loop() {
			for i, key := range keys {
				if _, err := dcfCmp(key, 32, xs[i], 1<<31, 1); err != nil {
					b.Fatal(err)
				}
			}
		}
		b.ReportMetric(float64(n*b.N)/b.Elapsed().Seconds(), "cmp/s")
	})
	b.Run("batch", func(b *testing.B) {
		for b.Loop() {
			if _, err := dcfCmpBatch(keys, 32, xs, 1<<31, one); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(n*b.N)/b.Elapsed().Seconds(), "cmp/s")
	})
}
