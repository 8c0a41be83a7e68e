package service

import (
	"context"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/metadata"

	"github.com/kord-fss/kord/client"
	pb "github.com/kord-fss/kord/proto/kordpb"
)

// Recovery scoped by application identity: two applications use the same
// request ids; a party restarts over its own record. Each application's
// resend gets its own pair back or its own void, never the other's; a
// void notice for one application's id never reaches the other's stream;
// a peer that names one application's record under the other's name is
// refused. The sites are real parties over gRPC with their modules behind
// real module sockets and bbolt state files; only the authentication
// that names the application (package appauth, which imports this one)
// is stood in by testApp's interceptors.

const testAppKey = "kord-test-app"

// testApp is server options that make each call's application identity
// the one its metadata names (what appauth does from a certificate).
func testApp() []grpc.ServerOption {
	with := func(ctx context.Context) context.Context {
		md, _ := metadata.FromIncomingContext(ctx)
		if v := md.Get(testAppKey); len(v) == 1 {
			return WithCaller(ctx, Caller{App: v[0], Operator: true})
		}
		return ctx
	}
	return []grpc.ServerOption{
		grpc.ChainUnaryInterceptor(func(ctx context.Context, req any, _ *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
			return h(with(ctx), req)
		}),
		grpc.ChainStreamInterceptor(func(srv any, ss grpc.ServerStream, _ *grpc.StreamServerInfo, h grpc.StreamHandler) error {
			return h(srv, appStream{ss, with(ss.Context())})
		}),
	}
}

type appStream struct {
	grpc.ServerStream
	ctx context.Context
}

func (s appStream) Context() context.Context { return s.ctx }

func asApp(ctx context.Context, app string) context.Context {
	return metadata.AppendToOutgoingContext(ctx, testAppKey, app)
}

const scopeN = 6 // ids 1..scopeN, used by both applications

var scopeApps = [2]string{"app-a", "app-b"}

// appPhase is the honest phase of one application at both sites: its
// requests (same ids as the other's, other α, β), the key bytes each site
// delivered, and each site's stream, kept open (void notices reach it).
type appPhase struct {
	reqs    [2][]*pb.KeyRequest
	keys    [2]map[uint64]string
	streams [2]*client.Stream
}

// newScopeAtk starts both sites and runs the honest phase of both
// applications under the same ids.
func newScopeAtk(t *testing.T) (*atk, [2]*appPhase) {
	a := newAtkSites(t, testApp()...)
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	var ph [2]*appPhase
	for ai, app := range scopeApps {
		ws, reqs := boundRequests(a.p, 1, scopeN, "")
		x := &appPhase{reqs: reqs}
		got := [2]map[uint64]*client.Reply{}
		errs := make(chan error, 2)
		for b := range 2 {
			st, err := a.s[b].app.Stream(asApp(ctx, app))
			if err != nil {
				t.Fatal(err)
			}
			x.streams[b], got[b] = st, map[uint64]*client.Reply{}
			go func() {
				if err := st.SendBatch(reqs[b]); err != nil {
					errs <- err
					return
				}
				for range reqs[b] {
					r, err := st.Recv()
					if err != nil {
						errs <- err
						return
					}
					got[b][r.ID] = r
				}
				errs <- nil
			}()
		}
		for range 2 {
			select {
			case err := <-errs:
				if err != nil {
					t.Fatalf("%s: honest phase: %v", app, err)
				}
			case <-time.After(30 * time.Second):
				t.Fatalf("%s: honest phase: no answer", app)
			}
		}
		x.keys = [2]map[uint64]string{{}, {}}
		for i := range scopeN {
			id := uint64(1 + i)
			r0, r1 := got[0][id], got[1][id]
			if r0 == nil || r1 == nil || r0.Err != nil || r1.Err != nil {
				t.Fatalf("%s: honest phase: id %d: %+v / %+v", app, id, r0, r1)
			}
			checkPair(t, r0.Shares[0].Key, r1.Shares[0].Key, ws[i].alpha, ws[i].beta)
			x.keys[0][id], x.keys[1][id] = keyBytes(t, r0), keyBytes(t, r1)
		}
		ph[ai] = x
	}
	for id := uint64(1); id <= scopeN; id++ {
		if ph[0].keys[0][id] == ph[1].keys[0][id] {
			t.Fatalf("id %d: both applications got the same key share", id)
		}
	}
	return a, ph
}

