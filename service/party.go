// The party: its configuration, New, Run and Close.

package service

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"google.golang.org/grpc"
	"google.golang.org/grpc/backoff"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/experimental"

	"github.com/kord-fss/kord/module"
	"github.com/kord-fss/kord/module/msg"
	"github.com/kord-fss/kord/module/socket"
	pb "github.com/kord-fss/kord/proto/kordpb"
)

// Defaults. DefaultBatch: bulk batches (bulk.go) cost the daemons about a
// fifth less CPU per key at 1024 keys than at 256 (`kord demo`,
// BENCHMARKS.md "Bulk transport"); a batch takes what is queued, so a
// lightly loaded party still sends small ones at once.
const (
	DefaultBatch        = 1024
	DefaultInFlight     = 4
	DefaultMatchTimeout = 5 * time.Second
	// DefaultBatchSameHost is the batch for parties whose applications
	// are on their Unix sockets (whole slabs handed on as memfds): each
	// batch costs the daemons a peer round trip, module calls, digests and
	// a record, and there the keys' bytes never pass through them, so
	// bigger batches cost no memory: ResNet-18's keys through the five
	// processes took 12 % less time at 4096 than at 1024, with the same
	// party memory. For an application over TCP the keys pass through the
	// party as bytes: 4096 took the same time there and doubled the
	// parties' peak memory (BENCHMARKS.md, "The batch on the same-host
	// path").
	DefaultBatchSameHost = 4096
	// DefaultMaxPending is the most keys a party holds queued and not yet
	// answered, over all its applications' streams.
	DefaultMaxPending = 1 << 20
	// DefaultMaxStreamKeys is the most keys one application stream holds
	// read and not yet sent back.
	DefaultMaxStreamKeys = 1 << 16
)

// DefaultBatchFor is the default batch of a party whose applications are
// all on its Unix socket (sameHost) or not.
func DefaultBatchFor(sameHost bool) int {
	if sameHost {
		return DefaultBatchSameHost
	}
	return DefaultBatch
}

// Config configures a party.
type Config struct {
	Party  int
	Module socket.Module
	// Batch is the most keys per batch (≤ 4096); InFlight the most batches
	// outstanding with the peer (party 0).
	Batch, InFlight int
	// PeerAddr is party 1's peer address (party 0 dials it).
	PeerAddr string
	// PeerCreds secures the peer link: party 0 dials with them, and party
	// 1's caller serves the peer link with PeerServerOption. One of
	// PeerCreds and PeerPlaintext is required: New refuses a Config with
	// neither (or both).
	PeerCreds credentials.TransportCredentials
	// PeerPlaintext runs the peer link without transport security (tests,
	// or a link secured by other means).
	PeerPlaintext bool
	// MatchTimeout is how long party 1 waits for its application's request
	// with an id party 0 has batched; PeerTimeout how long party 0 waits
	// for a batch reply (default MatchTimeout + 5s).
	MatchTimeout, PeerTimeout time.Duration
	// MaxPending is the most keys the party holds queued and not yet
	// answered (default DefaultMaxPending); requests beyond it are refused.
	MaxPending int
	// MaxStreamKeys is the most keys one application stream holds read
	// and not yet sent back (default DefaultMaxStreamKeys); past it the
	// party stops reading that stream until the application reads its
	// replies. Answered keys leave MaxPending's count, so without it an
	// application that sends without reading would pile replies up.
	MaxStreamKeys int
	// State is the party's state file (ledger.go): its own durable
	// record of what it served for recent ids, which alone decides what
	// it hands out again after a restart. "" keeps none: a restarted
	// party then completes nothing generated before (those ids are void).
	State    string
	Logger   *slog.Logger
	Registry prometheus.Registerer

	// oneShotReplies (tests): party 0 does not ask for early frames, as
	// a party 0 that predates them, so party 1 answers in one part.
	oneShotReplies bool
	// itemsUnpacked (tests): party 1 does not offer packed items, as one
	// that predates them would not.
	itemsUnpacked bool
	// noBulk (tests): party 0 sends no Batch.runs and party 1 does not
	// offer them (HelloReply.bulk), as parties that predate bulk batches.
	noBulk bool
	// inProcess: the parties of a LocalPair, linked in process (no
	// PeerAddr, no transport credentials).
	inProcess bool
}

