package twopc

import (
	"context"
	"testing"

	"github.com/kord-fss/kord/fss"
)

// BenchmarkGen is one key pair on loopback TCP, both parties in this
// process (so ns/op is the latency of one distributed Gen on 2 cores).
func BenchmarkGen(b *testing.B) {
	for _, p := range []fss.Params{
		{Type: fss.DPF, InBits: 8, OutBits: 64}, {Type: fss.DPF, InBits: 16, OutBits: 64},
		{Type: fss.DCF, InBits: 8, OutBits: 64}, {Type: fss.DCF, InBits: 16, OutBits: 64},
		{Type: fss.DPF, InBits: 20, OutBits: 64},
	} {
		b.Run(p.String(), func(b *testing.B) {
			pr := newPair(b)
			for b.Loop() {
				if _, _, err := pr.Gen(context.Background(), p, [2]uint64{1, 2}, [2]uint64{3, 4}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