// askApp sends reqs as app to site b and collects one reply per id (or
// what came within wait).
func (a *atk) askApp(b int, app string, reqs []*pb.KeyRequest, wait time.Duration) map[uint64]*client.Reply {
	a.t.Helper()
	ctx, cancel := context.WithTimeout(asApp(context.Background(), app), wait)
	defer cancel()
	st, err := a.s[b].app.Stream(ctx)
	if err != nil {
		a.t.Fatal(err)
	}
	if err := st.SendBatch(reqs); err != nil {
		a.t.Fatal(err)
	}
	got := map[uint64]*client.Reply{}
	for range reqs {
		r, err := st.Recv()
		if err != nil {
			break
		}
		got[r.ID] = r
	}
	return got
}

// TestRecoveryAppScoped: after a restart of either party, each of two
// applications that used the same ids resends its requests at the
// restarted site and gets back exactly the key share that site delivered
// to it before — not void (its record entry was not overwritten by the
// other's) and never the other application's.
func TestRecoveryAppScoped(t *testing.T) {
	for _, b := range []int{0, 1} {
		t.Run([]string{"party0", "party1"}[b], func(t *testing.T) {
			a, ph := newScopeAtk(t)
			a.stop(b)
			if b == 0 {
				a.s[0] = a.start(0, a.s[1].addr)
			} else {
				a.s[1] = a.start(1, a.s[1].addr)
			}
			for ai, app := range scopeApps {
				got := a.askApp(b, app, ph[ai].reqs[b], 20*time.Second)
				for id := uint64(1); id <= scopeN; id++ {
					r := got[id]
					switch {
					case r == nil:
						t.Errorf("%s id %d: no answer after the restart", app, id)
					case r.Err != nil:
						t.Errorf("%s id %d: %v (class %s), want its own key share again", app, id, r.Err, replyClass(t, r))
					case keyBytes(t, r) == ph[1-ai].keys[b][id]:
						t.Errorf("%s id %d: got the other application's key share", app, id)
					case keyBytes(t, r) != ph[ai].keys[b][id]:
						t.Errorf("%s id %d: got another key share than the one delivered to it", app, id)
					}
				}
			}
		})
	}
}

