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

// BenchmarkParseVsView reads the same serialized keys through ParseKey and
// through ViewKey / ViewSlab, alone and followed by one Eval each: what an
// application pays per received key. Each op is one key.
func BenchmarkParseVsView(b *testing.B) {
	const n = 1024
	for _, typ := range []Type{DPF, DCF} {
		p := Params{typ, 32, 32}
		alpha, beta := make([]uint64, n), make([]uint64, n)
		root0, root1 := make([][16]byte, n), make([][16]byte, n)
		for i := range alpha {
			alpha[i], beta[i] = uint64(i)*7919, uint64(i)
			root0[i][0], root0[i][1], root1[i][2] = byte(i), byte(i>>8), 1
		}
		slab, _, err := GenBatchWithRoots(p, alpha, beta, root0, root1)
		if err != nil {
			b.Fatal(err)
		}
		ks := p.KeySize()
		key := func(i int) []byte { i %= n; return slab[i*ks : (i+1)*ks] }
		run := func(name string, f func(i int)) {
			b.Run(fmt.Sprintf("%v-32/%s", typ, name), func(b *testing.B) {
				b.ReportAllocs()
				i := 0
				for b.Loop() {
					f(i)
					i++
				}
				b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "keys/s")
			})
		}
		run("ParseKey", func(i int) {
			if _, err := ParseKey(key(i)); err != nil {
				b.Fatal(err)
			}
		})
		run("ViewKey", func(i int) {
			if _, err := ViewKey(key(i)); err != nil {
				b.Fatal(err)
			}
		})
		run("ViewSlab", func(i int) { // per key: one slab of n keys per n ops
			if i%n == 0 {
				if _, err := ViewSlab(slab, p, n); err != nil {
					b.Fatal(err)
				}
			}
		})
		views := make([]KeyView, n)
		run("ViewKeys", func(i int) { // per key: one pass over n keys per n ops
			if i%n == 0 {
				if _, err := ViewKeys(views, slab, ks); err != nil {
					b.Fatal(err)
				}
			}
		})
		run("ParseKey+Eval", func(i int) {
			k, err := ParseKey(key(i))
			if err != nil {
				b.Fatal(err)
			}
			k.Eval(uint64(i))
		})
		run("ViewKey+Eval", func(i int) {
			v, err := ViewKey(key(i))
			if err != nil {
				b.Fatal(err)
			}
			v.Eval(uint64(i))
		})
	}
}
