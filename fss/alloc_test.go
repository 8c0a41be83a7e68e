package fss

import (
	"testing"

	"github.com/kord-fss/kord/internal/prg"
	"github.com/kord-fss/kord/internal/prg/prgtest"
)

// TestSingleKeyAllocs checks that single-key Eval allocates nothing and
// that GenWithRoots allocates only the keys it returns: the same count for
// every width, so nothing per level. (The PRG dispatch must let the stack
// buffers of both stay on the stack.)
func TestSingleKeyAllocs(t *testing.T) {
	prgtest.Run(t, func(t *testing.T) {
		kern := prg.Active()
		for _, typ := range []Type{DPF, DCF} {
			var genAllocs []float64
			for _, l := range []int{4, 32, 64} {
				p := Params{typ, l, 32}
				k0, _, err := GenWithRoots(p, 5, 7, prg.Block{1}, prg.Block{2})
				if err != nil {
					t.Fatal(err)
				}
				if a := testing.AllocsPerRun(20, func() { k0.Eval(3) }); a != 0 {
					t.Errorf("%s %v: Eval allocates %v times", kern, p, a)
				}
				genAllocs = append(genAllocs, testing.AllocsPerRun(20, func() {
					GenWithRoots(p, 5, 7, prg.Block{1}, prg.Block{2})
				}))
			}
			if genAllocs[0] != genAllocs[1] || genAllocs[1] != genAllocs[2] {
				t.Errorf("%s %v: GenWithRoots allocations grow with ℓ = 4, 32, 64: %v", kern, typ, genAllocs)
			}
		}
	})
}
