package service

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/kord-fss/kord/client"
	"github.com/kord-fss/kord/fss"
	"github.com/kord-fss/kord/internal/both"
	"github.com/kord-fss/kord/internal/daemon"
	"github.com/kord-fss/kord/internal/prg"
	"github.com/kord-fss/kord/module"
	"github.com/kord-fss/kord/module/moduletest"
	"github.com/kord-fss/kord/module/msg"
	"github.com/kord-fss/kord/module/socket"
	"github.com/kord-fss/kord/module/store"
	pb "github.com/kord-fss/kord/proto/kordpb"
)

// site is one party with its in-process durable module, served over gRPC
// on loopback.
type site struct {
	party   *Party
	app     *client.Client
	addr    string // app/peer address
	srv     *grpc.Server
	cancel  context.CancelFunc
	st      *store.Bolt
	modPath string
}

func openModule(t testing.TB, party int, path string, secret []byte) (*module.Durable, *store.Bolt) {
	t.Helper()
	return moduletest.OpenDurable(t, party, path, 0, secret)
}

func startSite(t testing.TB, party int, mod socket.Module, peerAddr string, c Config, opts ...grpc.ServerOption) *site {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	c.Party, c.Module, c.PeerAddr = party, mod, peerAddr
	if c.PeerCreds == nil {
		c.PeerPlaintext = true
	}
	if testing.Verbose() {
		c.Logger = slog.New(slog.NewTextHandler(os.Stderr, nil))
	}
	return serveSite(t, l, c, opts...)
}

// serveSite runs a party of config c on l, with the daemons' server
// options (kord's codec, windows, buffers) and opts, and dials its
// application API; the test's cleanup stops it all.
func serveSite(t testing.TB, l net.Listener, c Config, opts ...grpc.ServerOption) *site {
	t.Helper()
	p, err := New(c)
	if err != nil {
		t.Fatal(err)
	}
	srv := grpc.NewServer(append(daemon.ServerOptions(), opts...)...)
	p.Register(srv, srv)
	go srv.Serve(l)
	ctx, cancel := context.WithCancel(context.Background())
	go p.Run(ctx)
	cl, err := client.Dial(l.Addr().String(), nil)
	if err != nil {
		t.Fatal(err)
	}
	s := &site{party: p, app: cl, addr: l.Addr().String(), srv: srv, cancel: cancel}
	t.Cleanup(func() { cancel(); cl.Close(); srv.Stop(); p.Close() })
	return s
}

// pairOfSites builds two paired parties with durable in-process modules.
func pairOfSites(t *testing.T, c Config) [2]*site { return pairOfSitesWith(t, c) }

// pairOfSitesWith is pairOfSites with server options for party 1's gRPC
// server.
func pairOfSitesWith(t testing.TB, c Config, opts ...grpc.ServerOption) [2]*site {
	dir := t.TempDir()
	secret := []byte("provisioning secret for tests!!")
	var s [2]*site
	d1, st1 := openModule(t, 1, filepath.Join(dir, "m1.db"), secret)
	d0, st0 := openModule(t, 0, filepath.Join(dir, "m0.db"), secret)
	t.Cleanup(func() { st0.Close(); st1.Close() })
	s[1] = startSite(t, 1, socket.Local(d1), "", c, opts...)
	s[0] = startSite(t, 0, socket.Local(d0), s[1].addr, c)
	if err := s[0].app.Pair(context.Background()); err != nil {
		t.Fatal(err)
	}
	return s
}

// checkPair evaluates a key pair at α, α±1 and a random point.
func checkPair(t testing.TB, k0, k1 *fss.Key, alpha, beta uint64) {
	t.Helper()
	p := k0.Params()
	m := prg.Mask(p.InBits)
	if err := fss.CheckPair(k0, k1, alpha, beta, alpha, (alpha+1)&m, (alpha-1)&m, rand.Uint64()&m); err != nil {
		t.Fatal(err)
	}
}

type want struct{ alpha, beta uint64 }

// testTier maps a tier's external name ("" for the party's default) to its
// msg.Tier, for test tables written with names.
func testTier(name string) msg.Tier {
	if name == "" {
		return 0
	}
	t, err := msg.ParseTier(name)
	if err != nil {
		panic(err) // a test table names a tier that does not exist
	}
	return t
}

