package appauth_test

import (
	"context"
	"errors"
	"math/rand/v2"
	"net"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/kord-fss/kord/client"
	"github.com/kord-fss/kord/fss"
	"github.com/kord-fss/kord/internal/appauth"
	"github.com/kord-fss/kord/internal/peertls"
	"github.com/kord-fss/kord/internal/prg"
	"github.com/kord-fss/kord/module/moduletest"
	"github.com/kord-fss/kord/module/socket"
	pb "github.com/kord-fss/kord/proto/kordpb"
	"github.com/kord-fss/kord/service"
)

// tlsSites are two paired parties whose application APIs run TLS with
// client certificates from one kord certs directory (apps a, b and the
// operator), on loopback TCP, with real modules (in process) and a real
// gRPC peer link.
type tlsSites struct {
	dir   string
	addrs [2]string
}

func startTLSSites(t *testing.T, match time.Duration) *tlsSites {
	t.Helper()
	dir := t.TempDir()
	certs := filepath.Join(dir, "certs")
	if err := peertls.InitApps(certs, time.Hour, []string{"a", "b", "operator"}); err != nil {
		t.Fatal(err)
	}
	secret := []byte("provisioning secret for tests!!")
	s := &tlsSites{dir: certs}
	var peerAddr string
	for _, b := range []int{1, 0} {
		d, st := moduletest.OpenDurable(t, b, filepath.Join(dir, "m.db"+string(rune('0'+b))), 0, secret)
		t.Cleanup(func() { st.Close() })
		p, err := service.New(service.Config{Party: b, Module: socket.Local(d), PeerAddr: peerAddr, PeerPlaintext: true,
			MatchTimeout: match, Batch: 8})
		if err != nil {
			t.Fatal(err)
		}
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		f := peertls.PartyFiles(certs, b)
		opts, mode, err := appauth.Config{Listen: l.Addr().String(), TLSCert: f.Cert, TLSKey: f.Key, CA: f.CA}.ServerOptions(nil)
		if err != nil || mode != appauth.ModeTLS {
			t.Fatalf("server options: %v, mode %q", err, mode)
		}
		app := grpc.NewServer(append(serverOptions(), opts...)...)
		p.Register(app, nil)
		go app.Serve(l)
		s.addrs[b] = l.Addr().String()
		ctx, cancel := context.WithCancel(context.Background())
		if b == 1 {
			pl, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			ps := grpc.NewServer(append(serverOptions(), p.PeerServerOption())...)
			p.Register(nil, ps)
			go ps.Serve(pl)
			peerAddr = pl.Addr().String()
			t.Cleanup(ps.Stop)
		}
		go p.Run(ctx)
		t.Cleanup(func() { cancel(); app.Stop(); p.Close() })
	}
	op := s.dial(t, 0, "operator")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := op.Pair(ctx); err != nil {
		t.Fatal(err)
	}
	return s
}

