package serve

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"google.golang.org/grpc"

	"github.com/kord-fss/kord/internal/daemon"
	"github.com/kord-fss/kord/internal/peertls"
	"github.com/kord-fss/kord/module/msg"
	"github.com/kord-fss/kord/module/provision"
	"github.com/kord-fss/kord/module/socket"
	pb "github.com/kord-fss/kord/proto/kordpb"
	"github.com/kord-fss/kord/service"
	"github.com/kord-fss/kord/service/appauth"
)

// ModuleInProcess is the value of kord party --module that runs the
// software module inside the party's process instead of dialling a module
// process's socket.
const ModuleInProcess = "in-process"

// PartyConfig is what kord party serves from: its flags, checked by the
// command (party 0 or 1, the addresses its party needs, batch and limits
// in range, the in-process module's flags).
type PartyConfig struct {
	// Party is 0 or 1.
	Party int
	// Module is the module's Unix socket, or ModuleInProcess to run the
	// software module opened from InProcess inside the party.
	Module    string
	InProcess daemon.ModuleFiles
	// ModuleTimeout bounds one module request.
	ModuleTimeout time.Duration
	// NoSlabFDs: take bulk slabs from the module socket as bytes (the
	// default), not as sealed memfds read in place (Linux).
	NoSlabFDs bool
	// Listen is the application API address (host:port or
	// unix:///path); PeerListen party 1's peer address, Peer the address
	// party 0 dials; Metrics, if not empty, where /metrics is served.
	Listen, PeerListen, Peer, Metrics string
	// Batch, InFlight, MaxPending, MaxStreamKeys, MatchTimeout and
	// PeerTimeout go to service.Config.
	Batch, InFlight, MaxPending, MaxStreamKeys int
	MatchTimeout, PeerTimeout                  time.Duration
	// PartyState is the party's own state file (service.Config.State).
	PartyState string
	// TLSCert, TLSKey, TLSCA, TLSPeerName and PeerPlaintext are the peer
	// link's transport (daemon.PeerTLS).
	TLSCert, TLSKey, TLSCA, TLSPeerName string
	PeerPlaintext                       bool
	// App is the application API's authentication (appauth: TLS with
	// client certificates, Unix uids, or plaintext); its Listen is
	// Listen. AppSocketGroup, if set, opens a Unix socket --listen to that
	// group (mode 0660) for applications under other users.
	App            appauth.Config
	AppSocketGroup string
	// TLSName is the name this party's certificate must carry: the name
	// the peer requires ("" = peertls.PartyName(Party), the peer's
	// default), checked at start (daemon.CheckOwnCert).
	TLSName string
	// LogLevel is --log-level; PrefaultMiB --prefault-heap.
	LogLevel    string
	PrefaultMiB int
	// Out receives the readiness record (os.Stdout if nil).
	Out io.Writer
}

