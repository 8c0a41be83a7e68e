package host

import (
	"context"
	"testing"

	"github.com/kord-fss/kord/fss"
	"github.com/kord-fss/kord/module/msg"
)

func BenchmarkZZDerivedSlab(b *testing.B) {
	lp, err := NewLocalPair(context.Background(), LocalOptions{InFlight: 1024})
	if err != nil {
		b.Fatal(err)
	}
	defer lp.Close()
	p := fss.Params{Type: fss.DPF, InBits: 32, OutBits: 32}
	for b.Loop() {
		s, err := lp.DerivedSlab(context.Background(), p, 4096, 0, true)
		if err != nil {
			b.Fatal(err)
		}
		lp.Release(s)
	}
}

func BenchmarkZZBoundSlab(b *testing.B) {
	lp, err := NewLocalPair(context.Background(), LocalOptions{InFlight: 1024})
	if err != nil {
		b.Fatal(err)
	}
	defer lp.Close()
	p := fss.Params{Type: fss.DPF, InBits: 32, OutBits: 32}
	var as, bs [2][]uint64
	for x := range 2 {
		as[x], bs[x] = make([]uint64, 4096), make([]uint64, 4096)
	}
	for b.Loop() {
		s, err := lp.BoundSlab(context.Background(), msg.Keystream, p, as, bs)
		if err != nil {
			b.Fatal(err)
		}
		lp.Release(s)
	}
}