// dial connects application name to site b.
func (s *tlsSites) dial(t *testing.T, b int, name string) *client.Client {
	t.Helper()
	f := peertls.AppFiles(s.dir, name)
	c, err := client.DialTLS(s.addrs[b], client.TLSFiles{Cert: f.Cert, Key: f.Key, CA: f.CA, ServerName: peertls.PartyName(b)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

var params = fss.Params{Type: fss.DPF, InBits: 16, OutBits: 16}

// sharedBound is both sites' bound requests for id with α, β drawn fresh.
func sharedBound(id uint64) (alpha, beta uint64, reqs [2]*pb.KeyRequest) {
	m := prg.Mask(16)
	alpha, beta = rand.Uint64()&m, rand.Uint64()&m|1
	a0, b0 := rand.Uint64()&m, rand.Uint64()&m
	reqs[0] = client.Bound(id, 0, params, a0, b0)
	reqs[1] = client.Bound(id, 0, params, (alpha-a0)&m, (beta-b0)&m)
	return
}

// get sends r on c and returns its reply (an error reply as Err).
func get(ctx context.Context, c *client.Client, r *pb.KeyRequest) (*client.Reply, error) {
	rep, err := c.Get(ctx, r)
	if err != nil {
		return nil, err
	}
	return rep, rep.Err
}

// TestAppsWithSameIDsDoNotCollide: applications a and b use the same ids
// at the same time, each at both sites; each gets key pairs for its own
// α and β (the parties keep the two requests apart by identity, and a
// batch carries one application's requests to party 1).
func TestAppsWithSameIDsDoNotCollide(t *testing.T) {
	s := startTLSSites(t, 2*time.Second)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var wg sync.WaitGroup
	for _, name := range []string{"a", "b"} {
		cs := [2]*client.Client{s.dial(t, 0, name), s.dial(t, 1, name)}
		if name == "b" {
			wg.Add(1)
			go func() { defer wg.Done(); streamBound(t, ctx, cs, 1, 12) }()
			continue
		}
		for id := uint64(1); id <= 12; id++ {
			alpha, beta, reqs := sharedBound(id)
			var reps [2]*client.Reply
			var errs [2]error
			wg.Add(1)
			go func() {
				defer wg.Done()
				var w sync.WaitGroup
				for b := range 2 {
					w.Add(1)
					go func() { defer w.Done(); reps[b], errs[b] = get(ctx, cs[b], reqs[b]) }()
				}
				w.Wait()
				if errs[0] != nil || errs[1] != nil {
					t.Errorf("app %s id %d: %v / %v", name, id, errs[0], errs[1])
					return
				}
				k0, k1 := reps[0].Shares[0].Key, reps[1].Shares[0].Key
				if err := fss.CheckPair(k0, k1, alpha, beta, alpha, (alpha+1)&0xffff, rand.Uint64()&0xffff); err != nil {
					t.Errorf("app %s id %d: the pair is not this application's function: %v", name, id, err)
				}
			}()
		}
	}
	wg.Wait()
}

// TestOtherAppCannotVoidOrSee: while a's request 7 waits at site 0 for
// its partner, b sends id 7 at both sites with another shape. Under one
// id space that made a's request a duplicate (b would learn a's id) or a
// mismatch (b would void it). Here b's pair is delivered, and a's is
// delivered too, each for its own α.
func TestOtherAppCannotVoidOrSee(t *testing.T) {
	s := startTLSSites(t, 3*time.Second)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	a0, a1 := s.dial(t, 0, "a"), s.dial(t, 1, "a")
	b0, b1 := s.dial(t, 0, "b"), s.dial(t, 1, "b")
	alphaA, betaA, ra := sharedBound(7)
	var repA [2]*client.Reply
	var errA [2]error
	done := make(chan struct{})
	go func() {
		defer close(done)
		repA[0], errA[0] = get(ctx, a0, ra[0]) // waits: site 1's a comes later
	}()
	time.Sleep(100 * time.Millisecond)
	// b's id 7, another width and mode, at both sites.
	rb := [2]*pb.KeyRequest{client.Derived(7, fss.Params{Type: fss.DCF, InBits: 8, OutBits: 8}, 1, 5, false),
		client.Derived(7, fss.Params{Type: fss.DCF, InBits: 8, OutBits: 8}, 1, 5, false)}
	var repB [2]*client.Reply
	var errB [2]error
	var w sync.WaitGroup
	for b, c := range []*client.Client{b0, b1} {
		w.Add(1)
		go func() { defer w.Done(); repB[b], errB[b] = get(ctx, c, rb[b]) }()
	}
	w.Wait()
	if errB[0] != nil || errB[1] != nil {
		t.Fatalf("b's request 7: %v / %v (a's pending request 7 must not touch it)", errB[0], errB[1])
	}
	if repB[0].Shares[0].Counter != repB[1].Shares[0].Counter {
		t.Fatalf("b's pair: counters %d / %d", repB[0].Shares[0].Counter, repB[1].Shares[0].Counter)
	}
	repA[1], errA[1] = get(ctx, a1, ra[1])
	<-done
	if errA[0] != nil || errA[1] != nil {
		t.Fatalf("a's request 7: %v / %v (b's request 7 must not void it)", errA[0], errA[1])
	}
	if err := fss.CheckPair(repA[0].Shares[0].Key, repA[1].Shares[0].Key, alphaA, betaA, alphaA, (alphaA+1)&0xffff); err != nil {
		t.Fatalf("a's pair: %v", err)
	}
	if repA[0].Shares[0].Counter == repB[0].Shares[0].Counter {
		t.Fatal("a and b got the same counter")
	}
}

// TestBatchOfAnotherAppRefused: a asks for id 9 at site 0 and b for id
// 9, same shape, at site 1. Party 0's batch names application a; party 1
// has no request of a's with id 9, so it refuses the batch (unmatched)
// and neither application gets a key.
func TestBatchOfAnotherAppRefused(t *testing.T) {
	s := startTLSSites(t, 400*time.Millisecond)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	_, _, reqs := sharedBound(9)
	cs := [2]*client.Client{s.dial(t, 0, "a"), s.dial(t, 1, "b")}
	var errs [2]error
	var reps [2]*client.Reply
	var w sync.WaitGroup
	for b := range 2 {
		w.Add(1)
		go func() { defer w.Done(); reps[b], errs[b] = get(ctx, cs[b], reqs[b]) }()
	}
	w.Wait()
	for b := range 2 {
		var re *client.ReplyError
		if !errors.As(errs[b], &re) || re.Class != pb.ClassUnmatched {
			t.Fatalf("site %d: %v, want class unmatched", b, errs[b])
		}
		if reps[b] != nil && len(reps[b].Shares) != 0 {
			t.Fatalf("site %d delivered %d keys", b, len(reps[b].Shares))
		}
	}
}

// TestPairStatusOperatorOnly: an application that is not the operator is
// refused Pair (PermissionDenied) and gets a limited Status (features and
// health, no counters of anyone's activity); the operator gets all of it.
func TestPairStatusOperatorOnly(t *testing.T) {
	s := startTLSSites(t, time.Second)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	b0, b1 := s.dial(t, 0, "b"), s.dial(t, 1, "b")
	_, _, reqs := sharedBound(3) // some activity of b's
	var w sync.WaitGroup
	for b, c := range []*client.Client{b0, b1} {
		w.Add(1)
		go func() {
			defer w.Done()
			if _, err := get(ctx, c, reqs[b]); err != nil {
				t.Error(err)
			}
		}()
	}
	w.Wait()
	a := s.dial(t, 0, "a")
	st, err := a.Status(ctx)
	if err != nil || !st.Limited || !st.Paired || !st.PackedRequests || st.Module != nil || st.KeysDelivered != 0 || st.Batches != 0 {
		t.Fatalf("a's Status: %+v, %v; want a limited one (paired, packed requests, no counters)", st, err)
	}
	if err := a.Pair(ctx); status.Code(err) != codes.PermissionDenied {
		t.Fatalf("a's Pair: %v, want PermissionDenied", err)
	}
	st, err = s.dial(t, 0, "operator").Status(ctx)
	if err != nil || st.Limited || !st.Paired || st.Module == nil || st.KeysDelivered == 0 {
		t.Fatalf("operator's Status: %+v, %v", st, err)
	}
}

// streamBound sends bound requests ids first..first+n-1 on a stream at
// each site and checks every pair against its own α and β.
func streamBound(t *testing.T, ctx context.Context, cs [2]*client.Client, first uint64, n int) {
	var st [2]*client.Stream
	for b := range 2 {
		var err error
		if st[b], err = cs[b].Stream(ctx); err != nil {
			t.Error(err)
			return
		}
	}
	type want struct{ alpha, beta uint64 }
	ws := make([]want, n)
	for i := range n {
		alpha, beta, reqs := sharedBound(first + uint64(i))
		ws[i] = want{alpha, beta}
		for b := range 2 {
			if err := st[b].Send(reqs[b]); err != nil {
				t.Error(err)
				return
			}
		}
	}
	var reps [2][]*client.Reply
	for b := range 2 {
		for range n {
			r, err := st[b].Recv()
			if err == nil {
				err = r.Err
			}
			if err != nil {
				t.Errorf("site %d stream: %v", b, err)
				return
			}
			reps[b] = append(reps[b], r)
		}
	}
	for i, w := range ws {
		r0, r1 := reps[0][i], reps[1][i]
		if r0.ID != first+uint64(i) || r1.ID != r0.ID {
			t.Errorf("stream reply %d: ids %d / %d", i, r0.ID, r1.ID)
			return
		}
		if err := fss.CheckPair(r0.Shares[0].Key, r1.Shares[0].Key, w.alpha, w.beta, w.alpha, (w.alpha+1)&0xffff); err != nil {
			t.Errorf("stream id %d: the pair is not this application's function: %v", r0.ID, err)
		}
	}
}

// serverOptions are the daemons' codec and message size (as
// daemon.ServerOptions sets them, which this package does not import).
func serverOptions() []grpc.ServerOption {
	return []grpc.ServerOption{grpc.MaxRecvMsgSize(64 << 20), grpc.ForceServerCodecV2(pb.Codec())}
}
