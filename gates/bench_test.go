package gates

import (
	"fmt"
	"testing"
)

// benchGates are the gates benchmarked at ℓ = 8 and 32 (PubLUT, PriLUT at 8).
func benchGates(b *testing.B, bits int) []Gate {
	gs, err := StandardGates(bits, newSeeded(9))
	if err != nil {
		b.Fatal(err)
	}
	return gs
}

// BenchmarkOffline measures key-complement generation (operations per
// second = keys/s ÷ keys per operation) through the dealer baseline and
// through the modules.
func BenchmarkOffline(b *testing.B) {
	mods := newModules(b)
	for _, bits := range []int{8, 32} {
		for _, g := range benchGates(b, bits) {
			for _, s := range []struct {
				name string
				src  KeySource
			}{{"dealer", &DealerSource{}}, {"modules", mods}} {
				b.Run(fmt.Sprintf("%s/%d/%s/%s", g.Name(), bits, g.Variant(), s.name), func(b *testing.B) {
					const batch = 64
					m := &Meter{Src: s.src}
					for b.Loop() {
						if _, err := g.Gen(m, nil, batch); err != nil {
							b.Fatal(err)
						}
					}
					b.ReportMetric(float64(b.N*batch)/b.Elapsed().Seconds(), "ops/s")
					b.ReportMetric(float64(len(m.Uses()))/b.Elapsed().Seconds(), "keys/s")
				})
			}
		}
	}
}

// BenchmarkOnline measures online evaluation over loopback TCP with a batch
// of 1024 operations per call (ops/s counts operations, not calls).
func BenchmarkOnline(b *testing.B) {
	for _, bits := range []int{8, 32} {
		for _, g := range benchGates(b, bits) {
			b.Run(fmt.Sprintf("%s/%d/%s", g.Name(), bits, g.Variant()), func(b *testing.B) {
				batch := 1024
				if g.Name() == "PriLUT" || g.Name() == "PubLUT" {
					batch = 64
				}
				in, err := RandomInputs(g, newSeeded(3), batch)
				if err != nil {
					b.Fatal(err)
				}
				shares, err := Split(nil, in, g.InBits())
				if err != nil {
					b.Fatal(err)
				}
				src := &DealerSource{}
				c0, c1, err := TCPPair()
				if err != nil {
					b.Fatal(err)
				}
				defer c0.Close()
				defer c1.Close()
				var elapsed float64
				for b.Loop() {
					b.StopTimer()
					mat, err := g.Gen(src, nil, len(in))
					if err != nil {
						b.Fatal(err)
					}
					b.StartTimer()
					if _, err := Online(g, [2]*Conn{c0, c1}, mat, shares); err != nil {
						b.Fatal(err)
					}
				}
				elapsed = b.Elapsed().Seconds()
				b.ReportMetric(float64(b.N*len(in))/elapsed, "ops/s")
			})
		}
	}
}
