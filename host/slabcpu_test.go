package host

import (
	"context"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/kord-fss/kord/fss"
	"github.com/kord-fss/kord/internal/prg"
	"github.com/kord-fss/kord/module/msg"
)

// BenchmarkSlabCPU is the in-process bulk path alone (no pair check):
// one LocalPair, 4096-key DerivedSlab or BoundSlab calls of DPF-32 and
// DCF-32, each slab released at once. It reports the process's CPU time
// per delivered pair (both modules, both parties) and that against raw
// fss.BatchGen's CPU per key of the same shape in the same run
// (cpu_ratio): CPU time is what a loaded machine does not distort.
//
//	go test ./host -run '^$' -bench SlabCPU -benchtime 100x
func BenchmarkSlabCPU(b *testing.B) {
	ctx := context.Background()
	const n = 4096
	for _, typ := range []fss.Type{fss.DPF, fss.DCF} {
		p := fss.Params{Type: typ, InBits: 32, OutBits: 32}
		for _, tier := range []msg.Tier{0, msg.Keystream, msg.MAC, msg.BatchMAC} {
			name := tier.String()
			if tier == 0 {
				name = "derived"
			}
			b.Run(fmt.Sprintf("%v-32/%s", typ, name), func(b *testing.B) {
				_, rawCPU := rawBatchGenRate(b, p)
				lp, err := NewLocalPair(ctx, LocalOptions{InFlight: n})
				if err != nil {
					b.Fatal(err)
				}
				defer lp.Close()
				rng := rand.New(rand.NewPCG(5, 6))
				var a, be [2][]uint64
				for x := range 2 {
					a[x], be[x] = make([]uint64, n), make([]uint64, n)
					for i := range n {
						a[x][i], be[x][i] = rng.Uint64()&prg.Mask(32), rng.Uint64()&prg.Mask(32)
					}
				}
				cpu0 := cpuTime()
				for b.Loop() {
					var s [2]*msg.Slab
					if tier == 0 {
						s, err = lp.DerivedSlab(ctx, p, n, 1, false)
					} else {
						s, err = lp.BoundSlab(ctx, tier, p, a, be)
					}
					if err != nil {
						b.Fatal(err)
					}
					lp.Release(s)
				}
				cpu := (cpuTime() - cpu0).Seconds()
				keys := float64(n * b.N)
				b.ReportMetric(cpu/keys*1e9, "cpu-ns/pair")
				b.ReportMetric(keys/cpu/rawCPU, "cpu_ratio")
			})
		}
	}
}
