package client_test

import (
	"context"
	"errors"
	"io"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/kord-fss/kord/client"
	"github.com/kord-fss/kord/fss"
	"github.com/kord-fss/kord/internal/prg"
	pb "github.com/kord-fss/kord/proto/kordpb"
	"github.com/kord-fss/kord/service"
)

// TestPoolID: the pair rides in the id's top bits and the application's
// sequence number below; what does not fit is refused.
func TestPoolID(t *testing.T) {
	for _, c := range []struct {
		pair int
		seq  uint64
	}{{0, 0}, {0, client.MaxPoolSeq}, {1, 42}, {client.MaxPoolPairs - 1, 7}} {
		id, err := client.PoolID(c.pair, c.seq)
		if err != nil || client.PoolPair(id) != c.pair || client.PoolSeq(id) != c.seq {
			t.Fatalf("PoolID(%d, %d) = %#x, %v: pair %d seq %d", c.pair, c.seq, id, err, client.PoolPair(id), client.PoolSeq(id))
		}
	}
	if _, err := client.PoolID(client.MaxPoolPairs, 1); err == nil || !strings.Contains(err.Error(), "pair 256") {
		t.Fatalf("pair out of range: %v", err)
	}
	if _, err := client.PoolID(1, client.MaxPoolSeq+1); err == nil || !strings.Contains(err.Error(), "does not fit") {
		t.Fatalf("seq out of range: %v", err)
	}
}

// startGroup starts k independent pairs (each its own modules, secret's
// pairing and state files) and returns each site's clients and each
// pair's stop functions.
func startGroup(t *testing.T, k int, tune func(*service.Config)) (sites [2][]*client.Client, stops [][2]func()) {
	t.Helper()
	for range k {
		cl, stop := startPartiesWith(t, tune)
		sites[0] = append(sites[0], cl[0])
		sites[1] = append(sites[1], cl[1])
		stops = append(stops, stop)
	}
	return sites, stops
}

// poolTruth is what the test, playing both applications, knows of one
// bound request.
type poolTruth struct {
	p           fss.Params
	alpha, beta uint64
}

// boundPair builds both sites' bound requests under seq with fresh α, β.
func boundPair(r *rand.Rand, seq uint64, p fss.Params) ([2]*pb.KeyRequest, poolTruth) {
	ma, mb := prg.Mask(p.InBits), prg.Mask(p.OutBits)
	w := poolTruth{p: p, alpha: r.Uint64() & ma, beta: r.Uint64()&mb | 1}
	a0, b0 := r.Uint64()&ma, r.Uint64()&mb
	return [2]*pb.KeyRequest{client.Bound(seq, 0, p, a0, b0), client.Bound(seq, 0, p, (w.alpha-a0)&ma, (w.beta-b0)&mb)}, w
}

// collect reads n replies from a pool stream.
func collect(t *testing.T, s *client.PoolStream, n int) map[uint64]client.PoolReply {
	t.Helper()
	got := map[uint64]client.PoolReply{}
	for len(got) < n {
		r, err := s.Recv()
		if err != nil {
			t.Fatalf("after %d of %d replies: %v", len(got), n, err)
		}
		if _, dup := got[r.ID]; dup {
			t.Fatalf("second reply for id %#x: %v", r.ID, r.Err)
		}
		got[r.ID] = r
	}
	return got
}

