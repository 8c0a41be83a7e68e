package gates

import (
	"fmt"
	"math/rand/v2"
	"testing"
)

// seeded is a deterministic io.Reader for reproducible tests.
type seeded struct{ r *rand.ChaCha8 }

func newSeeded(seed uint64) *seeded {
	var s [32]byte
	s[0] = byte(seed)
	s[1] = byte(seed >> 8)
	return &seeded{rand.NewChaCha8(s)}
}
func (s *seeded) Read(p []byte) (int, error) { return s.r.Read(p) }

func dealer(seed uint64) *DealerSource { return &DealerSource{Rand: newSeeded(seed)} }

// TestExhaustive8 checks every block on every input at ℓ = 8 (every pair of
// inputs for the two-input blocks) against the plaintext reference, over
// loopback TCP.
func TestExhaustive8(t *testing.T) {
	rnd := newSeeded(1)
	gs, err := StandardGates(8, rnd)
	if err != nil {
		t.Fatal(err)
	}
	// extra parameters that exercise edges
	gs = append(gs,
		CMP{Bits: 8, Out: 8, C: 0}, CMP{Bits: 8, Out: 8, C: 1}, CMP{Bits: 8, Out: 8, C: 255}, CMP{Bits: 8, Out: 16, C: 256},
		Mod{Bits: 8, M: 3}, Mod{Bits: 8, M: 200}, Mod{Bits: 8, M: 10, Span: 2},
		TR{Bits: 8, Shift: 1}, TR{Bits: 8, Shift: 7},
		DigDec{Bits: 8, D: 1}, DigDec{Bits: 8, D: 4}, DigDec{Bits: 8, D: 8},
		Ctn{Bits: 8, Out: 8, Knots: []uint64{0, 1, 254, 255}},
		Approx{Bits: 8, Out: 8, Knots: []uint64{64, 192}, Coeffs: [][]uint64{{1, 2}, {3, 4}, {250, 7}}},
		Approx{Bits: 8, Out: 6, Knots: []uint64{1, 100, 255}, Coeffs: [][]uint64{{1, 2, 3, 4}, {3, 4, 5, 6}, {250, 7, 9, 1}, {0, 0, 0, 0}}},
		Approx{Bits: 8, Out: 8, Knots: nil, Coeffs: [][]uint64{{9}}},
		DReLU(8, 1), EQ{Bits: 8, Out: 1},
	)
	for i, g := range gs {
		t.Run(fmt.Sprintf("%d-%s-%s", i, g.Name(), g.Variant()), func(t *testing.T) {
			t.Parallel()
			in := AllInputs(g)
			if _, err := Check(g, dealer(uint64(100+i)), newSeeded(uint64(200+i)), in); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// TestRandomWide checks every block at ℓ ∈ {16, 18, 32, 64} on random inputs
// plus edge values, with keys from a pair of key-generation modules.
func TestRandomWide(t *testing.T) {
	src := newModules(t)
	for _, bits := range []int{16, 18, 32, 64} {
		rnd := newSeeded(uint64(bits))
		gs, err := StandardGates(bits, rnd)
		if err != nil {
			t.Fatal(err)
		}
		for i, g := range gs {
			t.Run(fmt.Sprintf("%d-%s-%s", bits, g.Name(), g.Variant()), func(t *testing.T) {
				t.Parallel()
				count := 300
				if g.Name() == "PubLUT" || g.Name() == "Approx" && bits > 16 {
					count = 12
				}
				in, err := RandomInputs(g, newSeeded(uint64(300+bits+i)), count)
				if err != nil {
					t.Fatal(err)
				}
				if _, err := Check(g, src, newSeeded(uint64(500+bits+i)), in); err != nil {
					t.Fatal(err)
				}
			})
		}
	}
}
