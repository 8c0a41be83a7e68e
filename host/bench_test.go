package host

import (
	"context"
	"testing"

	"github.com/kord-fss/kord/fss"
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
