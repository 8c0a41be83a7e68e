package fss

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/kord-fss/kord/internal/prg"
)

// BenchmarkBatchGen reports keys/s of one-worker batch generation and, as
// "ratio", its fraction of the kernel bound measured in the same run:
// keys/s × MMO blocks per key ÷ ExpandSeeds blocks/s.
func BenchmarkBatchGen(b *testing.B) {
	for _, typ := range []Type{DPF, DCF} {
		p := Params{typ, 32, 32}
		b.Run(fmt.Sprintf("%v-32", typ), func(b *testing.B) {
			r := rand.New(rand.NewPCG(1, 1))
			const k = 4096
			alpha, beta, root0, root1 := batchInputs(r, p, k)
			out0, out1 := make([]byte, k*p.KeySize()), make([]byte, k*p.KeySize())
			g, _ := NewBatchGen(p, BatchOptions{Workers: 1})
			kb := kernelBlocksPerSec(b)
			for b.Loop() {
				g.GenWithRoots(alpha, beta, root0, root1, out0, out1)
			}
			keys := float64(k*b.N) / b.Elapsed().Seconds()
			b.ReportMetric(keys, "keys/s")
			b.ReportMetric(keys*float64(BlocksPerGenKey(p))/kb, "ratio")
		})
	}
}

// kernelBlocksPerSec measures the active kernel on one goroutine for about
// 50 ms (the best of five 10 ms runs), on the block count of one BatchGen
// level call: both chains of GroupKeys keys under two lanes, 4·GroupKeys
// blocks a call.
func kernelBlocksPerSec(b *testing.B) float64 {
	in := make([]prg.Block, 2*GroupKeys)
	l, rr := make([]prg.Block, len(in)), make([]prg.Block, len(in))
	best := 0.0
	for range 5 {
		n := 0
		start := time.Now()
		for n == 0 || time.Since(start) < 10*time.Millisecond {
			for range 16 {
				prg.ExpandSeeds(l, rr, in)
			}
			n += 16 * 2 * len(in)
		}
		best = max(best, float64(n)/time.Since(start).Seconds())
	}
	return best
}

func BenchmarkSingleGen(b *testing.B) {
	for _, typ := range []Type{DPF, DCF} {
		p := Params{typ, 32, 32}
		b.Run(fmt.Sprintf("%v-32", typ), func(b *testing.B) {
			var r0, r1 prg.Block
			for b.Loop() {
				GenWithRoots(p, 12345, 678, r0, r1)
			}
		})
	}
}
