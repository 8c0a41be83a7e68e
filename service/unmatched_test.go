package service

import (
	"context"
	"testing"
	"time"

	"github.com/kord-fss/kord/client"
	"github.com/kord-fss/kord/fss"
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
	s := pairOfSites(t, Config{MatchTimeout: 300 * time.Millisecond, Batch: 8})
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
