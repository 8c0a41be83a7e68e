package service

import (
	"context"
	"errors"
	"math/rand/v2"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/protobuf/proto"

	"github.com/kord-fss/kord/client"
	"github.com/kord-fss/kord/fss"
	"github.com/kord-fss/kord/internal/daemon"
	"github.com/kord-fss/kord/module/msg"
	"github.com/kord-fss/kord/module/socket"
	pb "github.com/kord-fss/kord/proto/kordpb"
)

// faultyStream is party 1's end of a peer session with message-level
// faults: a received or sent message is delivered twice, or swapped with
// the next one, until the budget of faults is spent.
type faultyStream struct {
	grpc.ServerStream
	inj *injector

	mu       sync.Mutex
	recvNext []*pb.PeerMsg // messages to hand out before reading more
	sendHeld *pb.PeerMsg   // a sent message held back to go after the next
}

type injector struct {
	mu     sync.Mutex
	rng    *rand.Rand
	budget int
	counts map[string]int
}

// pick returns "dup", "swap" or "" for one message.
func (in *injector) pick(dir string) string {
	in.mu.Lock()
	defer in.mu.Unlock()
	if in.budget == 0 || in.rng.IntN(40) != 0 {
		return ""
	}
	in.budget--
	f := "dup"
	if in.rng.IntN(2) == 0 {
		f = "swap"
	}
	in.counts[dir+" "+f]++
	return f
}

func (in *injector) total() int {
	in.mu.Lock()
	defer in.mu.Unlock()
	n := 0
	for _, c := range in.counts {
		n += c
	}
	return n
}

func (s *faultyStream) RecvMsg(m any) error {
	s.mu.Lock()
	if len(s.recvNext) > 0 {
		next := s.recvNext[0]
		s.recvNext = s.recvNext[1:]
		s.mu.Unlock()
		proto.Reset(m.(proto.Message))
		proto.Merge(m.(proto.Message), next)
		return nil
	}
	s.mu.Unlock()
	if err := s.ServerStream.RecvMsg(m); err != nil {
		return err
	}
	msg := m.(*pb.PeerMsg)
	if msg.GetBatch() == nil && msg.GetConfirm() == nil {
		return nil // faults only once the session streams batches
	}
	switch s.inj.pick("recv") {
	case "dup":
		s.mu.Lock()
		s.recvNext = append(s.recvNext, proto.Clone(msg).(*pb.PeerMsg))
		s.mu.Unlock()
	case "swap":
		first := proto.Clone(msg).(*pb.PeerMsg)
		if err := s.ServerStream.RecvMsg(m); err != nil {
			return err
		}
		s.mu.Lock()
		s.recvNext = append(s.recvNext, first)
		s.mu.Unlock()
	}
	return nil
}

func (s *faultyStream) SendMsg(m any) error {
	msg := m.(*pb.PeerMsg)
	s.mu.Lock()
	held := s.sendHeld
	s.sendHeld = nil
	s.mu.Unlock()
	if held != nil {
		if err := s.ServerStream.SendMsg(msg); err != nil {
			return err
		}
		return s.ServerStream.SendMsg(held)
	}
	if msg.GetBatchReply() == nil {
		return s.ServerStream.SendMsg(msg)
	}
	switch s.inj.pick("send") {
	case "dup":
		if err := s.ServerStream.SendMsg(msg); err != nil {
			return err
		}
	case "swap":
		s.mu.Lock()
		s.sendHeld = proto.Clone(msg).(*pb.PeerMsg)
		s.mu.Unlock()
		return nil
	}
	return s.ServerStream.SendMsg(msg)
}

