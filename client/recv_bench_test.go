package client

import (
	"fmt"
	"math/rand/v2"
	"runtime"
	"testing"

	"github.com/kord-fss/kord/fss"
)

// BenchmarkRecv is the application's receive path on the same received
// data: messages of 256 single-key replies (bound mode) replayed through
// the project's codec as gRPC hands them over, read with the per-key API
// (Recv: a Key parsed per key) and with batches (RecvBatch: views in
// place, released after use); "+eval" also evaluates each key once. Each
// op is one message; per-key figures are reported as ns/key, keys/s,
// allocs/key and B/key.
func BenchmarkRecv(b *testing.B) {
	const perMsg, msgs = 256, 8
	for _, p := range []fss.Params{{Type: fss.DPF, InBits: 32, OutBits: 32}, {Type: fss.DCF, InBits: 32, OutBits: 32}} {
		counts := make([][]int, msgs)
		for i := range counts {
			counts[i] = make([]int, perMsg)
			for j := range counts[i] {
				counts[i][j] = 1
			}
		}
		data, _ := packedMessages(b, rand.New(rand.NewPCG(1, 2)), p, counts, 1)
		for _, eval := range []bool{false, true} {
			name := ""
			if eval {
				name = "+eval"
			}
			b.Run(fmt.Sprintf("%v-32/Recv%s", p.Type, name), func(b *testing.B) {
				s := newWireStream(data[0], true)
				benchKeys(b, perMsg, func() {
					for range perMsg {
						r, err := s.Recv()
						if err != nil || r.Err != nil {
							b.Fatal(err, r.Err)
						}
						if eval {
							r.Shares[0].Key.Eval(5)
						}
					}
				})
			})
			b.Run(fmt.Sprintf("%v-32/RecvBatch%s", p.Type, name), func(b *testing.B) {
				s := newWireStream(data[0], true)
				benchKeys(b, perMsg, func() {
					bt, err := s.RecvBatch()
					if err != nil || bt.Len() != perMsg {
						b.Fatal(err, bt.Len())
					}
					if eval {
						for i := 0; i < bt.Len(); i++ {
							bt.Key(i).Eval(5)
						}
					}
					bt.Release()
				})
			})
		}
	}
}

// benchKeys runs op (which receives perOp keys) b.N times and reports
// per-key time, rate and allocations.
func benchKeys(b *testing.B, perOp int, op func()) {
	var m0, m1 runtime.MemStats
	runtime.ReadMemStats(&m0)
	for b.Loop() {
		op()
	}
	runtime.ReadMemStats(&m1)
	keys := float64(b.N) * float64(perOp)
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/keys, "ns/key")
	b.ReportMetric(keys/b.Elapsed().Seconds(), "keys/s")
	b.ReportMetric(float64(m1.Mallocs-m0.Mallocs)/keys, "allocs/key")
	b.ReportMetric(float64(m1.TotalAlloc-m0.TotalAlloc)/keys, "B/key")
}
