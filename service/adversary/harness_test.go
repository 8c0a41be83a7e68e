package adversary

import (
	"context"
	"fmt"
	"net"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc"

	"github.com/kord-fss/kord/client"
	"github.com/kord-fss/kord/fss"
	"github.com/kord-fss/kord/module"
	"github.com/kord-fss/kord/module/moduletest"
	"github.com/kord-fss/kord/module/msg"
	"github.com/kord-fss/kord/module/socket"
	pb "github.com/kord-fss/kord/proto/kordpb"
	"github.com/kord-fss/kord/service"
	"github.com/kord-fss/kord/service/servicetest"
)

// The suite's timeouts: short, so a campaign step that costs a session
// ends quickly, and long enough for a loaded 2-core machine.
const (
	matchTimeout = 400 * time.Millisecond
	peerTimeout  = 2 * time.Second
	// endBound is check (iv): every request ends within it. A lost
	// message costs a watchdog (peerTimeout) and a reconnect backoff (up
	// to a second per failed attempt); unmatched ids cost matchTimeout.
	endBound = 4*peerTimeout + 4*matchTimeout + 8*time.Second
)

// opens records the counters a module generated keys for from a peer
// frame it accepted: what check (iii) asks ("a module opened a frame of
// this request"). It wraps the module device behind the real socket
// server, so it sees every frame the module opens, whoever sent it.
type opens struct {
	*module.Durable
	mu  sync.Mutex
	set map[uint64]bool
}

func (o *opens) Submit(ctx context.Context, r *msg.SubmitRequest) (*msg.SubmitResponse, error) {
	resp, err := o.Durable.Submit(ctx, r)
	if err == nil && r.Kind == msg.SubmitPeerFrame && resp != nil && resp.Accepted {
		o.mu.Lock()
		for _, c := range resp.Counters {
			o.set[c] = true
		}
		o.mu.Unlock()
	}
	return resp, err
}

func (o *opens) opened(c uint64) bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.set[c]
}

// site is one party daemon: its module client, party, gRPC server (the
// application API, and for party 1 the peer link) and application client.
type site struct {
	party  int
	p      *service.Party
	srv    *grpc.Server
	api    *grpc.Server // the application API when on its own Unix socket (worldOpts.appUnix)
	app    *client.Client
	addr   string
	cancel context.CancelFunc
	once   sync.Once
}

func (s *site) stop() {
	s.once.Do(func() {
		s.cancel()
		s.srv.Stop()
		if s.api != nil {
			s.api.Stop()
		}
		s.p.Close()
		s.app.Close()
	})
}

// world is a pair of sites, one honest, one the adversary's, and the
// proxy through which the adversary sees and shapes every peer message.
type world struct {
	t      testing.TB
	honest int
	opens  [2]*opens
	mods   [2]socket.Module // what each party is given (the adversary's is advModule)
	adv    *advModule
	sites  [2]*site
	px     *proxy
	o      *oracle
	tune   func(*service.Config)
	opts   worldOpts
	dir    string
	starts int // sites started, for fresh socket names
	mu     sync.Mutex
}

// worldOpts shape a world.
type worldOpts struct {
	// slabFDs: the honest party takes its module's bulk slabs as sealed
	// memfds, and both applications are on their party's Unix socket
	// (the operator's uid), each with a stream that asks for slab_fds
	// open, so that the honest party hands whole slabs on as memfds.
	slabFDs bool
}

// newWorld starts two paired parties with durable modules behind real
// module sockets; honest is the party the oracle watches.
func newWorld(t testing.TB, honest int, o *oracle) *world {
	t.Helper()
	return newWorldOpts(t, honest, o, worldOpts{})
}