// TestPeerMessageFaults duplicates and reorders peer-link messages in both
// directions: no application ever gets a key whose pair does not verify,
// every request is answered at both sites alike — keys, or a failure that
// says its α is spent (its batch ended after a module had opened frames
// for it) —, the sessions resynchronise and the stream heals.
func TestPeerMessageFaults(t *testing.T) {
	inj := &injector{rng: rand.New(rand.NewPCG(7, 11)), budget: 12, counts: map[string]int{}}
	s := faultySites(t, func(ss grpc.ServerStream) grpc.ServerStream { return &faultyStream{ServerStream: ss, inj: inj} })
	resyncs, failed := streamThroughFaults(t, s, 400, "otp", "mac", "batchmac")
	if inj.total() == 0 || resyncs < 2 {
		t.Fatalf("%d faults injected (%v), %d sessions: the faults were not exercised", inj.total(), inj.counts, resyncs)
	}
	if failed > 200 {
		t.Fatalf("%d of 400 requests failed: the stream did not heal", failed)
	}
	t.Logf("faults %v; %d sessions; %d requests spent", inj.counts, resyncs, failed)
}

// flipStream is party 1's end of a peer session that flips the low bit of
// party 0's first frame in the first keystream-tier batch it receives: a
// modification the keystream tier cannot detect, so the two modules
// reconstruct different (α, β) and generate shares of different pairs.
type flipStream struct {
	grpc.ServerStream
	flipped *atomic.Int32
}

func (s *flipStream) RecvMsg(m any) error {
	if err := s.ServerStream.RecvMsg(m); err != nil {
		return err
	}
	b := m.(*pb.PeerMsg).GetBatch()
	if b != nil && msg.Tier(b.Tier) == msg.Keystream && len(b.FrameData) > 0 && s.flipped.CompareAndSwap(0, 1) {
		b.FrameData[0] ^= 1
	}
	return nil
}

// TestModifiedKeystreamFrameNeverDelivered: a keystream-tier frame modified
// on the peer link is accepted by party 1's module (nothing in that tier
// authenticates it), so the batch's pair tags differ between the sites;
// the digests disagree, no application gets the mismatched pair, the
// batch's requests fail at both sites with a class that says α is spent,
// and the other requests are answered with good pairs after a resync.
func TestModifiedKeystreamFrameNeverDelivered(t *testing.T) {
	var flipped atomic.Int32
	s := faultySites(t, func(ss grpc.ServerStream) grpc.ServerStream { return &flipStream{ServerStream: ss, flipped: &flipped} })
	resyncs, failed := streamThroughFaults(t, s, 64, "otp")
	if flipped.Load() != 1 || resyncs < 2 || failed == 0 {
		t.Fatalf("flipped=%d, %d sessions, %d failed: the modified frame went unnoticed", flipped.Load(), resyncs, failed)
	}
}

// faultySites starts two sites whose peer link passes through wrap at
// party 1's end of the session stream.
func faultySites(t *testing.T, wrap func(grpc.ServerStream) grpc.ServerStream) [2]*site {
	return faultySitesWith(t, nil, wrap, nil)
}

// faultySitesWith is faultySites with the config changed by cfgf and the
// modules wrapped by modf (each nil: none).
func faultySitesWith(t *testing.T, cfgf func(*Config), wrap func(grpc.ServerStream) grpc.ServerStream,
	modf func(party int, m socket.Module) socket.Module) [2]*site {
	faulty := grpc.StreamInterceptor(func(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, h grpc.StreamHandler) error {
		if strings.HasSuffix(info.FullMethod, "/Session") {
			ss = wrap(ss)
		}
		return h(srv, ss)
	})
	dir := t.TempDir()
	secret := []byte("provisioning secret for tests!!")
	d1, st1 := openModule(t, 1, dir+"/m1.db", secret)
	d0, st0 := openModule(t, 0, dir+"/m0.db", secret)
	t.Cleanup(func() { st0.Close(); st1.Close() })
	// A short peer timeout: a reply held back at the end of a stream is
	// only noticed as lost.
	cfg := Config{Batch: 8, InFlight: 4, PeerTimeout: 300 * time.Millisecond, MatchTimeout: 5 * time.Second, PeerPlaintext: true}
	if cfgf != nil {
		cfgf(&cfg)
	}
	var mods [2]socket.Module
	mods[0], mods[1] = socket.Local(d0), socket.Local(d1)
	if modf != nil {
		mods[0], mods[1] = modf(0, mods[0]), modf(1, mods[1])
	}

	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	c1 := cfg
	c1.Party, c1.Module = 1, mods[1]
	p1, err := New(c1)
	if err != nil {
		t.Fatal(err)
	}
	srv := grpc.NewServer(append(daemon.ServerOptions(), faulty)...)
	p1.Register(srv, srv)
	go srv.Serve(l)
	app1, err := client.Dial(l.Addr().String(), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { app1.Close(); srv.Stop(); p1.Close() })
	s0 := startSite(t, 0, mods[0], l.Addr().String(), cfg)
	if err := s0.app.Pair(context.Background()); err != nil {
		t.Fatal(err)
	}
	return [2]*site{s0, {party: p1, app: app1}}
}

