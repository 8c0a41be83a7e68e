package main

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/kord-fss/kord/cmd/kord/internal/serve"
	"github.com/kord-fss/kord/internal/daemon"
	"github.com/kord-fss/kord/module/socket"
	"github.com/kord-fss/kord/service"
	"github.com/kord-fss/kord/service/appauth"
)

func init() { rootCmd.AddCommand(partyCmd(), pairCmd()) }

func partyCmd() *cobra.Command {
	var (
		party, batch, inFlight, maxPending    int
		maxStreamKeys                         int
		modSock, listen, peerListen, peer     string
		partyState                            string
		metricsAddr, tlsCert, tlsKey, tlsCA   string
		tlsPeerName, tlsName                  string
		peerPlaintext, appPlaintext, slabFDs  bool
		appCert, appKey, appCA, appUIDs       string
		operator, appGroup                    string
		matchTimeout, peerTimeout, modTimeout time.Duration
		inProc                                daemon.ModuleFiles
	)
	cmd := &cobra.Command{
		Use:   "party --party B --module (SOCKET | in-process --state FILE --secret-file FILE) --listen ADDR (--peer-listen ADDR | --peer ADDR) (--tls-cert F --tls-key F --tls-ca F | --peer-plaintext) [--party-state FILE]",
		Short: "Run a party's host daemon: applications' gRPC API, the peer link and the module socket",
		Long: `kord party runs one site's host. It talks to its module (kord module) over
the module's Unix socket (or, with --module in-process, runs the software
module inside its own process: see below), to the peer party over gRPC on
TCP, and serves the site's applications over gRPC (the KeySource API,
docs/api.md; Go client in package client). It batches submissions (--batch keys per batch), keeps up
to --in-flight batches outstanding, and after any transport failure or
disagreement with the peer starts a new session: the rollback witness moves
both modules forward to a common counter and undelivered requests are
batched again.

Party 1 listens for the peer on --peer-listen; party 0 dials it with --peer.
The peer link runs mutual TLS 1.3: --tls-cert and --tls-key are this
party's certificate and key, --tls-ca the CA both parties' certificates
chain to (kord certs makes all of them), and the peer's certificate must
also carry the peer's name (--tls-peer-name, default kord-party-1 for
party 0 and kord-party-0 for party 1). Without them the party refuses to
start; --peer-plaintext runs the link without transport security and must
be given explicitly.

The application API (--listen) authenticates each application, whose
identity scopes its request ids (docs/api.md, "Application identity"). On
TCP it runs TLS 1.3 with client certificates: --app-tls-cert and
--app-tls-key are the party's certificate (its kord certs party certificate
serves), --app-ca the CA applications' certificates chain to; an
application's name is the URI kord-app:NAME in its certificate (kord certs
--apps NAME). A TCP address other than loopback without them is refused
unless --app-plaintext is given; on loopback, no TLS flag means plaintext
(local development). On a Unix socket (unix:///path) the kernel reports
each caller's uid, which --app-uid NAME=UID,... maps to its name (other
uids are refused); --app-socket-group opens the socket to a group. Only
the --operator identity may call Pair and read the full Status (others
get a limited one); with --app-plaintext, everyone is the anonymous
application and the operator. Prometheus metrics are served on --metrics at
/metrics, with the probes /healthz (200 while the party serves) and
/readyz (200 once its module answers, is paired and the peer session is
up; else 503; the body says which, as a JSON record).

--party-state FILE is the party's own record of what it served for each
recent request id (counters, shape, digests of its own shares and pair
tags; no key material). After a restart it alone decides which requests
the party completes again from its module when the application resends
them; the peer's word can only make such a request void or spent. Keep
it on the site's persistent volume, beside the module's state file.

--module in-process runs the software module (what kord module runs) inside
the party, from the state file and secret kord module would take (--state,
--secret-file or KORD_SECRET, --seal-key-file, --kem, --window): one process
fewer and no module socket, for deployments where the module is software
anyway. The party's memory then holds the module's secrets, so whoever
compromises the party (its network-facing gRPC servers included) holds them
too: docs/threat-model.md, "The module inside the party". The separate
module process stays the default.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			common, err := readPartyDaemon(cmd, party)
			if err != nil {
				return err
			}
			if modSock == "" || listen == "" {
				return badInput("--module and --listen are required")
			}
			if err := checkPartyModule(cmd, modSock, inProc); err != nil {
				return err
			}
			if party == 0 && peer == "" {
				return badInput("party 0 needs --peer (party 1's --peer-listen address)")
			}
			if party == 1 && peerListen == "" {
				return badInput("party 1 needs --peer-listen")
			}
			batchDefault(cmd, &batch, strings.HasPrefix(listen, "unix://"))
			if batch < 1 || batch > service.MaxCount || inFlight < 1 || inFlight > 1024 {
				return badInput("--batch must be 1..%d and --in-flight 1..1024", service.MaxCount)
			}
			if maxPending < service.MaxCount {
				return badInput("--max-pending must be at least %d (the most keys of one request)", service.MaxCount)
			}
			if maxStreamKeys < 1 {
				return badInput("--max-stream-keys %d must be at least 1", maxStreamKeys)
			}
			uids, err := appauth.ParseUIDs(appUIDs)
			if err != nil {
				return badInput("%v", err)
			}
			app := appauth.Config{Listen: listen, TLSCert: appCert, TLSKey: appKey, CA: appCA, Plaintext: appPlaintext, UIDs: uids, Operator: operator}
			if _, err := app.Check(); err != nil {
				return badInput("%v", err)
			}
			return serve.Party(context.Background(), serve.PartyConfig{App: app, AppSocketGroup: appGroup, Party: party, Module: modSock, InProcess: inProc, ModuleTimeout: modTimeout,
				NoSlabFDs: !slabFDs, Listen: listen, PeerListen: peerListen, Peer: peer, Metrics: metricsAddr,
				Batch: batch, InFlight: inFlight, MaxPending: maxPending, MaxStreamKeys: maxStreamKeys,
				MatchTimeout: matchTimeout, PeerTimeout: peerTimeout, PartyState: partyState,
				TLSCert: tlsCert, TLSKey: tlsKey, TLSCA: tlsCA, TLSPeerName: tlsPeerName, TLSName: tlsName, PeerPlaintext: peerPlaintext,
				LogLevel: common.LogLevel, PrefaultMiB: common.PrefaultMiB, Out: cmd.OutOrStdout()})
		},
	}
	f := cmd.Flags()
	f.IntVar(&party, "party", 0, "this party: 0 (orders the requests, dials the peer) or 1 (required)")
	f.StringVar(&modSock, "module", "", "the module's Unix socket, or in-process to run the software module inside the party (with --state, --secret-file)")
	f.StringVar(&listen, "listen", "127.0.0.1:7300", "application API address (host:port or unix:///path)")
	f.StringVar(&peerListen, "peer-listen", "", "party 1: address to accept the peer party on")
	f.StringVar(&peer, "peer", "", "party 0: party 1's peer address")
	f.StringVar(&partyState, "party-state", "", "the party's own state file (bbolt, created mode 0600): what it served for each recent request id, which alone decides what it hands out again after a restart (docs/operations.md, Recovery); without it a restarted party completes nothing generated before")
	f.StringVar(&metricsAddr, "metrics", "", "address to serve Prometheus /metrics and the /healthz, /readyz probes on (empty = off)")
	f.IntVar(&batch, "batch", 0, fmt.Sprintf("most keys per batch (default %d with --listen unix://…, whose applications take whole slabs as memfds; %d otherwise)", service.DefaultBatchSameHost, service.DefaultBatch))
	f.IntVar(&inFlight, "in-flight", service.DefaultInFlight, "most batches outstanding with the peer")
	f.IntVar(&maxStreamKeys, "max-stream-keys", service.DefaultMaxStreamKeys, "most keys one application stream holds read and not yet sent back; past it the party stops reading the stream until the application reads its replies")
	f.IntVar(&maxPending, "max-pending", service.DefaultMaxPending, "most keys queued and not yet answered, over all application streams; requests beyond it are refused (resource_exhausted)")
	f.DurationVar(&matchTimeout, "match-timeout", service.DefaultMatchTimeout, "how long one request waits for its partner at the other site before it fails unmatched (alone; other requests go on)")
	f.DurationVar(&peerTimeout, "peer-timeout", 0, "party 0: how long to wait for a batch reply (default match-timeout + 5s)")
	f.DurationVar(&modTimeout, "module-timeout", 30*time.Second, "bound on one module request")
	f.BoolVar(&slabFDs, "module-slab-fds", socket.SlabFDSupported, "take bulk slabs from the module socket as sealed memfds, mapped read-only and read in place, and hand a whole slab's memfd on to a same-host application that asks for it (slab_fds, Unix-socket API); on by default on Linux (BENCHMARKS.md, issue 34)")
	f.StringVar(&tlsCert, "tls-cert", "", "peer link: this party's certificate (PEM)")
	f.StringVar(&tlsKey, "tls-key", "", "peer link: this party's private key (PEM)")
	f.StringVar(&tlsCA, "tls-ca", "", "peer link: CA that signed the peer's certificate (PEM)")
	f.StringVar(&tlsPeerName, "tls-peer-name", "", "peer link: the name the peer's certificate must carry (default kord-party-1 for party 0, kord-party-0 for party 1)")
	f.StringVar(&tlsName, "tls-name", "", "peer link: the name this party's --tls-cert must carry, the one the peer requires (default kord-party-B, the peer's default --tls-peer-name); checked at start")
	f.BoolVar(&peerPlaintext, "peer-plaintext", false, "run the peer link without TLS (instead of --tls-*): anyone on the network path can read and alter it")
	f.StringVar(&appCert, "app-tls-cert", "", "application API (TCP): this party's certificate (PEM)")
	f.StringVar(&appKey, "app-tls-key", "", "application API (TCP): this party's private key (PEM)")
	f.StringVar(&appCA, "app-ca", "", "application API (TCP): CA that signed the applications' client certificates (PEM)")
	f.BoolVar(&appPlaintext, "app-plaintext", false, "serve the application API without TLS or identities (a TCP address other than loopback needs this or --app-tls-*)")
	f.StringVar(&appUIDs, "app-uid", "", "application API on a Unix socket: NAME=UID,... the uids (or user names) that may connect and their application names")
	f.StringVar(&appGroup, "app-socket-group", "", "application API on a Unix socket: open it to this group (mode 0660)")
	f.StringVar(&operator, "operator", appauth.DefaultOperator, "the application identity that may call Pair and Status")
	addPartyModuleFlags(cmd, &inProc)
	daemon.CommonFlags(cmd.Flags())
	daemon.PrefaultFlag(cmd.Flags())
	return cmd
}

func pairCmd() *cobra.Command {
	var app string
	var tlsf appTLSFlags
	var timeout time.Duration
	var skipPaired bool
	cmd := &cobra.Command{
		Use:   "pair --app ADDR",
		Short: "Pair the two modules once, through the two parties (ask party 0)",
		Long: `kord pair asks party 0 (at its application address) to run the one-time
pairing of the two modules: party 0 relays the modules' pairing messages
through party 1. Both modules must have been started with the same
provisioning secret and must not be paired yet. The result is kept in each
module's state file. A TLS application API needs the operator's
certificate (kord certs --apps operator: --app-tls-cert app-operator.crt
--app-tls-key app-operator.key --app-ca ca.crt).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := daemon.Configure(cmd.Flags()); err != nil {
				return err
			}
			if app == "" {
				return badInput("--app is required")
			}
			c, err := dialApp(app, tlsf)
			if err != nil {
				return err
			}
			defer c.Close()
			ctx, cancel := context.WithTimeout(cmd.Context(), timeout)
			defer cancel()
			if skipPaired {
				st, err := c.Status(ctx)
				if err != nil {
					return fmt.Errorf("pair: status: %w", err)
				}
				if st.Paired {
					fmt.Fprintln(cmd.OutOrStdout(), "already paired")
					return nil
				}
			}
			if err := c.Pair(ctx); err != nil {
				return fmt.Errorf("pair: %w", err)
			}
			fmt.Fprintln(cmd.OutOrStdout(), "paired")
			return nil
		},
	}
	cmd.Flags().StringVar(&app, "app", "", "party 0's application address")
	tlsf.add(cmd.Flags())
	cmd.Flags().DurationVar(&timeout, "timeout", 30*time.Second, "give up after")
	cmd.Flags().BoolVar(&skipPaired, "skip-paired", false, "exit 0 without pairing when party 0's module is already paired (a pairing job that may run again)")
	daemon.CommonFlags(cmd.Flags())
	return cmd
}

// batchDefault sets *batch, unless --batch was given (for kord party also
// by environment or config file), to kord party's default for its
// application link: sameHost is the Unix socket, where whole slabs go on
// as memfds (service.DefaultBatchFor).
func batchDefault(cmd *cobra.Command, batch *int, sameHost bool) {
	if !cmd.Flags().Changed("batch") {
		*batch = service.DefaultBatchFor(sameHost)
	}
}
