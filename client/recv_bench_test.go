package client

import (
	"fmt"
	"math/rand/v2"
	"runtime"
	"syscall"
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

// BenchmarkRecvStride is RecvBatch on messages as a party sends a derived
// bulk: one reply of 1024 keys per message at key_stride, handed over in
// 16 KiB buffers as gRPC hands over its data frames. Each op is one
// message.
func BenchmarkRecvStride(b *testing.B) {
	const perMsg, msgs = 1024, 4
	for _, p := range []fss.Params{{Type: fss.DPF, InBits: 32, OutBits: 32}, {Type: fss.DCF, InBits: 32, OutBits: 32}} {
		counts := make([][]int, msgs)
		for i := range counts {
			counts[i] = []int{perMsg}
		}
		data, _ := packedMessages(b, rand.New(rand.NewPCG(1, 2)), p, counts, 1)
		b.Run(fmt.Sprintf("%v-32/RecvBatch", p.Type), func(b *testing.B) {
			s := newWireStream(strideForm(b, data[0]), true)
			s.s.(*wireStream).frame = 16 << 10
			benchKeys(b, perMsg, func() {
				bt, err := s.RecvBatch()
				if err != nil || bt.Len() != perMsg {
					b.Fatal(err, bt.Len())
				}
				bt.Release()
			})
		})
	}
}

// benchKeys runs op (which receives perOp keys) b.N times and reports
// per-key time, rate and allocations.
func benchKeys(b *testing.B, perOp int, op func()) {
	var m0, m1 runtime.MemStats
	runtime.ReadMemStats(&m0)
	c0 := cpuTime()
	for b.Loop() {
		op()
	}
	c1 := cpuTime()
	runtime.ReadMemStats(&m1)
	keys := float64(b.N) * float64(perOp)
	// CPU time, the process's (GC included): steadier than ns/key on a
	// busy machine, where the benchmark waits for a core.
	b.ReportMetric(float64(c1-c0)/keys, "cpu-ns/key")
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/keys, "ns/key")
	b.ReportMetric(keys/b.Elapsed().Seconds(), "keys/s")
	b.ReportMetric(float64(m1.Mallocs-m0.Mallocs)/keys, "allocs/key")
	b.ReportMetric(float64(m1.TotalAlloc-m0.TotalAlloc)/keys, "B/key")
}

// cpuTime is the process's user and system time so far, in ns.
func cpuTime() int64 {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return ru.Utime.Nano() + ru.Stime.Nano()
}
