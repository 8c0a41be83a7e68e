package host

import (
	"context"
	"testing"

	"github.com/kord-fss/kord/fss"
	"github.com/kord-fss/kord/module/msg"
)

func BenchmarkTmpSlabDerived(b *testing.B) {
	ctx := context.Background()
	lp, _ := NewLocalPair(ctx, LocalOptions{InFlight: 1024})
	p := fss.Params{Type: fss.DPF, InBits: 32, OutBits: 32}
	for b.Loop() {
		s, err := lp.DerivedSlab(ctx, p, 1024, 0, true)
		if err != nil {
			b.Fatal(err)
		}
		s[0].Wipe()
		s[1].Wipe()
	}
	b.ReportMetric(float64(1024*b.N)/b.Elapsed().Seconds(), "keys/s")
	_ = msg.MAC
}
