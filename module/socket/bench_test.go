package socket

import (
	"context"
	"testing"

	"github.com/kord-fss/kord/fss"
	"github.com/kord-fss/kord/module/msg"
)

// BenchmarkBatch measures one party's module daemon path per key the way
// the party daemon drives it: a packed submit of a batch of own shares,
// then the peer's frames and a collect of the whole range, both parties
// in turn over their own sockets (ns/op is per key pair).
func BenchmarkBatch(b *testing.B) {
	for _, c := range []struct {
		name string
		typ  fss.Type
		l    int
		tier msg.Tier
	}{{"dpf32-mac", fss.DPF, 32, msg.MAC}, {"dcf32-otp", fss.DCF, 32, msg.Keystream}} {
		b.Run(c.name, func(b *testing.B) {
			cs, _ := servedPair(b)
			ctx := context.Background()
			const batch = 256
			shares := make([]msg.Share, batch)
			b.ReportAllocs()
			b.ResetTimer()
			for done := 0; done < b.N; done += batch {
				var packed [2]Frames
				var first uint64
				for p := 0; p < 2; p++ {
					for i := range shares {
						shares[i] = msg.Share{Mode: msg.Bound, Type: c.typ, InBits: c.l, OutBits: c.l, AlphaShare: uint64(i*7 + p), BetaShare: uint64(i + 1)}
					}
					res, err := cs[p].Do(ctx, []Call{{Submit: &msg.SubmitRequest{Kind: msg.SubmitShares, Tier: c.tier, Shares: shares}}}, true)
					if err != nil || res[0].Err != nil {
						b.Fatal(err, res[0].Err)
					}
					packed[p] = res[0].Packed
					first = res[0].Submit.FirstCounter
				}
				for p := 0; p < 2; p++ {
					res, err := cs[p].Do(ctx, []Call{{Frames: &packed[1-p]}, {Range: &CollectRange{First: first, Count: batch}}}, true)
					if err != nil || res[0].Err != nil || res[1].Err != nil || len(res[1].Range) != batch {
						b.Fatal(err)
					}
				}
			}
		})
	}
}
