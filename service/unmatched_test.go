package service

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/grpc"

	"github.com/kord-fss/kord/client"
	"github.com/kord-fss/kord/fss"
	"github.com/kord-fss/kord/module/msg"
	"github.com/kord-fss/kord/module/socket"
	pb "github.com/kord-fss/kord/proto/kordpb"
	"github.com/kord-fss/kord/proto/modulepb"
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

// failFirstAbandon refuses a module's first abandon, as a module that
// restarted or lost its socket at that moment would.
type failFirstAbandon struct {
	socket.Module
	failed atomic.Bool
}

func (f *failFirstAbandon) Submit(ctx context.Context, r *msg.SubmitRequest) (*msg.SubmitResponse, error) {
	if r.Kind == msg.SubmitAbandon && f.failed.CompareAndSwap(false, true) {
		return nil, errors.New("test: abandon refused")
	}
	return f.Module.Submit(ctx, r)
}

// TestSkippedBatchAbandonFails: when party 0's module refuses the abandon
// of a batch party 1 skipped (unmatched ids), the batch's requests are not
// lost with it: the stray id is answered unmatched at its match timeout,
// its batch-mates are delivered after the resync, and later pairs too.
func TestSkippedBatchAbandonFails(t *testing.T) {
	dir := t.TempDir()
	secret := []byte("provisioning secret for tests!!")
	d1, st1 := openModule(t, 1, dir+"/m1.db", secret)
	d0, st0 := openModule(t, 0, dir+"/m0.db", secret)
	t.Cleanup(func() { st0.Close(); st1.Close() })
	cfg := Config{Batch: 8, InFlight: 1, MatchTimeout: 300 * time.Millisecond}
	var s [2]*site
	s[1] = startParty1(t, "", socket.Local(d1), cfg, func(ss grpc.ServerStream) grpc.ServerStream { return ss })
	m0 := &failFirstAbandon{Module: socket.Local(d0)}
	s[0] = startSite(t, 0, m0, s[1].addr, cfg)
	if err := s[0].app.Pair(context.Background()); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	p := fss.Params{Type: fss.DPF, InBits: 16, OutBits: 8}
	ws, reqs := boundRequests(p, 1<<40, 4, "")
	// Party 0 gets the stray id and its batch-mates in one send; party 1
	// the batch-mates only, a little later, so the first batch is skipped.
	a0 := sendAlone(t, ctx, s[0], reqs[0]...)
	time.Sleep(50 * time.Millisecond)
	a1 := sendAlone(t, ctx, s[1], reqs[1][1:]...)
	var got [2][]*client.Reply
	for b, st := range []*client.Stream{a0, a1} {
		for range 4 - b {
			r, err := st.Recv()
			if err != nil {
				t.Fatalf("site %d: %v (a request of the skipped batch was lost)", b, err)
			}
			got[b] = append(got[b], r)
		}
	}
	if !m0.failed.Load() {
		t.Fatal("no abandon was refused: the batch was not skipped")
	}
	byID := map[uint64]*client.Reply{}
	for _, r := range got[1] {
		byID[r.ID] = r
	}
	for _, r := range got[0] {
		if r.ID == reqs[0][0].Id {
			if c := replyClass(t, r); c != ErrClassUnmatched {
				t.Fatalf("stray id answered %q, want unmatched", c)
			}
			continue
		}
		r1 := byID[r.ID]
		if r.Err != nil || r1 == nil || r1.Err != nil {
			t.Fatalf("request %d: %v / %v", r.ID, r.Err, r1)
		}
		for i, w := range ws {
			if reqs[0][i].Id == r.ID {
				checkPair(t, r.Shares[0].Key, r1.Shares[0].Key, w.alpha, w.beta)
			}
		}
	}
	streamBound(t, s, 1, 16, "", p)
}

// TestUnmatchedLargeCorrelation: a correlation that reaches party 0 only
// and takes more counters than one module submission (msg.MaxShares) is
// skipped like any unmatched id: party 1 moves its module past all of its
// counters, the stray is answered unmatched at party 0, and the session
// goes on delivering pairs (it was ended, with a module refusal, when the
// skip asked for every counter in one submission).
func TestUnmatchedLargeCorrelation(t *testing.T) {
	s := pairOfSites(t, Config{MatchTimeout: 300 * time.Millisecond, Batch: 8})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	big := &modulepb.Correlation{Kind: uint32(msg.CorrMatVec), Ring: 32, In: 64, Out: 64, Part: uint32(msg.CorrFull)}
	if n, err := socket.CorrFromPB(big).Blocks(); err != nil || n <= msg.MaxShares {
		t.Fatalf("the stray takes %d counters (%v), want more than %d", n, err, msg.MaxShares)
	}
	a0 := sendAlone(t, ctx, s[0], &pb.KeyRequest{Id: 1 << 40, Mode: ModeCorrelation, Corr: big})
	r, err := a0.Recv()
	if err != nil {
		t.Fatal(err)
	}
	if c := replyClass(t, r); c != ErrClassUnmatched {
		t.Fatalf("stray correlation answered %q (%v), want unmatched", c, r.Err)
	}
	p := fss.Params{Type: fss.DPF, InBits: 16, OutBits: 8}
	streamBound(t, s, 1, 20, "", p)
	for b := range 2 {
		if n := s[b].party.sessions.Load(); n != 1 {
			t.Errorf("party %d: %d sessions, want 1 (skipping the stray ended a session)", b, n)
		}
	}
}