// streamThroughFaults streams n DPF-16 bound requests of the given tiers
// (in turn) to both sites and checks that every one is answered alike at
// both sites: with a pair that verifies, or failed with a class that says
// its α is spent; it returns party 0's session count and the failures.
func streamThroughFaults(t *testing.T, s [2]*site, n int, tiers ...string) (sessions uint64, failed int) {
	t.Helper()
	p := fss.Params{Type: fss.DPF, InBits: 16, OutBits: 16}
	ws, reqs := boundRequests(p, 1, n, tiers...)
	reps := streamBoth(t, s, reqs)
	for i := range n {
		r0, r1 := reps[0][i], reps[1][i]
		if r0.ID != uint64(i+1) || r1.ID != r0.ID {
			t.Fatalf("request %d: ids %d/%d", i+1, r0.ID, r1.ID)
		}
		if r0.Err != nil || r1.Err != nil {
			checkSpentBoth(t, r0, r1)
			failed++
			continue
		}
		if r0.Shares[0].Counter != r1.Shares[0].Counter {
			t.Fatalf("request %d: counters %d/%d", i+1, r0.Shares[0].Counter, r1.Shares[0].Counter)
		}
		checkPair(t, r0.Shares[0].Key, r1.Shares[0].Key, ws[i].alpha, ws[i].beta)
	}
	st, err := s[0].app.Status(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return st.Resyncs, failed
}

// checkSpentBoth checks that a request failed at both sites with classes
// that forbid using its α again (never keys at one site only).
func checkSpentBoth(t testing.TB, r0, r1 *client.Reply) {
	t.Helper()
	var e0, e1 *client.ReplyError
	if !errors.As(r0.Err, &e0) || !errors.As(r1.Err, &e1) {
		t.Fatalf("request %d: %v / %v: answered at one site only", r0.ID, r0.Err, r1.Err)
	}
	if e0.AlphaReusable() || e1.AlphaReusable() {
		t.Fatalf("request %d: %v / %v: a failure after faults on the peer link must spend α", r0.ID, e0, e1)
	}
}

// streamBoth streams reqs[b] to site b (16 a message) and returns the
// replies, in order.
func streamBoth(t *testing.T, s [2]*site, reqs [2][]*pb.KeyRequest) [2][]*client.Reply {
	t.Helper()
	return streamBothBy(t, s, reqs, 16)
}

// streamBothBy is streamBoth with per requests a message.
func streamBothBy(t *testing.T, s [2]*site, reqs [2][]*pb.KeyRequest, per int) [2][]*client.Reply {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	n := len(reqs[0])
	var reps [2][]*client.Reply
	var wg sync.WaitGroup
	for b := 0; b < 2; b++ {
		st, err := s[b].app.Stream(ctx)
		if err != nil {
			t.Fatal(err)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < n; i += per {
				if err := st.SendBatch(reqs[b][i:min(i+per, n)]); err != nil {
					t.Error(err)
					return
				}
			}
		}()
		goRecv(t, &wg, st, n, &reps[b])
	}
	wg.Wait()
	if t.Failed() {
		t.FailNow()
	}
	return reps
}