// boundRequests draws n pairs (α, β ≠ 0) and both sites' bound requests
// for them: ids base, base+1, …, request i in tier tiers[i % len(tiers)].
func boundRequests(p fss.Params, base uint64, n int, tiers ...string) ([]want, [2][]*pb.KeyRequest) {
	ma, mb := prg.Mask(p.InBits), prg.Mask(p.OutBits)
	ws := make([]want, n)
	var reqs [2][]*pb.KeyRequest
	for i := range ws {
		ws[i] = want{rand.Uint64() & ma, rand.Uint64()&mb | 1}
		a0, b0 := rand.Uint64()&ma, rand.Uint64()&mb
		id, tier := base+uint64(i), tiers[i%len(tiers)]
		reqs[0] = append(reqs[0], client.Bound(id, testTier(tier), p, a0, b0))
		reqs[1] = append(reqs[1], client.Bound(id, testTier(tier), p, (ws[i].alpha-a0)&ma, (ws[i].beta-b0)&mb))
	}
	return ws, reqs
}

// streamBound streams n bound keys through both sites and checks every pair.
func streamBound(t *testing.T, s [2]*site, base uint64, n int, tier string, p fss.Params) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var streams [2]*client.Stream
	for b := 0; b < 2; b++ {
		st, err := s[b].app.Stream(ctx)
		if err != nil {
			t.Fatal(err)
		}
		streams[b] = st
	}
	ws, reqs := boundRequests(p, base, n, tier)
	var wg sync.WaitGroup
	for b := 0; b < 2; b++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for _, r := range reqs[b] {
				if err := streams[b].Send(r); err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	reps := recvBoth(t, streams, n)
	wg.Wait()
	checkBoundReplies(t, reps, base, ws)
}

// recvBoth reads n replies from each site's stream, both at once; a
// stream error fails t.
func recvBoth(t testing.TB, streams [2]*client.Stream, n int) (reps [2][]*client.Reply) {
	var wg sync.WaitGroup
	for b := 0; b < 2; b++ {
		goRecv(t, &wg, streams[b], n, &reps[b])
	}
	wg.Wait()
	if t.Failed() {
		t.FailNow()
	}
	return reps
}

// getBoth sends req(b) to site b, both at once, and returns the replies
// and the calls' and the replies' errors, joined.
func getBoth(ctx context.Context, s [2]*site, req func(b int) *pb.KeyRequest) ([2]*client.Reply, error) {
	return both.Pair(func(b int) (*client.Reply, error) {
		r, err := s[b].app.Get(ctx, req(b))
		if err == nil {
			err = r.Err
		}
		return r, err
	})
}

// goRecv reads n replies from st into *reps on a goroutine counted in
// wg; a stream error fails t (the caller checks after wg.Wait).
func goRecv(t testing.TB, wg *sync.WaitGroup, st *client.Stream, n int, reps *[]*client.Reply) {
	wg.Add(1)
	go func() {
		defer wg.Done()
		for range n {
			r, err := st.Recv()
			if err != nil {
				t.Error(err)
				return
			}
			*reps = append(*reps, r)
		}
	}()
}

// checkBoundReplies checks that reply i of both sites answers request
// base+i with one key pair, same counter, that evaluates to ws[i].
func checkBoundReplies(t testing.TB, reps [2][]*client.Reply, base uint64, ws []want) {
	t.Helper()
	for i := range ws {
		r0, r1 := reps[0][i], reps[1][i]
		if r0.Err != nil || r1.Err != nil {
			t.Fatalf("request %d: %v / %v", base+uint64(i), r0.Err, r1.Err)
		}
		if r0.ID != base+uint64(i) || r1.ID != r0.ID || len(r0.Shares) != 1 || len(r1.Shares) != 1 || r0.Shares[0].Counter != r1.Shares[0].Counter {
			t.Fatalf("request %d: ids %d/%d, %d/%d keys", base+uint64(i), r0.ID, r1.ID, len(r0.Shares), len(r1.Shares))
		}
		checkPair(t, r0.Shares[0].Key, r1.Shares[0].Key, ws[i].alpha, ws[i].beta)
	}
}

func TestBoundStreamAllTiers(t *testing.T) {
	s := pairOfSites(t, Config{Batch: 16, InFlight: 3})
	base := uint64(0)
	for _, tier := range []string{"otp", "mac", "batchmac"} {
		for _, p := range []fss.Params{{Type: fss.DPF, InBits: 16, OutBits: 16}, {Type: fss.DCF, InBits: 20, OutBits: 8}} {
			streamBound(t, s, base, 100, tier, p)
			base += 1000
		}
	}
}