// Party runs a party's host: it opens the module, listens for
// applications (and, party 1, for the peer; and for metrics), writes the
// readiness record to c.Out and runs the party until ctx is done or SIGINT
// or SIGTERM arrives, which ends it with nil. Bad settings are
// daemon.UsageErrors.
func Party(ctx context.Context, c PartyConfig) error {
	party := c.Party
	// service.New adds the party to its logger; base goes to it,
	// log (with the party) to the daemon's own lines.
	base, err := daemon.Logger(c.LogLevel, "component", "party")
	if err != nil {
		return err
	}
	log := base.With("party", party)
	// The application API's credentials are read first: a bad file is
	// reported before anything else happens.
	ac := c.App
	ac.Listen = c.Listen
	appOpts, appMode, err := ac.ServerOptions(log)
	if err != nil {
		return daemon.BadInput("%v", err)
	}
	creds, tc, err := daemon.PeerTLS(c.TLSCert, c.TLSKey, c.TLSCA, c.TLSPeerName, c.PeerPlaintext, party)
	if err != nil {
		return err
	}
	if tc == nil && c.TLSName != "" {
		return daemon.BadInput("--tls-name goes with --tls-cert, not --peer-plaintext")
	}
	if tc != nil {
		if err := daemon.CheckOwnCert(tc, party, c.TLSName); err != nil {
			return err
		}
		peerName := c.TLSPeerName
		if peerName == "" {
			peerName = peertls.PartyName(1 - party)
		}
		log.Info("peer link: mutual TLS 1.3", "peer_name", peerName, "cert_expires", tc.Certificates[0].Leaf.NotAfter.UTC())
		if party == 1 {
			creds = daemon.LogRefusals(creds, log)
		}
	} else {
		log.Warn("peer link without transport security (--peer-plaintext)")
	}
	switch appMode {
	case appauth.ModePlaintext:
		log.Warn("application API without TLS or identities: every caller is the anonymous application and the operator", "listen", c.Listen, "explicit", ac.Plaintext)
	default:
		log.Info("application API authenticated", "mode", appMode, "operator", ac.Operator)
	}
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	started := false
	if c.Module == ModuleInProcess {
		defer undoNewState(c.InProcess.State, &started)()
	}
	defer undoNewState(c.PartyState, &started)() // "" leaves nothing to undo
	mod, closeMod, err := openPartyModule(c, log)
	if err != nil {
		return err
	}
	defer closeMod()
	if err := checkModuleParty(mod, c, log); err != nil {
		return err
	}
	p, err := service.New(service.Config{Party: party, Module: mod, Batch: c.Batch, InFlight: c.InFlight, PeerAddr: c.Peer,
		PeerCreds: creds, PeerPlaintext: creds == nil, MatchTimeout: c.MatchTimeout, PeerTimeout: c.PeerTimeout, MaxPending: c.MaxPending,
		MaxStreamKeys: c.MaxStreamKeys, State: c.PartyState, Logger: base, Registry: reg})
	if err != nil {
		return err
	}
	defer p.Close()
	ctx, stop := signalContext(ctx)
	defer stop()
	defer daemon.StartProcess(fmt.Sprintf("party%d", party), c.PrefaultMiB)()

	appL, err := listenApp(c.Listen, c.AppSocketGroup)
	if err != nil {
		return err
	}
	opts := daemon.ServerOptions()
	app := grpc.NewServer(append(opts[:len(opts):len(opts)], appOpts...)...)
	p.Register(app, nil)
	go app.Serve(appL)
	defer app.Stop()
	ready := []any{"app", appL.Addr().String(), "pid", os.Getpid()}
	if party == 1 {
		peerL, err := net.Listen("tcp", c.PeerListen)
		if err != nil {
			return err
		}
		ps := grpc.NewServer(append(opts, p.PeerServerOption())...)
		p.Register(nil, ps)
		go ps.Serve(peerL)
		defer ps.Stop()
		ready = append(ready, "peer", peerL.Addr().String())
	}
	if c.Metrics != "" {
		ml, err := net.Listen("tcp", c.Metrics)
		if err != nil {
			return err
		}
		mux := http.NewServeMux()
		mux.Handle("/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
		healthHandlers(mux, party, func(ctx context.Context) (*pb.StatusReply, error) { return p.Status(ctx, &pb.StatusRequest{}) })
		hs := &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
		go hs.Serve(ml)
		defer hs.Close()
		ready = append(ready, "metrics", ml.Addr().String())
	}
	started = true
	// With the batch it runs at: kord party's default depends on --listen.
	ready = append(ready, "batch", c.Batch)
	log.Info("party serving", ready...)
	daemon.Ready(stdout(c.Out), ready...)
	err = p.Run(ctx)
	if errors.Is(err, context.Canceled) {
		err = nil
	}
	return err
}

// openPartyModule returns the party's module: a client of the module
// process's socket, or, with --module in-process, the durable software
// module opened here from the state file. close releases it.
func openPartyModule(c PartyConfig, log *slog.Logger) (mod socket.Module, close func(), err error) {
	if c.Module != ModuleInProcess {
		sc := socket.Dial(c.Module, c.ModuleTimeout)
		sc.UseSlabFDs(!c.NoSlabFDs)
		if sc.SlabFDs() {
			log.Info("module slabs as sealed memfds for applications that take them, read in place or handed on (--module-slab-fds)")
		}
		return sc, func() { sc.Close() }, nil
	}
	// The party now holds the module's secrets: no core dumps, no tracing
	// by its own user (as kord module does before reading any secret).
	if ok, err := provision.Undumpable(); err != nil {
		log.Warn("could not mark the party undumpable", "err", err)
	} else if !ok {
		log.Info("this OS cannot mark the party undumpable")
	}
	base, err := daemon.Logger(c.LogLevel, "component", "module")
	if err != nil {
		return nil, nil, err
	}
	m := c.InProcess
	m.Party = c.Party
	dev, st, err := daemon.OpenDurableModule(m, base, log)
	if err != nil {
		return nil, nil, fmt.Errorf("--module %s: %w", ModuleInProcess, err)
	}
	log.Warn("the module runs inside the party process (--module in-process): whoever compromises the party reads the module's secrets (docs/threat-model.md, \"The module inside the party\")",
		"state", m.State, "locked", dev.Locked())
	return socket.Local(dev), func() { st.Close() }, nil
}

// listenApp listens on the application address; a Unix socket with group
// (a name or gid) is opened to that group (mode 0660).
func listenApp(addr, group string) (net.Listener, error) {
	if group == "" {
		return daemon.Listen(addr)
	}
	path, ok := strings.CutPrefix(addr, "unix://")
	if !ok {
		return nil, daemon.BadInput("--app-socket-group is for a Unix socket --listen (unix:///path), not %s", addr)
	}
	gid, err := socket.LookupGroup(group)
	if err != nil {
		return nil, daemon.BadInput("--app-socket-group: %v", err)
	}
	return socket.ListenGroup(path, gid)
}

// checkModuleParty asks the module which party it is before the party
// says ready, and refuses a module of the other party. A module that does
// not answer yet (not started, restarting) is no reason to refuse: the
// party waits for it, and /readyz says so.
func checkModuleParty(mod socket.Module, c PartyConfig, log *slog.Logger) error {
	ctx, cancel := context.WithTimeout(context.Background(), min(c.ModuleTimeout, 5*time.Second))
	defer cancel()
	st, err := mod.Poll(ctx, &msg.PollRequest{})
	if err != nil {
		log.Warn("the module does not answer yet; the party waits for it", "module", c.Module, "err", err)
		return nil
	}
	if st.Party != c.Party {
		return daemon.BadInput("--party %d, but the module at %s is party %d: give --module the socket of this site's module (the one started with --party %d)",
			c.Party, c.Module, st.Party, c.Party)
	}
	return nil
}
