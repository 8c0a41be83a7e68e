package service

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/kord-fss/kord/client"
	"github.com/kord-fss/kord/fss"
	"github.com/kord-fss/kord/internal/prg"
	"github.com/kord-fss/kord/module/msg"
	pb "github.com/kord-fss/kord/proto/kordpb"
)

// BenchmarkStream streams bound DPF-32 keys (mac tier) through two paired
// parties over loopback gRPC, their modules in process, the way an
// application does: one stream per site, requests in chunks of 64, replies
// parsed into keys. ns/op is per key pair, for all of it in this process.
func BenchmarkStream(b *testing.B) {
	benchStream(b, Config{})
}

// BenchmarkStreamBatch is BenchmarkStream at several batch sizes: the
// difference between them is the fixed cost of a batch.
func BenchmarkStreamBatch(b *testing.B) {
	for _, n := range []int{64, 256, 1024} {
		b.Run(fmt.Sprint(n), func(b *testing.B) { benchStream(b, Config{Batch: n}) })
	}
}

func benchStream(b *testing.B, c Config) {
	s := pairOfSitesWith(b, c)
	p := fss.Params{Type: fss.DPF, InBits: 32, OutBits: 32}
	m := prg.Mask(32)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	const round = 4096
	var reqs [2][]*pb.KeyRequest
	for i := 0; i < round; i++ {
		for site := 0; site < 2; site++ {
			reqs[site] = append(reqs[site], client.Bound(0, msg.MAC, p, rand.Uint64()&m, rand.Uint64()&m))
		}
	}
	id := uint64(1)
	b.ReportAllocs()
	b.ResetTimer()
	for done := 0; done < b.N; done += round {
		for i := range reqs[0] {
			reqs[0][i].Id, reqs[1][i].Id = id, id
			id++
		}
		var wg sync.WaitGroup
		for site := 0; site < 2; site++ {
			st, err := s[site].app.Stream(ctx)
			if err != nil {
				b.Fatal(err)
			}
			wg.Add(2)
			go func() {
				defer wg.Done()
				for i := 0; i < round; i += 64 {
					if err := st.SendBatch(reqs[site][i : i+64]); err != nil {
						b.Error(err)
						return
					}
				}
				st.CloseSend()
			}()
			go func() {
				defer wg.Done()
				for range round {
					r, err := st.Recv()
					if err != nil || r.Err != nil {
						b.Error(err, r.Err)
						return
					}
				}
			}()
		}
		wg.Wait()
		if b.Failed() {
			b.FailNow()
		}
	}
}
