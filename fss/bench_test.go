package fss

import (
	"fmt"
	"testing"
)

var benchWidths = []int{16, 32, 64}

func BenchmarkGen(b *testing.B) {
	for _, typ := range []Type{DPF, DCF} {
		for _, l := range benchWidths {
			p := Params{typ, l, l}
			b.Run(fmt.Sprintf("%v-%d", typ, l), func(b *testing.B) {
				var r0, r1 [16]byte
				for b.Loop() {
					r0[0]++
					if _, _, err := GenWithRoots(p, 12345, 678, r0, r1); err != nil {
						b.Fatal(err)
					}
				}
				b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "keys/s")
			})
		}
	}
}

func BenchmarkEval(b *testing.B) {
	for _, typ := range []Type{DPF, DCF} {
		for _, l := range benchWidths {
			p := Params{typ, l, l}
			b.Run(fmt.Sprintf("%v-%d", typ, l), func(b *testing.B) {
				k0, _, _ := Gen(nil, p, 12345, 678)
				x := uint64(0)
				for b.Loop() {
					x++
					k0.eval(x & 0xffff)
				}
				b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "points/s")
			})
		}
	}
}

// BenchmarkEvalAll evaluates 2^16 points: the whole domain at ℓ = 16, a
// range of it at ℓ = 32 and 64.
func BenchmarkEvalAll(b *testing.B) {
	const span = 1 << 16
	for _, typ := range []Type{DPF, DCF} {
		for _, l := range benchWidths {
			p := Params{typ, l, l}
			b.Run(fmt.Sprintf("%v-%d", typ, l), func(b *testing.B) {
				k0, _, _ := Gen(nil, p, 12345, 678)
				out := make([]uint64, span)
				for b.Loop() {
					if err := k0.EvalRange(0, span, out); err != nil {
						b.Fatal(err)
					}
				}
				b.ReportMetric(float64(b.N)*span/b.Elapsed().Seconds(), "points/s")
			})
		}
	}
}