// TestPoolSpreadsAndPairs: site 0's pool spreads requests over three real
// pairs (parties over gRPC on loopback, each pair its own modules and
// pairing); site 1's pool follows the ids. Every request is answered at
// both sites by the pair its id names, the two shares carry one counter
// and pair (Eval(0,k0,x)+Eval(1,k1,x) = f(x)), and each pair's parties
// delivered exactly the keys routed to them.
func TestPoolSpreadsAndPairs(t *testing.T) {
	const k, n = 3, 60
	sites, _ := startGroup(t, k, nil)
	ctx, pools, streams := poolPair(t, sites, client.PoolOptions{})
	r := rand.New(rand.NewPCG(24, 1))
	truth := map[uint64]poolTruth{}
	routed := make([]int, k)
	shapes := []fss.Params{{Type: fss.DPF, InBits: 32, OutBits: 32}, {Type: fss.DCF, InBits: 16, OutBits: 20}}
	for seq := range uint64(n) {
		req, w := boundPair(r, seq, shapes[seq%2])
		pair, err := pools[0].Assign(req[0]) // the leader chooses; the id carries it
		if err != nil {
			t.Fatal(err)
		}
		if client.PoolPair(req[0].Id) != pair || client.PoolSeq(req[0].Id) != seq {
			t.Fatalf("assigned id %#x: pair %d seq %d, want %d, %d", req[0].Id, client.PoolPair(req[0].Id), client.PoolSeq(req[0].Id), pair, seq)
		}
		req[1].Id = req[0].Id // handed to site 1's application
		routed[pair]++
		truth[req[0].Id] = w
		for b := range streams {
			if err := streams[b].Send(req[b]); err != nil {
				t.Fatal(err)
			}
		}
	}
	for i, c := range routed {
		if c != n/k {
			t.Fatalf("pair %d got %d of %d requests, want %d (round robin)", i, c, n, n/k)
		}
	}
	var got [2]map[uint64]client.PoolReply
	for b := range streams {
		got[b] = collect(t, streams[b], n)
		if err := streams[b].CloseSend(); err != nil {
			t.Fatal(err)
		}
		if _, err := streams[b].Recv(); err != io.EOF {
			t.Fatalf("site %d after the last reply: %v, want io.EOF", b, err)
		}
	}
	for id, w := range truth {
		r0, r1 := got[0][id], got[1][id]
		if r0.Err != nil || r1.Err != nil {
			t.Fatalf("id %#x: %v / %v", id, r0.Err, r1.Err)
		}
		if r0.Pair != client.PoolPair(id) || r1.Pair != r0.Pair {
			t.Fatalf("id %#x answered by pairs %d and %d, its id names %d", id, r0.Pair, r1.Pair, client.PoolPair(id))
		}
		s0, s1 := r0.Shares[0], r1.Shares[0]
		m := prg.Mask(w.p.InBits)
		if s0.Counter != s1.Counter {
			t.Fatalf("id %#x: counters %d and %d", id, s0.Counter, s1.Counter)
		}
		if err := fss.CheckPair(s0.Key, s1.Key, w.alpha, w.beta, w.alpha, (w.alpha+1)&m, (w.alpha-1)&m, r.Uint64()&m); err != nil {
			t.Fatalf("id %#x: %v", id, err)
		}
	}
	for i := range k {
		for b := range sites {
			st, err := sites[b][i].Status(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if st.KeysDelivered != uint64(routed[i]) {
				t.Fatalf("pair %d party %d delivered %d keys, %d were routed to it", i, b, st.KeysDelivered, routed[i])
			}
		}
	}
}

// TestPoolHalvesFromOnePair: shares from two different module pairs do
// not pair even under one request's shares — what routing by id prevents.
func TestPoolHalvesFromOnePair(t *testing.T) {
	sites, _ := startGroup(t, 2, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	p := fss.Params{Type: fss.DPF, InBits: 16, OutBits: 16}
	req, w := boundPair(rand.New(rand.NewPCG(24, 2)), 5, p)
	var keys [2][2]*fss.Key // [pair][site]
	for pair := range 2 {
		var streams [2]*client.Stream
		for b := range streams {
			s, err := sites[b][pair].Stream(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if err := s.Send(req[b]); err != nil {
				t.Fatal(err)
			}
			streams[b] = s
		}
		for b, s := range streams {
			rep, err := s.Recv()
			if err != nil || rep.Err != nil {
				t.Fatalf("pair %d site %d: %v %v", pair, b, err, rep.Err)
			}
			keys[pair][b] = rep.Shares[0].Key
		}
	}
	for pair := range 2 {
		if err := fss.CheckPair(keys[pair][0], keys[pair][1], w.alpha, w.beta, w.alpha, w.alpha+1); err != nil {
			t.Fatalf("pair %d: %v", pair, err)
		}
	}
	if fss.CheckPair(keys[0][0], keys[1][1], w.alpha, w.beta, w.alpha, w.alpha+1, w.alpha-1) == nil {
		t.Fatal("site 0's share of pair 0 and site 1's of pair 1 pair up")
	}
}

// TestPoolPairDies: of two pairs, pair 1's party 0 dies while requests
// are outstanding on it. Every request still gets an answer at both
// sites; no id has keys at one site and not at the other; what pair 1
// left unanswered is spent (abandoned) at site 0 and refused at site 1
// (unmatched by its party, or abandoned by the pool); the leader then skips pair 1, and the
// application's second asks, with fresh α, are all delivered by pair 0.
func TestPoolPairDies(t *testing.T) {
	// Party 0 holds an unmatched request for a minute; party 1 refuses
	// one after 300 ms.
	sites, stops := startGroup(t, 2, func(c *service.Config) {
		c.MatchTimeout = []time.Duration{time.Minute, 300 * time.Millisecond}[c.Party]
	})
	ctx, pools, streams := poolPair(t, sites, client.PoolOptions{Stall: 2 * time.Second, Hold: time.Minute})
	r := rand.New(rand.NewPCG(24, 3))
	p := fss.Params{Type: fss.DPF, InBits: 32, OutBits: 32}
	truth := map[uint64]poolTruth{}
	seq := uint64(0)
	// send asks n requests, all assigned to pair (or to the leader's
	// choice when pair < 0), at site 0 only (onlySite0) or at both.
	send := func(n, pair int, onlySite0 bool) []uint64 {
		var ids []uint64
		for range n {
			req, w := boundPair(r, seq, p)
			seq++
			if pair >= 0 {
				req[0].Id, _ = client.PoolID(pair, req[0].Id)
			} else if _, err := pools[0].Assign(req[0]); err != nil {
				t.Fatal(err)
			}
			req[1].Id = req[0].Id
			truth[req[0].Id] = w
			ids = append(ids, req[0].Id)
			for b := range streams {
				if b == 1 && onlySite0 {
					continue
				}
				if err := streams[b].Send(req[b]); err != nil {
					t.Fatal(err)
				}
			}
		}
		return ids
	}
	// A first round on both pairs.
	first := send(8, -1, false)
	var got [2]map[uint64]client.PoolReply
	for b := range streams {
		got[b] = collect(t, streams[b], len(first))
	}
	// Pair 1 gets requests that site 1 has not sent yet (so they wait at
	// party 0, unmatched), and then its party 0 dies.
	stuck := send(6, 1, true)
	deadline := time.Now().Add(10 * time.Second)
	for streams[0].Pending(1) != len(stuck) && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	stops[1][0]()
	// Site 1's application now sends its halves: party 1 of pair 1 is up,
	// and fails them unmatched (its peer is gone).
	r1 := rand.New(rand.NewPCG(24, 4)) // site 1's halves need not pair: they never meet a partner
	for _, id := range stuck {
		if err := streams[1].Send(client.Bound(id, 0, p, r1.Uint64()&prg.Mask(32), r1.Uint64()&prg.Mask(32))); err != nil {
			t.Fatal(err)
		}
	}
	for b := range streams {
		for id, rep := range collect(t, streams[b], len(stuck)) {
			got[b][id] = rep
		}
	}
	for _, id := range stuck {
		r0, r1 := got[0][id], got[1][id]
		var re0, re1 *client.ReplyError
		if !errors.As(r0.Err, &re0) || !errors.As(r1.Err, &re1) {
			t.Fatalf("id %#x on the dead pair: site 0 %v, site 1 %v: want refusals at both", id, r0.Err, r1.Err)
		}
		if !r0.Abandoned || re0.Class != pb.ClassSpent || re0.AlphaReusable() {
			t.Fatalf("id %#x: site 0 got %+v abandoned=%v, want spent, abandoned", id, re0, r0.Abandoned)
		}
	}
	if pools[0].Check(ctx)[1] == nil || pools[0].Up(1) {
		t.Fatal("the leader still takes pair 1 after its party 0 died")
	}
	if why, downs := pools[0].Down(1); why == nil || downs == 0 {
		t.Fatalf("pair 1 down: %v, %d", why, downs)
	}
	// Second asks, fresh α: the leader puts all of them on pair 0.
	again := send(len(stuck), -1, false)
	for b := range streams {
		for id, rep := range collect(t, streams[b], len(again)) {
			got[b][id] = rep
		}
	}
	for _, id := range append(first, again...) {
		r0, r1 := got[0][id], got[1][id]
		if r0.Err != nil || r1.Err != nil {
			t.Fatalf("id %#x: %v / %v", id, r0.Err, r1.Err)
		}
		if client.PoolPair(id) == 1 && containsID(again, id) {
			t.Fatalf("id %#x of a second ask went to the dead pair", id)
		}
		w, m := truth[id], prg.Mask(32)
		if err := fss.CheckPair(r0.Shares[0].Key, r1.Shares[0].Key, w.alpha, w.beta, w.alpha, (w.alpha+1)&m); err != nil {
			t.Fatalf("id %#x: %v", id, err)
		}
	}
	for id := range truth { // nothing delivered at one site only
		if (got[0][id].Err == nil) != (got[1][id].Err == nil) {
			t.Fatalf("id %#x: keys at one site only (%v / %v)", id, got[0][id].Err, got[1][id].Err)
		}
	}
}

func containsID(ids []uint64, id uint64) bool {
	for _, x := range ids {
		if x == id {
			return true
		}
	}
	return false
}

// TestPoolStall: a pair that takes requests and answers none within
// Stall is abandoned: its requests come back spent and the pair is down.
// (Site 1 sends a request site 0 never sends; its party would answer
// unmatched only after the parties' match timeout, far longer.)
func TestPoolStall(t *testing.T) {
	sites, _ := startGroup(t, 1, func(c *service.Config) { c.MatchTimeout = time.Minute })
	pool, err := client.NewPool(1, sites[1], client.PoolOptions{Stall: 300 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	id, _ := client.PoolID(0, 9)
	rep := askPool(t, pool, id)
	var re *client.ReplyError
	if rep.ID != id || !rep.Abandoned || !errors.As(rep.Err, &re) || re.Class != pb.ClassSpent || !strings.Contains(re.Msg, "stalled") {
		t.Fatalf("stalled request: %+v %v", rep, rep.Err)
	}
	if pool.Up(0) {
		t.Fatal("a stalled pair is up")
	}
}

// TestPoolBadInput: bad pool input is refused with an error naming it.
func TestPoolBadInput(t *testing.T) {
	c, err := client.Dial("127.0.0.1:1", nil) // never dialled: no request is made
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	for _, tc := range []struct {
		site    int
		clients []*client.Client
		want    string
	}{{2, []*client.Client{c}, "site 2"}, {0, nil, "1..256 pairs, got 0"}, {1, []*client.Client{c, nil}, "pair 1 has no client"}} {
		if _, err := client.NewPool(tc.site, tc.clients, client.PoolOptions{}); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("NewPool(%d, %d clients): %v, want %q", tc.site, len(tc.clients), err, tc.want)
		}
	}
	p := fss.Params{Type: fss.DPF, InBits: 8, OutBits: 8}
	follower, _ := client.NewPool(1, []*client.Client{c}, client.PoolOptions{})
	if _, err := follower.Assign(client.Bound(1, 0, p, 0, 0)); err == nil || !strings.Contains(err.Error(), "only site 0") {
		t.Errorf("site 1 assigned: %v", err)
	}
	leader, _ := client.NewPool(0, []*client.Client{c, c}, client.PoolOptions{})
	if _, err := leader.Assign(client.Bound(client.MaxPoolSeq+1, 0, p, 0, 0)); err == nil || !strings.Contains(err.Error(), "does not fit") {
		t.Errorf("id too wide: %v", err)
	}
	s, _ := leader.Stream(context.Background())
	defer s.Close()
	bad, _ := client.PoolID(2, 1)
	if err := s.Send(client.Bound(bad, 0, p, 0, 0)); err == nil || !strings.Contains(err.Error(), "names pair 2") {
		t.Errorf("id naming pair 2 of 2: %v", err)
	}
	leader.MarkDown(0, errors.New("test: down"))
	leader.MarkDown(1, errors.New("test: also down"))
	if _, err := leader.Assign(client.Bound(1, 0, p, 0, 0)); !errors.Is(err, client.ErrNoPair) || !strings.Contains(err.Error(), "also down") {
		t.Errorf("all pairs down: %v", err)
	}
}

// TestPoolPairUnreachable: a request for a pair whose party cannot be
// reached comes back spent (abandoned) and the pair is down; the leader
// then skips it.
func TestPoolPairUnreachable(t *testing.T) {
	sites, _ := startGroup(t, 1, nil)
	dead, err := client.Dial("127.0.0.1:1", nil) // nothing listens there
	if err != nil {
		t.Fatal(err)
	}
	defer dead.Close()
	pool, err := client.NewPool(0, []*client.Client{sites[0][0], dead}, client.PoolOptions{Hold: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	id, _ := client.PoolID(1, 3)
	rep := askPool(t, pool, id)
	var re *client.ReplyError
	if rep.ID != id || rep.Pair != 1 || !rep.Abandoned || !errors.As(rep.Err, &re) || re.Class != pb.ClassSpent || !strings.Contains(re.Msg, "no stream opens") {
		t.Fatalf("request to an unreachable pair: %+v %v", rep, rep.Err)
	}
	for range 4 {
		r := client.Bound(7, 0, fss.Params{Type: fss.DPF, InBits: 8, OutBits: 8}, 0, 0)
		if pair, err := pool.Assign(r); err != nil || pair != 0 {
			t.Fatalf("the leader chose pair %d (%v) with pair 1 down", pair, err)
		}
	}
}

// askPool sends one DPF-8 bound request with id on a stream of pool and
// returns its reply; the stream stays open until the test ends.
func askPool(t *testing.T, pool *client.Pool, id uint64) client.PoolReply {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	s, err := pool.Stream(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	if err := s.Send(client.Bound(id, 0, fss.Params{Type: fss.DPF, InBits: 8, OutBits: 8}, 1, 2)); err != nil {
		t.Fatal(err)
	}
	rep, err := s.Recv()
	if err != nil {
		t.Fatal(err)
	}
	return rep
}

// poolPair makes each site's pool over sites (with opts) and opens a
// stream on each, under a one-minute context; the streams close and the
// context ends with the test.
func poolPair(t *testing.T, sites [2][]*client.Client, opts client.PoolOptions) (context.Context, [2]*client.Pool, [2]*client.PoolStream) {
	t.Helper()
	var pools [2]*client.Pool
	for b := range pools {
		var err error
		if pools[b], err = client.NewPool(b, sites[b], opts); err != nil {
			t.Fatal(err)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	t.Cleanup(cancel)
	var streams [2]*client.PoolStream
	for b := range streams {
		var err error
		if streams[b], err = pools[b].Stream(ctx); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { streams[b].Close() })
	}
	return ctx, pools, streams
}
