// Package servicetest starts a paired pair of kord parties in the test's
// process for tests of applications: each party a real service.Party
// served over gRPC on loopback TCP, with its own durable module behind a
// real module socket (socket.Server and socket.Client over a Unix
// socket), the two parties joined by their real peer link.
package servicetest

import (
	"context"
	"net"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"google.golang.org/grpc"

	"github.com/kord-fss/kord/client"
	"github.com/kord-fss/kord/module/moduletest"
	"github.com/kord-fss/kord/module/socket"
	"github.com/kord-fss/kord/service"
	"github.com/kord-fss/kord/service/appauth"
)

// Parties are two running, paired parties.
type Parties struct {
	// Apps are the application clients of party 0 and party 1, at the
	// application addresses Addrs.
	Apps  [2]*client.Client
	Addrs [2]string
	// PeerAddr is party 1's peer listener (party 0 dials it).
	PeerAddr string
	// Stop[b] stops party b (its gRPC server and the party; its module
	// stays), as a crash of the party would.
	Stop [2]func()
}

// Options tune StartWith.
type Options struct {
	// Batch is the parties' batch size (0: 64).
	Batch int
	// Via, when not nil, is put between party 0 and party 1's peer port
	// (e.g. a shaping or counting proxy): it gets party 1's address and
	// returns the one party 0 dials.
	Via func(addr string) (string, error)
	// Tune, when not nil, sees each party's config before it starts.
	Tune func(*service.Config)
	// ServerOptions are the parties' gRPC server options (e.g. kord's
	// codec, grpc.ForceServerCodecV2(kordpb.Codec())).
	ServerOptions []grpc.ServerOption
	// AppUnix puts each party's application API on a Unix socket with
	// its applications told apart by uid (appauth's unix-uid mode; this
	// process's uid is the operator), as a same-host application meets
	// it, instead of plaintext TCP on loopback.
	AppUnix bool
}

// Start starts two parties whose modules sit behind module sockets, pairs
// them and returns their clients; everything stops at the test's end.
// batch and via are Options.Batch and Options.Via.
func Start(t testing.TB, batch int, via func(addr string) (string, error)) *Parties {
	t.Helper()
	return StartWith(t, Options{Batch: batch, Via: via})
}

// StartWith is Start with all the options.
func StartWith(t testing.TB, o Options) *Parties {
	t.Helper()
	if o.Batch == 0 {
		o.Batch = 64
	}
	dir := t.TempDir()
	secret := []byte("provisioning secret for tests!!")
	out := &Parties{}
	peer := ""
	for _, party := range []int{1, 0} {
		d, st := moduletest.OpenDurable(t, party, filepath.Join(dir, []string{"m0.db", "m1.db"}[party]), 0, secret)
		path := filepath.Join(dir, []string{"s0", "s1"}[party])
		ml, err := socket.Listen(path)
		if err != nil {
			t.Fatal(err)
		}
		go socket.NewServer(d, socket.ServerOptions{Access: socket.Access{SameUID: true}}).Serve(ml)
		mod := socket.Dial(path, 0)
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		dial := peer
		if party == 0 && o.Via != nil {
			if dial, err = o.Via(peer); err != nil {
				t.Fatal(err)
			}
		}
		cfg := service.Config{Party: party, Module: mod, PeerAddr: dial, PeerPlaintext: true, Batch: o.Batch, InFlight: 2}
		if o.Tune != nil {
			o.Tune(&cfg)
		}
		p, err := service.New(cfg)
		if err != nil {
			t.Fatal(err)
		}
		srv, api := grpc.NewServer(o.ServerOptions...), (*grpc.Server)(nil)
		appAddr := l.Addr().String()
		if o.AppUnix {
			// The peer link stays on l; the API is on a socket alone.
			api, appAddr = UnixAPI(t, filepath.Join(dir, []string{"a0", "a1"}[party]), p, o.ServerOptions...)
			p.Register(nil, srv)
		} else {
			p.Register(srv, srv)
		}
		go srv.Serve(l)
		ctx, cancel := context.WithCancel(context.Background())
		go p.Run(ctx)
		c, err := client.Dial(appAddr, nil)
		if err != nil {
			t.Fatal(err)
		}
		var once sync.Once
		out.Stop[party] = func() {
			once.Do(func() {
				cancel()
				srv.Stop()
				if api != nil {
					api.Stop()
				}
				p.Close()
			})
		}
		t.Cleanup(func() {
			out.Stop[party]()
			c.Close()
			mod.Close()
			ml.Close()
			st.Close()
		})
		out.Apps[party], out.Addrs[party] = c, appAddr
		if party == 1 {
			peer = l.Addr().String()
			out.PeerAddr = peer
		}
	}
	if err := out.Apps[0].Pair(context.Background()); err != nil {
		t.Fatal(err)
	}
	return out
}

// UnixAPI serves p's application API on a Unix socket at path, its
// callers told apart by uid (appauth's unix-uid mode; this process's uid
// is the operator), with opts besides. It returns the server (stopped at
// the test's end, if not before) and the address an application dials.
func UnixAPI(t testing.TB, path string, p *service.Party, opts ...grpc.ServerOption) (*grpc.Server, string) {
	t.Helper()
	l, err := socket.Listen(path)
	if err != nil {
		t.Fatal(err)
	}
	addr := "unix://" + path
	auth, _, err := appauth.Config{Listen: addr, UIDs: map[int]string{os.Getuid(): appauth.DefaultOperator}}.ServerOptions(nil)
	if err != nil {
		t.Fatal(err)
	}
	api := grpc.NewServer(append(append([]grpc.ServerOption(nil), opts...), auth...)...)
	p.Register(api, nil)
	go api.Serve(l)
	t.Cleanup(api.Stop)
	return api, addr
}