// Party is one site's host service.
type Party struct {
	pb.UnimplementedKeySourceServer

	cfg  Config
	mod  socket.Module
	log  *slog.Logger
	m    *metrics
	q    *queue   // party 0
	pend *pending // party 1
	adm  *admission
	run  uint64

	peerConn *grpc.ClientConn
	peer     pb.PeerLinkClient
	// local (party 0 of a LocalPair): opens an in-process link to party 1
	// for one session, instead of the gRPC peer link.
	local func(ctx context.Context) (peerLink, error)

	seq       uint64        // party 0: last batch seq assigned (sender only)
	delivered atomic.Uint64 // party 0: last batch seq delivered

	sessMu     sync.Mutex
	cancelPrev context.CancelFunc
	active     sync.Mutex
	heldMu     sync.Mutex
	held       []*heldBatch  // party 1: answered, awaiting confirmation
	confirms   []*pb.Confirm // party 0: its last delivered batches' confirmations (confirm.go)
	heldRun    uint64

	nextMu  sync.Mutex
	nextVal uint64 // the last value of the kord_module_next_counter gauge

	// fdStreams counts, per application, its streams that take slabs as
	// memfds (slab_fds on a Unix connection: slabhand.go).
	fdMu      sync.Mutex
	fdStreams map[string]int

	keysDelivered, batches, resyncs, frameBytes, rounds, sessions, inFlight atomic.Uint64
	pairMismatches                                                          atomic.Uint64 // batches whose pair tags disagreed

	sessionAt atomic.Int64 // when the current peer session started (unix ns)
	downAt    atomic.Int64 // party 0: when the last session ended, or the party started (unix ns)

	spentMu  sync.Mutex
	spentLog []spentRef // requests failed spent, to report at the next hello
	peerUp   atomic.Bool

	// recent deliveries, for a peer that restarts (recover.go)
	recentMu   sync.Mutex
	recent     []recentRec
	recentNext int
	tags       [][16]byte // pair tags by counter mod recentKeys
	tagCtr     []uint64
	// this party's own durable record (ledger.go)
	ledger *ledger
	// what a restarted party answers resends with (recover.go)
	recoverMu     sync.RWMutex
	recovered     map[rid]*recoverRec // by application and id
	recoveredN    atomic.Int64
	recoveredKeys atomic.Uint64 // keys handed out again after a restart
	// ids answered void after a restart whose keys the peer delivered, to
	// tell the peer (void.go)
	voids voidReports
}

type heldBatch struct {
	seq     uint64
	first   uint64 // first counter
	jobs    []*job
	replies [][]msg.CollectResponse
	confirm []byte    // the confirmation party 0 must send (confirm.go)
	at      time.Time // when it was answered (its confirmation is due within PeerTimeout)
}

// New returns a party. Party 0 needs PeerAddr.
func New(c Config) (*Party, error) {
	if c.Party != 0 && c.Party != 1 {
		return nil, fmt.Errorf("service: party %d is not 0 or 1", c.Party)
	}
	if c.Module == nil {
		return nil, errors.New("service: no module")
	}
	if c.inProcess {
		c.PeerCreds, c.PeerPlaintext, c.PeerAddr = nil, true, ""
	}
	if (c.PeerCreds == nil) == !c.PeerPlaintext {
		return nil, errors.New("service: the peer link needs PeerCreds (mutual TLS) or, to run it without transport security, PeerPlaintext; not neither, not both")
	}
	if c.Batch <= 0 {
		c.Batch = DefaultBatch
	}
	c.Batch = min(c.Batch, MaxCount)
	if c.InFlight <= 0 {
		c.InFlight = DefaultInFlight
	}
	if c.MatchTimeout <= 0 {
		c.MatchTimeout = DefaultMatchTimeout
	}
	if c.PeerTimeout <= 0 {
		c.PeerTimeout = c.MatchTimeout + 5*time.Second
	}
	if c.MaxPending <= 0 {
		c.MaxPending = DefaultMaxPending
	}
	if c.MaxStreamKeys <= 0 {
		c.MaxStreamKeys = DefaultMaxStreamKeys
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	p := &Party{cfg: c, mod: c.Module, log: c.Logger.With("party", c.Party), m: newMetrics(c.Registry, c.Party),
		q: newQueue(), pend: newPending(), adm: newAdmission(c.MaxPending, c.Party == 0)}
	var b [8]byte
	rand.Read(b[:])
	p.run = binary.LittleEndian.Uint64(b[:])
	p.voids.kick = make(chan struct{}, 1)
	p.downAt.Store(time.Now().UnixNano())
	if c.Party == 0 && !c.inProcess {
		if c.PeerAddr == "" {
			return nil, errors.New("service: party 0 needs the peer's address")
		}
		conn, err := grpc.NewClient(c.PeerAddr, grpc.WithTransportCredentials(p.peerCreds()),
			grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(64<<20), grpc.MaxCallSendMsgSize(64<<20), grpc.ForceCodecV2(pb.Codec())),
			// A restarted party 1 is dialled again within peerBackoff's
			// base delay, not gRPC's default second (recovery time).
			grpc.WithConnectParams(grpc.ConnectParams{Backoff: peerBackoff, MinConnectTimeout: 5 * time.Second}),
			grpc.WithInitialWindowSize(1<<20), grpc.WithInitialConnWindowSize(1<<20),
			grpc.WithWriteBufferSize(256<<10), grpc.WithReadBufferSize(256<<10),
			experimental.WithBufferPool(pb.BufferPool()))
		if err != nil {
			return nil, fmt.Errorf("service: peer %s: %w", c.PeerAddr, err)
		}
		p.peerConn, p.peer = conn, pb.NewPeerLinkClient(conn)
	}
	l, err := openLedger(c.State, p.log)
	if err != nil {
		if p.peerConn != nil {
			p.peerConn.Close()
		}
		return nil, err
	}
	p.ledger = l
	if l.restarted {
		p.log.Info("restarted over this party's state file: its record answers resends in the first peer session",
			"state", c.State, "epoch", l.epoch, "ids", len(l.byID))
	}
	return p, nil
}