// TestEarlyFramesBothWays: party 1 answers a batch in two parts (its
// frames, then its keys' digest) when party 0 asks for it, and in one part
// otherwise; keys pair either way and every reply takes the form asked for.
func TestEarlyFramesBothWays(t *testing.T) {
	for _, oneShot := range []bool{false, true} {
		var parts [2]atomic.Int64 // BatchReply messages with / without digest_follows
		count := grpc.StreamInterceptor(func(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, h grpc.StreamHandler) error {
			if strings.HasSuffix(info.FullMethod, "/Session") {
				ss = &countingStream{ServerStream: ss, parts: &parts}
			}
			return h(srv, ss)
		})
		c := Config{Batch: 16, InFlight: 3, oneShotReplies: oneShot}
		s := pairOfSitesWith(t, c, count)
		p := fss.Params{Type: fss.DCF, InBits: 16, OutBits: 16}
		streamBound(t, s, 0, 100, "mac", p)
		early, whole := parts[0].Load(), parts[1].Load()
		if oneShot && early != 0 || !oneShot && (early == 0 || early != whole) || whole == 0 {
			t.Fatalf("oneShot=%v: %d early parts, %d digests or whole replies", oneShot, early, whole)
		}
	}
}

type countingStream struct {
	grpc.ServerStream
	parts *[2]atomic.Int64
}

func (s *countingStream) SendMsg(m any) error {
	if br := m.(*pb.PeerMsg).GetBatchReply(); br != nil {
		if br.DigestFollows {
			s.parts[0].Add(1)
		} else {
			s.parts[1].Add(1)
		}
	}
	return s.ServerStream.SendMsg(m)
}

// TestAPIBadInput: every malformed request is answered with a clear
// bad_request error and moves no counter.
func TestAPIBadInput(t *testing.T) {
	s := pairOfSites(t, Config{Batch: 8})
	ctx := context.Background()
	p := fss.Params{Type: fss.DPF, InBits: 8, OutBits: 8}
	bad := []*pb.KeyRequest{
		{Id: 1, Mode: "sideways", Tier: "mac", Type: "dpf", InBits: 8, OutBits: 8},
		{Id: 2, Mode: "bound", Tier: "rot13", Type: "dpf", InBits: 8, OutBits: 8},
		{Id: 3, Mode: "bound", Tier: "mac", Type: "xor", InBits: 8, OutBits: 8},
		{Id: 4, Mode: "bound", Tier: "mac", Type: "dpf", InBits: 0, OutBits: 8},
		{Id: 5, Mode: "bound", Tier: "mac", Type: "dpf", InBits: 8, OutBits: 65},
		client.Bound(6, msg.MAC, p, 1<<8, 0),
		client.Consume(7, msg.MAC, p, 0, 0, nil),
		client.Consume(8, msg.MAC, p, 0, 0, []uint64{1 << 9}),
		client.Derived(9, p, MaxCount+1, 0, false),
		client.Derived(10, p, 1, 5, true),
		{Id: 11, Mode: "derived", Tier: "mac", Type: "dpf", InBits: 8, OutBits: 8},
	}
	for b := 0; b < 2; b++ {
		before, _ := s[b].app.Status(ctx)
		for _, r := range bad {
			rep, err := s[b].app.Get(ctx, r)
			if err != nil {
				t.Fatal(err)
			}
			var re *client.ReplyError
			if !errors.As(rep.Err, &re) || re.Class != ErrClassBadRequest {
				t.Errorf("party %d, request %d: %v, want bad_request", b, r.Id, rep.Err)
			}
		}
		after, _ := s[b].app.Status(ctx)
		if after.Module.NextCounter != before.Module.NextCounter {
			t.Errorf("party %d: bad input moved the counter", b)
		}
	}
}

// TestMismatchedRequestsRefused: the two sites ask for different shapes
// under one id; both get a mismatch error, never keys, and the stream goes on.
func TestMismatchedRequestsRefused(t *testing.T) {
	// Both requests must arrive within the match timeout to be compared
	// (else each is unmatched): 2 s, for a busy machine.
	s := pairOfSites(t, Config{Batch: 8, MatchTimeout: 2 * time.Second})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	reps, _ := getBoth(ctx, s, func(b int) *pb.KeyRequest {
		return client.Bound(77, msg.MAC, fss.Params{Type: fss.DPF, InBits: 8 + b, OutBits: 8}, 0, 0)
	})
	for b := 0; b < 2; b++ {
		var re *client.ReplyError
		if reps[b] == nil || !errors.As(reps[b].Err, &re) || re.Class != ErrClassMismatch {
			t.Fatalf("party %d: %+v, want a mismatch error", b, reps[b])
		}
	}
	streamBound(t, s, 1000, 20, "mac", fss.Params{Type: fss.DPF, InBits: 8, OutBits: 8})
}

