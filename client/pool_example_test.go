package client_test

import (
	"context"
	"fmt"
	"log"
	"time"

	"github.com/kord-fss/kord/client"
	"github.com/kord-fss/kord/fss"
)

// ExamplePool plays both sites' applications against two running pairs
// (site 0's parties on 7300 and 7310, site 1's on 7301 and 7311): site 0's
// pool chooses the pair and writes it into the id; site 1's pool follows
// the id. In a deployment each site runs its own application, and site 0's
// hands the ids to site 1's as it hands over any id.
func ExamplePool() {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var pools [2]*client.Pool
	for b, addrs := range [][]string{{"127.0.0.1:7300", "127.0.0.1:7310"}, {"127.0.0.1:7301", "127.0.0.1:7311"}} {
		p, err := client.DialPool(b, addrs, client.PoolOptions{})
		if err != nil {
			log.Fatal(err)
		}
		defer p.Close()
		pools[b] = p
	}
	go pools[0].Watch(ctx, 100*time.Millisecond) // the leader skips pairs that are down

	p := fss.Params{Type: fss.DPF, InBits: 16, OutBits: 32}
	const alpha, beta = 1234, 99
	site0 := client.Bound(42, 0, p, 40000, 7) // 42: the application's sequence number
	site1 := client.Bound(42, 0, p, (alpha-40000)&(1<<16-1), (beta-7)&(1<<32-1))
	pair, err := pools[0].Assign(site0) // the leader chooses; site0.Id now names the pair
	if err != nil {
		log.Fatal(err) // client.ErrNoPair: no pair is up
	}
	site1.Id = site0.Id // handed to site 1's application

	var streams [2]*client.PoolStream
	for b := range streams {
		s, err := pools[b].Stream(ctx)
		if err != nil {
			log.Fatal(err)
		}
		defer s.Close()
		streams[b] = s
	}
	streams[0].Send(site0)
	streams[1].Send(site1)
	var keys [2]*fss.Key
	for b, s := range streams {
		r, err := s.Recv()
		if err != nil {
			log.Fatal(err)
		}
		if r.Err != nil { // a refusal; r.Abandoned: the pair died before it answered (spent)
			log.Fatal(r.Err)
		}
		keys[b] = r.Shares[0].Key
	}
	y0, _ := keys[0].Eval(alpha)
	y1, _ := keys[1].Eval(alpha)
	fmt.Println(pair == client.PoolPair(site0.Id), (y0+y1)&(1<<32-1))
	// With the parties running it prints:
	// true 99
}