// TestVoidNoticeAppScoped: party 0 restarts; application a resends id 3
// with other shares, which party 0 answers void and reports to party 1.
// Party 1's stream of application a gets a void for id 3; application b's
// stream, which got id 3 of its own, gets nothing, and party 1's record
// keeps b's id 3 as served.
func TestVoidNoticeAppScoped(t *testing.T) {
	a, ph := newScopeAtk(t)
	a.stop(0)
	a.s[0] = a.start(0, a.s[1].addr)
	got := a.askApp(0, scopeApps[0], a.fresh(0, []uint64{3}), 20*time.Second)
	if r := got[3]; r == nil || r.Err == nil || replyClass(t, r) != ErrClassVoid {
		t.Fatalf("app-a's resend of id 3 with other shares: %+v, want void", r)
	}
	type rep struct {
		r   *client.Reply
		err error
	}
	next := func(st *client.Stream) <-chan rep {
		c := make(chan rep, 1)
		go func() { r, err := st.Recv(); c <- rep{r, err} }()
		return c
	}
	ca, cb := next(ph[0].streams[1]), next(ph[1].streams[1])
	select {
	case x := <-ca:
		if x.err != nil || x.r.ID != 3 || x.r.Err == nil || replyClass(t, x.r) != ErrClassVoid {
			t.Fatalf("party 1, app-a's stream: %+v (%v), want a void for id 3", x.r, x.err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("party 1, app-a's stream: no void for id 3")
	}
	// The notice has been applied at party 1 (app-a's stream got it);
	// app-b's stream must have nothing.
	select {
	case x := <-cb:
		t.Fatalf("party 1, app-b's stream got %+v (%v): a void for app-a's id reached app-b", x.r, x.err)
	case <-time.After(500 * time.Millisecond):
	}
	if s, ok := a.s[1].party.ledger.get(rid{scopeApps[0], 3}); !ok || s.class != ErrClassVoid {
		t.Errorf("party 1's record of app-a's id 3: %+v (found %v), want void", s, ok)
	}
	if s, ok := a.s[1].party.ledger.get(rid{scopeApps[1], 3}); !ok || s.class != "" {
		t.Errorf("party 1's record of app-b's id 3: %+v (found %v), want served", s, ok)
	}
}

// TestForgedAppNamePartyOne: party 1 restarts; host 0 lies at the
// handshake: it lists application a's true records (counters, digest)
// under application b's name. Application b
// resending its own requests alike gets no key (its record disagrees with
// the peer's: void), never a's share; application a's ids, which the peer
// does not list, get no key either.
func TestForgedAppNamePartyOne(t *testing.T) {
	a, ph := newScopeAtk(t)
	var recs []*pb.RecentItem
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for id := uint64(1); id <= scopeN; id++ {
		s, ok := a.s[0].party.ledger.get(rid{scopeApps[0], id})
		if !ok {
			t.Fatalf("party 0 has no record of app-a's id %d", id)
		}
		it := s.shape.item()
		it.App = scopeApps[1] // a's record, b's name
		recs = append(recs, &pb.RecentItem{Item: it, FirstCounter: s.first, Digest: append([]byte(nil), s.tags[:]...)})
	}
	a.stop(0)
	a.stop(1)
	a.s[1] = a.start(1, a.s[1].addr)
	a.liar0(ctx, recs, nil)
	for ai, app := range scopeApps {
		got := a.askApp(1, app, ph[ai].reqs[1], 5*time.Second)
		for id, r := range got {
			if r.Err == nil {
				switch keyBytes(t, r) {
				case ph[0].keys[1][id]:
					t.Errorf("%s id %d: got app-a's key share on the peer's word", app, id)
				default:
					t.Errorf("%s id %d: got a key share (counter %d) the peer's record does not match", app, id, r.Shares[0].Counter)
				}
				continue
			}
			if c := replyClass(t, r); c != ErrClassVoid {
				t.Errorf("%s id %d: class %s, want void", app, id, c)
			}
		}
		if len(got) == 0 {
			t.Errorf("%s: no resend answered: the test tested nothing", app)
		}
	}
}

// TestJoinRids: the peer's parallel lists read back as (application, id)
// pairs; no applications means the anonymous one; lists of other lengths
// are refused whole.
func TestJoinRids(t *testing.T) {
	v := []rid{{"a", 9}, {"b", 9}, {"", 3}}
	ids, apps := splitRids(v)
	got, err := joinRids(ids, apps)
	if err != nil || len(got) != 3 || got[0] != v[0] || got[1] != v[1] || got[2] != v[2] {
		t.Fatalf("round trip: %v, %v", got, err)
	}
	if ids, apps := splitRids([]rid{{"", 1}}); apps != nil || len(ids) != 1 {
		t.Fatalf("anonymous ids carried applications: %v", apps)
	}
	if got, err := joinRids([]uint64{4, 5}, nil); err != nil || got[0] != (rid{"", 4}) || got[1] != (rid{"", 5}) {
		t.Fatalf("no applications: %v, %v", got, err)
	}
	if _, err := joinRids([]uint64{4, 5}, []string{"a"}); err == nil || !strings.Contains(err.Error(), "1 applications for 2 ids") {
		t.Fatalf("mismatched lists: %v", err)
	}
	if _, _, _, err := heldLists(&pb.Witness{HeldVoid: []uint64{1}, HeldVoidApps: []string{"a", "b"}}); err == nil || !strings.Contains(err.Error(), "held_void") {
		t.Fatalf("mismatched held lists: %v", err)
	}
}
