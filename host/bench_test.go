package host

import (
	"context"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/kord-fss/kord/fss"
	"github.com/kord-fss/kord/internal/prg"
	"github.com/kord-fss/kord/module/msg"
)

// BenchmarkBoundMAC measures in-process bound keys (DPF-16, mac tier) per
// second through both modules and hosts.
func BenchmarkBoundMAC(b *testing.B) {
	lp, err := NewLocalPair(context.Background(), LocalOptions{InFlight: 64})
	if err != nil {
		b.Fatal(err)
	}
	defer lp.Close()
	var reqs [2][]Request
	for p := 0; p < 2; p++ {
		for i := 0; i < 64; i++ {
			reqs[p] = append(reqs[p], Request{Share: msg.Share{Mode: msg.Bound, Type: fss.DPF, InBits: 16, OutBits: 16}})
		}
	}
	b.ResetTimer()
	for i := 0; i < b.N; i += 64 {
		if _, err := lp.Generate(context.Background(), msg.MAC, reqs); err != nil {
			b.Fatal(err)
		}
	}
}

// rawBatchGenRate measures raw fss.BatchGen on one worker (both parties'
// keys, as a dealer would) for about 100 ms: keys/s of wall time (the best
// of five runs) and of CPU time.
func rawBatchGenRate(tb testing.TB, p fss.Params) (float64, float64) {
	const k = 4096
	r := rand.New(rand.NewPCG(1, 2))
	alpha, beta := make([]uint64, k), make([]uint64, k)
	r0, r1 := make([]prg.Block, k), make([]prg.Block, k)
	for i := range alpha {
		alpha[i], beta[i] = r.Uint64()&prg.Mask(p.InBits), r.Uint64()&prg.Mask(p.OutBits)
		r0[i][0], r1[i][0] = byte(i), byte(i+1)
	}
	out0, out1 := make([]byte, k*p.KeySize()), make([]byte, k*p.KeySize())
	g, err := fss.NewBatchGen(p, fss.BatchOptions{Workers: 1})
	if err != nil {
		tb.Fatal(err)
	}
	best, total := 0.0, 0
	cpu0 := cpuTime()
	for range 5 {
		n := 0
		start := time.Now()
		for n == 0 || time.Since(start) < 20*time.Millisecond {
			if err := g.GenWithRoots(alpha, beta, r0, r1, out0, out1); err != nil {
				tb.Fatal(err)
			}
			n += k
		}
		best = max(best, float64(n)/time.Since(start).Seconds())
		total += n
	}
	return best, float64(total) / (cpuTime() - cpu0).Seconds()
}

// BenchmarkDelivered measures, in one run per shape, raw fss.BatchGen on
// one worker and the keys an application receives from host.LocalPair
// (derived mode, and bound mode under each tier; through the *fss.Key API
// and the slab API), and reports the delivered rate and its ratio to raw
// BatchGen. Every pair is checked, outside the clock.
//
//	go test ./host -run '^$' -bench Delivered -benchtime 20x -count 3
func BenchmarkDelivered(b *testing.B) {
	ctx := context.Background()
	for _, typ := range []fss.Type{fss.DPF, fss.DCF} {
		p := fss.Params{Type: typ, InBits: 32, OutBits: 32}
		for _, tier := range []msg.Tier{0, msg.Keystream, msg.MAC, msg.BatchMAC} {
			mode, name := msg.Bound, tier.String()
			if tier == 0 {
				mode, name = msg.Derived, "derived"
			}
			for _, api := range []string{"keys", "slab"} {
				b.Run(fmt.Sprintf("%v-32/%s/%s", typ, name, api), func(b *testing.B) {
					raw, rawCPU := rawBatchGenRate(b, p)
					m, err := newDeliverer(ctx, p, mode, tier, benchBatch, api == "slab")
					if err != nil {
						b.Fatal(err)
					}
					defer m.close()
					m.cpuNow = cpuTime
					var keys int
					var clock, cpu time.Duration
					for b.Loop() {
						c0 := cpuTime()
						d, n, err := m.round(ctx)
						if err != nil {
							b.Fatal(err)
						}
						cpu += m.clockCPU - c0
						clock += d
						keys += n
					}
					if m.failed > 0 {
						b.Fatalf("%d pairs failed the check", m.failed)
					}
					rate := float64(keys) / clock.Seconds()
					b.ReportMetric(raw, "raw_keys/s")
					b.ReportMetric(rate, "keys/s")
					b.ReportMetric(rate/raw, "ratio")
					if cpu > 0 && rawCPU > 0 {
						// CPU time per delivered key against raw Gen's: the
						// ratio on one core, whatever else runs.
						b.ReportMetric(float64(keys)/cpu.Seconds()/rawCPU, "cpu_ratio")
					}
				})
			}
		}
	}
}
