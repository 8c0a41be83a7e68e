package service

import (
	"context"
	"testing"
	"time"

	"google.golang.org/grpc"

	"github.com/kord-fss/kord/client"
	"github.com/kord-fss/kord/fss"
	"github.com/kord-fss/kord/module/msg"
	"github.com/kord-fss/kord/module/socket"
	pb "github.com/kord-fss/kord/proto/kordpb"
)

// sendAlone sends reqs on a stream of their own at s and returns it.
func sendAlone(t *testing.T, ctx context.Context, s *site, reqs ...*pb.KeyRequest) *client.Stream {
	t.Helper()
	st, err := s.app.Stream(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := st.SendBatch(reqs); err != nil {
		t.Fatal(err)
	}
	return st
}

// TestUnmatchedDoesNotHoldOthers: a request that reaches party 0 but not
// party 1 (and one that reaches party 1 only) holds up no other request
// and does not end the peer session. With --match-timeout at 10 minutes,
// every other pair is delivered (the test would hang to its deadline if
// the stray id held them) and both parties are still in their first
// session.
func TestUnmatchedDoesNotHoldOthers(t *testing.T) {
	s := pairOfSites(t, Config{MatchTimeout: 10 * time.Minute, Batch: 8})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	p := fss.Params{Type: fss.DPF, InBits: 16, OutBits: 8}
	_, stray := boundRequests(p, 1<<40, 2, "")
	sendAlone(t, ctx, s[0], stray[0][0]) // party 0 only
	sendAlone(t, ctx, s[1], stray[1][1]) // party 1 only
	for round := range 3 {
		streamBound(t, s, uint64(round)*1000+1, 40, "", p)
	}
	for b := range 2 {
		if n := s[b].party.sessions.Load(); n != 1 {
			t.Errorf("party %d: %d sessions, want 1 (the stray ids ended a session)", b, n)
		}
	}
}

// TestUnmatchedTimesOutAlone: each stray id fails unmatched at its own
// site after --match-timeout, with α reusable; the pairs around it are
// delivered and verify, and the session is never torn down.
func TestUnmatchedTimesOutAlone(t *testing.T) {
	// The honest pairs' two requests must meet within the match timeout
	// however busy the machine: 2 s, not a fraction of one.
	s := pairOfSites(t, Config{MatchTimeout: 2 * time.Second, Batch: 8})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	p := fss.Params{Type: fss.DCF, InBits: 20, OutBits: 16}
	_, stray := boundRequests(p, 1<<40, 2, "")
	a0 := sendAlone(t, ctx, s[0], stray[0][0])
	a1 := sendAlone(t, ctx, s[1], stray[1][1])
	streamBound(t, s, 1, 50, "", p)
	for b, st := range []*client.Stream{a0, a1} {
		r, err := st.Recv()
		if err != nil {
			t.Fatal(err)
		}
		if c := replyClass(t, r); c != ErrClassUnmatched || !pb.AlphaReusable(c) {
			t.Fatalf("site %d: stray id %d answered %q (%v), want unmatched, α reusable", b, r.ID, c, r.Err)
		}
	}
	streamBound(t, s, 100, 20, "", p)
	for b := range 2 {
		if n := s[b].party.sessions.Load(); n != 1 {
			t.Errorf("party %d: %d sessions, want 1", b, n)
		}
	}
}

// slowSubmits delays each batch submission of a module (party 0's), so
// that its queue backs up.
type slowSubmits struct {
	socket.Module
	d time.Duration
}

func (s *slowSubmits) Do(ctx context.Context, calls []socket.Call, stop bool) ([]socket.Result, error) {
	if len(calls) > 0 && calls[0].Submit != nil && calls[0].Submit.Kind == msg.SubmitShares {
		time.Sleep(s.d)
	}
	return s.Module.Do(ctx, calls, stop)
}

// TestBacklogIsNotUnmatched: requests that wait at party 1 longer than
// --match-timeout because party 0 is working through a backlog (its
// batches say it still has requests queued) do not expire: every pair is
// delivered.
func TestBacklogIsNotUnmatched(t *testing.T) {
	dir := t.TempDir()
	secret := []byte("provisioning secret for tests!!")
	d1, st1 := openModule(t, 1, dir+"/m1.db", secret)
	d0, st0 := openModule(t, 0, dir+"/m0.db", secret)
	t.Cleanup(func() { st0.Close(); st1.Close() })
	cfg := Config{Batch: 8, InFlight: 1, MatchTimeout: 150 * time.Millisecond}
	var s [2]*site
	s[1] = startParty1(t, "", socket.Local(d1), cfg, func(ss grpc.ServerStream) grpc.ServerStream { return ss })
	s[0] = startSite(t, 0, &slowSubmits{Module: socket.Local(d0), d: 20 * time.Millisecond}, s[1].addr, cfg)
	if err := s[0].app.Pair(context.Background()); err != nil {
		t.Fatal(err)
	}
	// 40 batches at ≥ 20 ms each: the last requests wait at party 1 for
	// about 5 match timeouts.
	streamBound(t, s, 1, 320, "", fss.Params{Type: fss.DPF, InBits: 12, OutBits: 12})
}