// TestPackedAndPlainReplies: site 0's application reads packed replies
// (client.Stream), site 1's is an older client that does not ask for them
// and gets one KeyReply per request; bound, derived and consume keys pair
// either way, and an error reply between them arrives in order.
func TestPackedAndPlainReplies(t *testing.T) {
	var packedMsgs, plainMsgs atomic.Int64
	count := grpc.StreamInterceptor(func(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, h grpc.StreamHandler) error {
		if strings.HasSuffix(info.FullMethod, "/Keys") {
			ss = &replyCounter{ServerStream: ss, packed: &packedMsgs, plain: &plainMsgs}
		}
		return h(srv, ss)
	})
	s := pairOfSitesWith(t, Config{Batch: 8, InFlight: 2}, count) // counts site 1's replies
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	p := fss.Params{Type: fss.DCF, InBits: 12, OutBits: 12}
	m := prg.Mask(12)
	type truth struct{ alpha, beta uint64 }
	var reqs [2][]*pb.KeyRequest
	var ts []truth
	for i := 0; i < 30; i++ {
		id := uint64(i + 1)
		switch (i + 1) % 3 { // derived first: a packed message whose first key has shares
		case 0:
			tr := truth{rand.Uint64() & m, rand.Uint64()&m | 1}
			a0, b0 := rand.Uint64()&m, rand.Uint64()&m
			reqs[0] = append(reqs[0], client.Bound(id, msg.MAC, p, a0, b0))
			reqs[1] = append(reqs[1], client.Bound(id, msg.MAC, p, (tr.alpha-a0)&m, (tr.beta-b0)&m))
			ts = append(ts, tr)
		case 1:
			for b := 0; b < 2; b++ {
				reqs[b] = append(reqs[b], client.Derived(id, p, 3, 0, true))
			}
			ts = append(ts, truth{})
		case 2:
			tr := truth{rand.Uint64() & m, rand.Uint64()&m | 1}
			a0, b0 := rand.Uint64()&m, rand.Uint64()&m
			pts := []uint64{tr.alpha, (tr.alpha - 1) & m, (tr.alpha + 1) & m}
			reqs[0] = append(reqs[0], client.Consume(id, msg.Keystream, p, a0, b0, pts))
			reqs[1] = append(reqs[1], client.Consume(id, msg.Keystream, p, (tr.alpha-a0)&m, (tr.beta-b0)&m, pts))
			ts = append(ts, tr)
		}
	}
	// A malformed request in the middle gets an error reply in its place.
	bad := &pb.KeyRequest{Id: 999, Mode: "bound", Type: "dpf", InBits: 0, OutBits: 8, Tier: "mac"}
	reqs[0] = append(reqs[0][:15], append([]*pb.KeyRequest{bad}, reqs[0][15:]...)...)
	reqs[1] = append(reqs[1][:15], append([]*pb.KeyRequest{bad}, reqs[1][15:]...)...)

	var reps [2][]*client.Reply
	var wg sync.WaitGroup
	wg.Add(2)
	go func() { // site 1: packed
		defer wg.Done()
		st, err := s[1].app.Stream(ctx)
		if err != nil {
			t.Error(err)
			return
		}
		if err := st.SendBatch(reqs[1]); err != nil {
			t.Error(err)
			return
		}
		for range reqs[1] {
			r, err := st.Recv()
			if err != nil {
				t.Error(err)
				return
			}
			reps[1] = append(reps[1], r)
		}
	}()
	go func() { // site 0: an older client, raw stream, no packed_replies
		defer wg.Done()
		conn, err := grpc.NewClient(s[0].addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
		if err != nil {
			t.Error(err)
			return
		}
		defer conn.Close()
		st, err := pb.NewKeySourceClient(conn).Keys(ctx)
		if err != nil {
			t.Error(err)
			return
		}
		if err := st.Send(&pb.KeyRequests{Requests: reqs[0]}); err != nil {
			t.Error(err)
			return
		}
		for len(reps[0]) < len(reqs[0]) {
			msg, err := st.Recv()
			if err != nil {
				t.Error(err)
				return
			}
			if msg.Packed != nil {
				t.Error("a client that did not ask for packed replies got them")
				return
			}
			for _, r := range msg.Replies {
				reps[0] = append(reps[0], client.Parse(r))
			}
		}
	}()
	wg.Wait()
	if t.Failed() {
		t.FailNow()
	}
	if plainMsgs.Load() == 0 || packedMsgs.Load() == 0 {
		t.Fatalf("site 1 sent %d plain (the error reply) and %d packed messages", plainMsgs.Load(), packedMsgs.Load())
	}
	for i := range reqs[0] {
		r0, r1 := reps[0][i], reps[1][i]
		if i == 15 {
			if r0.ID != 999 || r1.ID != 999 || r0.Err == nil || r1.Err == nil {
				t.Fatalf("reply 15: %+v / %+v, want the bad request's error", r0, r1)
			}
			continue
		}
		if r0.Err != nil || r1.Err != nil || r0.ID != r1.ID || r0.ID != reqs[0][i].Id || len(r0.Shares) != len(r1.Shares) {
			t.Fatalf("reply %d: %+v / %+v", i, r0, r1)
		}
		tr := ts[i-boolInt(i > 15)]
		for k := range r0.Shares {
			s0, s1 := r0.Shares[k], r1.Shares[k]
			if s0.Counter != s1.Counter {
				t.Fatalf("reply %d: counters %d / %d", i, s0.Counter, s1.Counter)
			}
			switch reqs[0][i].Mode {
			case "bound":
				checkPair(t, s0.Key, s1.Key, tr.alpha, tr.beta)
			case "derived":
				checkPair(t, s0.Key, s1.Key, (s0.AlphaShare+s1.AlphaShare)&m, (s0.BetaShare+s1.BetaShare)&m)
			case "consume":
				if len(s0.Evals) != 3 || len(s1.Evals) != 3 {
					t.Fatalf("reply %d: %d / %d evaluations", i, len(s0.Evals), len(s1.Evals))
				}
				for j, x := range []uint64{tr.alpha, (tr.alpha - 1) & m, (tr.alpha + 1) & m} {
					want := uint64(0)
					if x < tr.alpha {
						want = tr.beta
					}
					if got := (s0.Evals[j] + s1.Evals[j]) & m; got != want {
						t.Fatalf("reply %d: evaluation at %d: got %d want %d", i, x, got, want)
					}
				}
			}
		}
	}
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

type replyCounter struct {
	grpc.ServerStream
	packed, plain *atomic.Int64
}

func (s *replyCounter) SendMsg(m any) error {
	if r, ok := m.(*pb.KeyReplies); ok {
		if r.Packed != nil {
			s.packed.Add(1)
		}
		if len(r.Replies) > 0 {
			s.plain.Add(1)
		}
	}
	return s.ServerStream.SendMsg(m)
}

// TestPackedRequestsMalformed: a packed request message whose lists do not
// agree is answered with one bad_request reply per id, each naming the
// field and its request, and moves nothing; the stream goes on (a later
// message's bad requests are answered alike), and packed requests are
// still served.
func TestPackedRequestsMalformed(t *testing.T) {
	s := pairOfSites(t, Config{Batch: 8})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	st, err := s[0].app.Status(ctx)
	if err != nil || !st.PackedRequests {
		t.Fatalf("party does not say it reads packed requests: %v", err)
	}
	conn, err := grpc.NewClient(s[0].addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	ks, err := pb.NewKeySourceClient(conn).Keys(ctx)
	if err != nil {
		t.Fatal(err)
	}
	// recv reads replies until it has n, and checks each is a bad_request
	// for id ids[i] whose message names field[i] and the id.
	recv := func(ids []uint64, fields []string) {
		t.Helper()
		var got []*pb.KeyReply
		for len(got) < len(ids) {
			m, err := ks.Recv()
			if err != nil {
				t.Fatal(err)
			}
			got = append(got, m.Replies...)
		}
		if len(got) != len(ids) {
			t.Fatalf("malformed packed requests: %d replies, want %d", len(got), len(ids))
		}
		for i, r := range got {
			if r.Id != ids[i] || r.ErrorClass != ErrClassBadRequest || !strings.Contains(r.Error, fields[i]) ||
				!strings.Contains(r.Error, fmt.Sprint(ids[i])) {
				t.Fatalf("reply %d: %+v, want bad_request for id %d naming %s", i, r, ids[i], fields[i])
			}
		}
	}
	// One shape for two ids: each id is refused, naming the list.
	if err := ks.Send(&pb.KeyRequests{Packed: &pb.PackedRequests{Ids: []uint64{5, 6}, Shapes: make([]byte, 6)}}); err != nil {
		t.Fatal(err)
	}
	recv([]uint64{5, 6}, []string{"shapes", "shapes"})
	// The stream goes on: a bad derive_beta byte and a bad width, each
	// named with its own request.
	sh := []byte{byte(msg.Derived), 0, byte(fss.DPF), 8, 8, 2, byte(msg.Derived), 0, byte(fss.DPF), 0, 8, 0}
	if err := ks.Send(&pb.KeyRequests{Packed: &pb.PackedRequests{Ids: []uint64{8, 9}, Shapes: sh, AlphaShares: make([]uint64, 2),
		BetaShares: make([]uint64, 2), Counts: make([]uint32, 2), Betas: make([]uint64, 2)}}); err != nil {
		t.Fatal(err)
	}
	recv([]uint64{8, 9}, []string{"derive_beta", "in_bits"})
	after, err := s[0].app.Status(ctx)
	if err != nil || after.Module.GetNextCounter() != st.Module.GetNextCounter() || after.KeysDelivered != st.KeysDelivered {
		t.Fatalf("a malformed packed message moved counters: %v → %v (%v)", st.Module, after.Module, err)
	}
	streamBoundBatched(t, s, 100, 40, "otp", fss.Params{Type: fss.DPF, InBits: 10, OutBits: 10})
}

// streamBoundBatched is streamBound with SendBatch (packed requests).
func streamBoundBatched(t *testing.T, s [2]*site, base uint64, n int, tier string, p fss.Params) {
	t.Helper()
	ws, reqs := boundRequests(p, base, n, tier)
	reps := streamBothBy(t, s, reqs, n) // all n in one message
	for i := range n {
		r0, r1 := reps[0][i], reps[1][i]
		if r0.Err != nil || r1.Err != nil || r0.ID != base+uint64(i) || r1.ID != r0.ID {
			t.Fatalf("request %d: %+v / %+v", i, r0, r1)
		}
		checkPair(t, r0.Shares[0].Key, r1.Shares[0].Key, ws[i].alpha, ws[i].beta)
	}
}

// TestRepliesNotHeldForLaterRequests: the replies of a delivered batch
// reach the application while its later requests are still unanswered.
// Site 1's application sends requests 9..16 only after site 0's has read
// replies 1..8; a party that held replies back until later ones were ready
// would stall until the match timeout refused the second batch.
func TestRepliesNotHeldForLaterRequests(t *testing.T) {
	s := pairOfSites(t, Config{Batch: 8, InFlight: 2, MatchTimeout: 20 * time.Second})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	p := fss.Params{Type: fss.DPF, InBits: 12, OutBits: 12}
	const n = 16
	ws, reqs := boundRequests(p, 1, n, "mac")
	var st [2]*client.Stream
	for b := 0; b < 2; b++ {
		var err error
		if st[b], err = s[b].app.Stream(ctx); err != nil {
			t.Fatal(err)
		}
	}
	if err := st[0].SendBatch(reqs[0]); err != nil {
		t.Fatal(err)
	}
	if err := st[1].SendBatch(reqs[1][:n/2]); err != nil {
		t.Fatal(err)
	}
	var reps [2][]*client.Reply
	for range n / 2 {
		r, err := st[0].Recv()
		if err != nil {
			t.Fatal(err)
		}
		reps[0] = append(reps[0], r)
	}
	if err := st[1].SendBatch(reqs[1][n/2:]); err != nil {
		t.Fatal(err)
	}
	for len(reps[0]) < n {
		r, err := st[0].Recv()
		if err != nil {
			t.Fatal(err)
		}
		reps[0] = append(reps[0], r)
	}
	for range n {
		r, err := st[1].Recv()
		if err != nil {
			t.Fatal(err)
		}
		reps[1] = append(reps[1], r)
	}
	for i := range n {
		r0, r1 := reps[0][i], reps[1][i]
		if r0.Err != nil || r1.Err != nil || r0.ID != uint64(i+1) || r1.ID != r0.ID {
			t.Fatalf("request %d: %v / %v", i+1, r0.Err, r1.Err)
		}
		checkPair(t, r0.Shares[0].Key, r1.Shares[0].Key, ws[i].alpha, ws[i].beta)
	}
}