// newWorldOpts is newWorld shaped by opts.
func newWorldOpts(t testing.TB, honest int, o *oracle, opts worldOpts) *world {
	t.Helper()
	dir := t.TempDir()
	w := &world{t: t, honest: honest, o: o, opts: opts, dir: dir}
	secret := []byte("provisioning secret for tests!!")
	for b := range 2 {
		d, st := moduletest.OpenDurable(t, b, filepath.Join(dir, []string{"m0.db", "m1.db"}[b]), 0, secret)
		w.opens[b] = &opens{Durable: d, set: map[uint64]bool{}}
		path := filepath.Join(dir, []string{"s0", "s1"}[b])
		ml, err := socket.Listen(path)
		if err != nil {
			t.Fatal(err)
		}
		go socket.NewServer(w.opens[b], socket.ServerOptions{Access: socket.Access{SameUID: true}}).Serve(ml)
		c := socket.Dial(path, 0)
		w.mods[b] = c
		t.Cleanup(func() { c.Close(); ml.Close(); st.Close() })
	}
	if opts.slabFDs {
		w.mods[honest].(*socket.Client).UseSlabFDs(true)
	}
	w.adv = &advModule{Module: w.mods[1-honest], outs: map[uint64]output{}}
	w.mods[1-honest] = w.adv
	w.px = newProxy(t)
	o.w = w
	w.px.observe = func(dir int, pre *pb.PeerMsg, post []*pb.PeerMsg) {
		if dir != from0 {
			return
		}
		if honest == 0 {
			if b := pre.GetBatch(); b != nil {
				o.sawBatch(b)
			}
			return
		}
		for _, m := range post {
			if b := m.GetBatch(); b != nil {
				o.sawBatch(b)
			}
		}
	}
	w.start(1)
	w.start(0)
	t.Cleanup(func() {
		for _, s := range w.sites {
			if s != nil {
				s.stop()
			}
		}
	})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := w.sites[0].app.Pair(ctx); err != nil {
		t.Fatal(err)
	}
	return w
}

// start starts (or restarts) party b on its module.
func (w *world) start(b int) {
	t := w.t
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	cfg := service.Config{Party: b, Module: w.mods[b], PeerPlaintext: true, Batch: 16, InFlight: 2,
		MatchTimeout: matchTimeout, PeerTimeout: peerTimeout}
	if b == 0 {
		cfg.PeerAddr = w.px.addr
	}
	if w.tune != nil {
		w.tune(&cfg)
	}
	p, err := service.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	srv := grpc.NewServer(grpc.MaxRecvMsgSize(64<<20), grpc.MaxSendMsgSize(64<<20))
	appAddr, api := l.Addr().String(), (*grpc.Server)(nil)
	if w.opts.slabFDs {
		w.mu.Lock()
		w.starts++
		path := filepath.Join(w.dir, fmt.Sprintf("a%d-%d", b, w.starts))
		w.mu.Unlock()
		api, appAddr = servicetest.UnixAPI(t, path, p, grpc.MaxRecvMsgSize(64<<20), grpc.MaxSendMsgSize(64<<20))
		p.Register(nil, srv)
	} else {
		p.Register(srv, srv)
	}
	go srv.Serve(l)
	ctx, cancel := context.WithCancel(context.Background())
	go p.Run(ctx)
	app, err := client.Dial(appAddr, nil)
	if err != nil {
		t.Fatal(err)
	}
	if w.opts.slabFDs {
		fdStream(ctx, t, b, app)
	}
	s := &site{party: b, p: p, srv: srv, api: api, app: app, addr: l.Addr().String(), cancel: cancel}
	w.mu.Lock()
	old := w.sites[b]
	w.sites[b] = s
	w.mu.Unlock()
	if old != nil {
		old.stop()
	}
	if b == 1 {
		w.px.setUpstream(s.addr)
	}
}

// restart stops party b (a crash of its daemon: the module stays) and
// starts a new one on the same module.
func (w *world) restart(b int) {
	w.mu.Lock()
	old := w.sites[b]
	w.mu.Unlock()
	old.stop()
	w.start(b)
}

func (w *world) app(b int) *client.Client {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.sites[b].app
}

// fdStream opens a stream from app to party b that asks for slab_fds
// (one request, under an id far from the oracle's), and leaves it open
// until ctx ends, so that the party hands the application's whole slabs
// on as memfds.
func fdStream(ctx context.Context, t testing.TB, b int, app *client.Client) {
	st, err := app.Stream(ctx)
	if err != nil {
		t.Fatalf("party %d: a slab_fds stream: %v", b, err)
	}
	if err := st.Send(client.Derived(1<<62, fss.Params{Type: fss.DPF, InBits: 8, OutBits: 8}, 1, 0, true)); err != nil {
		t.Fatalf("party %d: a slab_fds stream: %v", b, err)
	}
	go func() {
		for {
			if _, err := st.Recv(); err != nil {
				return
			}
		}
	}()
}