// peerBackoff is party 0's reconnection backoff to party 1.
// MaxDelay bounds how long a restarted party 1 waits to be dialled again
// after a longer outage (a whole site's restart): a dial to a closed port
// costs nothing worth saving.
var peerBackoff = backoff.Config{BaseDelay: 25 * time.Millisecond, Multiplier: 1.6, Jitter: 0.2, MaxDelay: 200 * time.Millisecond}

// Close releases the peer connection.
func (p *Party) Close() error {
	err := p.ledger.close()
	if p.peerConn != nil {
		err = errors.Join(err, p.peerConn.Close())
	}
	return err
}

// peerCreds are the peer link's transport credentials: PeerCreds, or
// none when the Config asked for plaintext.
func (p *Party) peerCreds() credentials.TransportCredentials {
	if p.cfg.PeerPlaintext {
		return insecure.NewCredentials()
	}
	return p.cfg.PeerCreds
}

// PeerServerOption is the server option that party 1's peer-link server
// needs: the Config's PeerCreds, or plaintext if it asked for that.
func (p *Party) PeerServerOption() grpc.ServerOption { return grpc.Creds(p.peerCreds()) }

// Register registers the application API (and, for party 1, the peer
// link) on s.
func (p *Party) Register(app, peer grpc.ServiceRegistrar) {
	if app != nil {
		pb.RegisterKeySourceServer(app, p)
	}
	if peer != nil && p.cfg.Party == 1 {
		pb.RegisterPeerLinkServer(peer, p.Peer())
	}
}

// Run drives party 0's sessions with the peer until ctx ends; for party 1
// it waits (sessions arrive over the peer link).
func (p *Party) Run(ctx context.Context) error {
	if p.cfg.Party == 1 {
		// A request no batch of party 0 has claimed within MatchTimeout
		// fails unmatched on its own (it holds up nothing else).
		t := time.NewTicker(max(p.cfg.MatchTimeout/10, 10*time.Millisecond))
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return nil
			case <-t.C:
			}
			var since time.Time
			if p.peerUp.Load() {
				since = time.Unix(0, p.sessionAt.Load())
			}
			if n := p.pend.expire(p.cfg.MatchTimeout, since, p.cfg.MatchTimeout); n > 0 {
				p.m.rejects.WithLabelValues(ErrClassUnmatched).Add(float64(n))
				p.m.pending.Set(float64(p.pend.size()))
			}
		}
	}
	// A request queued while no session has been up for PeerTimeout
	// fails on its own (deadline.go): the peer may never complete one.
	go func() {
		t := time.NewTicker(max(p.cfg.PeerTimeout/20, 10*time.Millisecond))
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
			p.expireQueued(p.cfg.PeerTimeout)
		}
	}()
	backoff := 20 * time.Millisecond
	waitingPair := false // said once that the module waits for pairing
	for ctx.Err() == nil {
		before := p.delivered.Load()
		err := p.session(ctx)
		if ctx.Err() != nil {
			break
		}
		switch {
		case errors.Is(err, module.ErrNotPaired):
			// Not a fault: every fresh pair starts so. Said once, with
			// what ends it, not once a second until then.
			if !waitingPair {
				p.log.Info("the module is not paired yet: waiting for pairing (run `kord pair --app ADDR` with this party's --listen address once both parties are up)")
				waitingPair = true
			}
		default:
			waitingPair = false
			p.log.Warn("peer session ended; resynchronising", "err", err)
		}
		if p.delivered.Load() != before {
			backoff = 20 * time.Millisecond
		}
		select {
		case <-time.After(backoff):
		case <-ctx.Done():
		}
		backoff = min(backoff*2, time.Second)
	}
	return nil
}

// setNext sets the module's next-counter gauge; onlyUp (a batch's counters,
// which may be behind what the module has assigned since) never lowers it.
func (p *Party) setNext(n uint64, onlyUp bool) {
	p.nextMu.Lock()
	defer p.nextMu.Unlock()
	if onlyUp && n <= p.nextVal {
		return
	}
	p.nextVal = n
	p.m.next.Set(float64(n))
}
