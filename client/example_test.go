package client_test

import (
	"context"
	"fmt"
	"log"
	"time"

	"github.com/kord-fss/kord/client"
	"github.com/kord-fss/kord/fss"
	"github.com/kord-fss/kord/module/msg"
	pb "github.com/kord-fss/kord/proto/kordpb"
)

// Each site's application holds only its additive shares of α and β; both
// sites send a request with the same id, mode, tier, type and widths.
// Building requests needs no server.
func ExampleBound() {
	p := fss.Params{Type: fss.DPF, InBits: 16, OutBits: 32}
	const alpha, beta = 1234, 99 // known to nobody in a real computation
	a0, b0 := uint64(40000), uint64(7)
	a1 := (alpha - a0) & (1<<16 - 1) // α = a0 + a1 mod 2^16
	b1 := (beta - b0) & (1<<32 - 1)  // β = b0 + b1 mod 2^32

	site0 := client.Bound(42, msg.MAC, p, a0, b0)
	site1 := client.Bound(42, msg.MAC, p, a1, b1)
	for _, r := range []*pb.KeyRequest{site0, site1} {
		fmt.Println(r.Id, r.Mode, r.Type, r.AlphaShare, r.BetaShare)
	}
	// Output:
	// 42 bound dpf 40000 7
	// 42 bound dpf 26770 92
}

// Example plays both sites' applications against two running, paired
// parties (docs/examples/two-sites.md starts them) and checks that the two
// key shares of a bound DPF add up to f: Eval(k0,x)+Eval(k1,x) = β at
// x = α and 0 elsewhere (mod 2^n). In a deployment each site runs its own
// application, which dials only its own party.
func Example() {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	p := fss.Params{Type: fss.DPF, InBits: 16, OutBits: 32}
	const alpha, beta = 1234, 99
	a0, b0 := uint64(40000), uint64(7)
	a := [2]uint64{a0, (alpha - a0) & (1<<16 - 1)}
	b := [2]uint64{b0, (beta - b0) & (1<<32 - 1)}

	// Send both sites' requests before reading a reply: a key is delivered
	// to either site only once both have asked for it.
	var streams [2]*client.Stream
	for i, addr := range []string{"127.0.0.1:7300", "127.0.0.1:7301"} { // party 0, party 1
		c, err := client.Dial(addr, nil)
		if err != nil {
			log.Fatal(err)
		}
		defer c.Close()
		if streams[i], err = c.Stream(ctx); err != nil {
			log.Fatal(err)
		}
		if err := streams[i].Send(client.Bound(42, msg.MAC, p, a[i], b[i])); err != nil {
			log.Fatal(err)
		}
	}
	var keys [2]*fss.Key
	for i, s := range streams {
		r, err := s.Recv() // replies come in request order
		if err != nil {
			log.Fatal(err)
		}
		if r.Err != nil { // *client.ReplyError: bad_request, mismatch, peer, unavailable
			log.Fatal(r.Err)
		}
		keys[i] = r.Shares[0].Key // this site's kord-v1 key share
		s.CloseSend()
	}
	for _, x := range []uint64{alpha - 1, alpha, alpha + 1} {
		y0, _ := keys[0].Eval(x)
		y1, _ := keys[1].Eval(x)
		fmt.Println(x, (y0+y1)&(1<<32-1))
	}
	// With the parties running it prints:
	// 1233 0
	// 1234 99
	// 1235 0
}

// RecvBatch reads a message's replies in place: views over the received
// buffer instead of a parsed Key per key, released (wiped and reused)
// once evaluated. It needs running parties, as Example does.
func ExampleStream_RecvBatch() {
	ctx := context.Background()
	c, err := client.Dial("127.0.0.1:7300", nil)
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()
	s, err := c.Stream(ctx)
	if err != nil {
		log.Fatal(err)
	}
	p := fss.Params{Type: fss.DPF, InBits: 32, OutBits: 32}
	// derived keys: α drawn in the modules; the other site asks the same
	if err := s.Send(client.Derived(7, p, 1000, 0, true)); err != nil {
		log.Fatal(err)
	}
	eval, _ := fss.NewBatchEval(p)
	for got := 0; got < 1000; {
		b, err := s.RecvBatch()
		if err != nil {
			log.Fatal(err)
		}
		for r := 0; r < b.Replies(); r++ {
			rep := b.Reply(r)
			if rep.Err != nil {
				log.Fatal(rep.Err)
			}
			xs, ys := make([]uint64, rep.N), make([]uint64, rep.N)
			if err := eval.EvalViews(b.ReplyViews(r), xs, ys); err != nil { // shares of f(0)
				log.Fatal(err)
			}
			for i := rep.First; i < rep.First+rep.N; i++ {
				_ = b.AlphaShare(i) // this site's share of key i's α, for the computation
			}
			got += rep.N
		}
		b.Release() // wipes the keys and shares; the memory serves a later message
	}
}
