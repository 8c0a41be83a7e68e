// Package service is a kord party as a running service: it serves
// applications over gRPC (KeySource), talks to the peer party over gRPC
// (PeerLink) and to its own module over the module socket.
//
// Party 0 orders the requests: it takes application requests in arrival
// order, forms batches of up to Batch keys, submits its shares to its
// module and sends the batch header (request ids, shapes, first counter,
// a chained transcript hash) with its frames to party 1, keeping up to
// InFlight batches outstanding. Party 1 claims its own requests with the
// same ids, submits them in party 0's order, opens party 0's frames, and
// answers with its frames and a digest of its outputs' pair tags (which
// its module computes from each key's counter, shape, α and β). Party 0
// opens those frames, compares digests and only then
// delivers and confirms; party 1 delivers on the confirmation. Any
// disagreement — counters, transcript, digest, a rejected frame, a lost
// or late message — ends the session; the next session starts with the
// rollback witness, which moves both modules forward to a common counter,
// and the undelivered requests are batched again. No application is ever
// handed a key whose pair was not confirmed. An id party 1 has no request
// for costs only itself: that batch alone is refused, before any frame is
// opened, and the session goes on (follower.go, follower.skip). A party that
// restarts completes, from its module, the pairs generated before its
// crash when their ids are resent (recover.go).
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
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/experimental"
	"google.golang.org/grpc/status"

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
	// DefaultMaxPending is the most keys a party holds queued and not yet
	// answered, over all its applications' streams.
	DefaultMaxPending = 1 << 20
	// DefaultMaxStreamKeys is the most keys one application stream holds
	// read and not yet sent back.
	DefaultMaxStreamKeys = 1 << 16
)

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
	// tell the peer with the next batch (party 0) or batch reply (party 1)
	voidMu  sync.Mutex
	voidOut []rid
	// voidKick wakes the session's void sender (sendVoids) when voidOut
	// gets an id.
	voidKick chan struct{}
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
		q: newQueue(), pend: newPending(), adm: newAdmission(c.MaxPending, c.Party == 0), voidKick: make(chan struct{}, 1)}
	var b [8]byte
	rand.Read(b[:])
	p.run = binary.LittleEndian.Uint64(b[:])
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

// admit hands the validated jobs of one message to the pipeline, in
// order, under one lock each for the admission bound and the queue (or
// pending set); errs[i] (errs may be nil) is job i's validation error. Every job
// that is refused, now or before, is answered at once.
func (p *Party) admit(js []*job, errs []error) {
	ok := js
	if errs != nil {
		ok = make([]*job, 0, len(js))
		for i, j := range js {
			if errs[i] != nil {
				p.refuse(j, errs[i])
			} else {
				ok = append(ok, j)
			}
		}
	}
	if aerrs := p.adm.acquireAll(ok); aerrs != nil {
		in := ok[:0:0]
		for i, j := range ok {
			if aerrs[i] != nil {
				p.refuse(j, aerrs[i])
			} else {
				in = append(in, j)
			}
		}
		ok = in
	}
	// What a restarted party's peer sent it is looked up and the others
	// queued under one hold of recoverMu, so that keepRecovered, which
	// takes the queued ones it covers, sees each job once (recover.go).
	p.recoverMu.RLock()
	if p.recoveredN.Load() == 0 {
		p.admitted(ok)
		p.recoverMu.RUnlock()
		return
	}
	p.recoverMu.RUnlock()
	p.recoverMu.Lock()
	defer p.recoverMu.Unlock()
	p.admitted(p.takeRecoveredLocked(ok))
}

// admitted queues (party 0) or adds to the pending set (party 1) jobs
// already admitted.
func (p *Party) admitted(ok []*job) {
	if len(ok) == 0 {
		return
	}
	if p.cfg.Party == 0 {
		p.m.pending.Set(float64(p.q.pushAll(ok)))
		return
	}
	perrs, n := p.pend.addAll(ok)
	for i, err := range perrs {
		if err != nil {
			p.adm.release(ok[i])
			p.refuse(ok[i], err)
		}
	}
	p.m.pending.Set(float64(n))
}

// refuse answers a request the party will not queue.
func (p *Party) refuse(j *job, err error) {
	j.refused = true
	class := ErrClassBadRequest
	if errors.Is(err, errExhausted) {
		class = ErrClassExhausted
	}
	p.m.rejects.WithLabelValues(class).Inc()
	switch {
	case class == ErrClassExhausted:
		j.code = codes.ResourceExhausted
	case errors.Is(err, errDupID):
		j.code = codes.InvalidArgument
	}
	j.fail(class, "%v", err)
}

// deliver finishes the jobs of a batch with their outputs.
func (p *Party) deliver(jobs []*job, reps [][]msg.CollectResponse) {
	type shape struct{ typ, mode uint32 }
	counts := make(map[shape]int, 2)
	p.record(jobs, reps)
	if p.cfg.Party == 0 && p.ledger.durable() {
		// Recorded before the application or party 1 gets them (recover.go).
		p.ledger.put(servedOf(jobs, reps))
	}
	n := 0
	var next uint64
	for i, j := range jobs {
		counts[shape{j.item.Type, j.item.Mode}] += j.keys()
		n += j.keys()
		for k := range reps[i] {
			next = max(next, reps[i][k].Counter+1)
		}
		if j.vn > 0 {
			next = max(next, j.vFirst+uint64(j.vn))
		}
		j.finish(reps[i])
	}
	// The module is at least past the batch's counters.
	p.setNext(next, true)
	p.keysDelivered.Add(uint64(n))
	for s, c := range counts {
		typ, mode := msg.TypeLabel(byte(s.typ)), msg.Mode(s.mode).String()
		if s.mode == ItemCorrelation { // counted in counters taken
			typ, mode = ModeCorrelation, ModeCorrelation
		}
		p.m.keys.WithLabelValues(typ, mode).Add(float64(c))
	}
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

// request validates and enqueues one request, or answers it at once.
func (p *Party) request(r *pb.KeyRequest) *job {
	return p.requests(&pb.KeyRequests{Requests: []*pb.KeyRequest{r}}, nil, nil)[0]
}

// requestOf is request for application app's request.
func (p *Party) requestOf(app string, r *pb.KeyRequest) *job {
	return p.requestsOf(app, &pb.KeyRequests{Requests: []*pb.KeyRequest{r}}, nil, nil)[0]
}

// requests is requestsOf for the anonymous application.
func (p *Party) requests(rs *pb.KeyRequests, seen *idSet, notices chan<- *pb.KeyReply) []*job {
	return p.requestsOf("", rs, seen, notices)
}

// requestsOf validates and enqueues the requests of one message of
// application app (the unpacked ones, then the packed ones), or answers
// them at once; it
// returns their jobs in that order. The jobs share one allocation. seen
// (nil: not checked) holds the ids already accepted on the stream: a
// request reusing one is refused, and the ids accepted now join it.
// notices (nil: none) takes void notices for the stream's delivered ids.
func (p *Party) requestsOf(app string, rs *pb.KeyRequests, seen *idSet, notices chan<- *pb.KeyReply) []*job {
	most := len(rs.Requests)
	pk := rs.Packed
	if pk != nil {
		most += max(len(pk.Ids), 1) // eachPacked yields at most this many
	}
	slab := make([]job, most)
	js := make([]*job, 0, most)
	var errs []error
	next := func() *job {
		j := &slab[len(js)]
		js = append(js, j)
		return j
	}
	setErr := func(err error) {
		if errs == nil {
			errs = make([]error, most)
		}
		errs[len(js)-1] = err
	}
	refuse := func(id uint64, err error) bool {
		j := next()
		j.id = id
		setErr(err)
		return true
	}
	slow := func(r *pb.KeyRequest, id uint64, err error) bool {
		if err != nil {
			return refuse(id, err)
		}
		j := next()
		if err := j.init(r); err != nil {
			*j = job{}
			if r != nil {
				j.id = r.Id
			}
			setErr(fmt.Errorf("request %d: %w", j.id, err))
		}
		return true
	}
	for _, r := range rs.Requests {
		slow(r, r.GetId(), nil)
	}
	if pk != nil {
		if simplePacked(pk) {
			var r pb.KeyRequest
			for i := range pk.Ids {
				if j := next(); !j.initPacked(pk, i) {
					// Anything unusual is checked the long way, for the
					// same reply as an unpacked request would get.
					js = js[:len(js)-1]
					*j = job{}
					err := packedRequest(pk, i, &r)
					slow(&r, pk.Ids[i], err)
				}
			}
		} else {
			eachPacked(pk, slow)
		}
	}
	if errs != nil {
		errs = errs[:len(js)]
	}
	if seen != nil {
		for i, j := range js {
			if (errs == nil || errs[i] == nil) && seen.has(j.id) {
				if errs == nil {
					errs = make([]error, len(js))
				}
				errs[i] = fmt.Errorf("%w: request %d: this id was already used on this stream (ids are unique for the life of a stream)", errDupID, j.id)
			}
		}
	}
	for _, j := range js {
		j.notice, j.app = notices, app
	}
	p.admit(js, errs)
	if seen != nil {
		for i, j := range js {
			if (errs == nil || errs[i] == nil) && !j.refused {
				seen.add(j.id)
			}
		}
	}
	return js
}

// Keys answers a stream of requests in order. Replies to consecutive
// requests that are ready together share one message; packed (one buffer
// for all their keys) when the client asked for packed_replies.
func (p *Party) Keys(stream pb.KeySource_KeysServer) error {
	ctx := stream.Context()
	app := appOf(ctx) // the stream's requests are this application's
	order := make(chan *job, streamOrder)
	// held bounds the keys of this stream that are admitted but not yet
	// sent (MaxStreamKeys). When it is full, reading stops and gRPC's flow
	// control pushes back on the application.
	held := newWindow(p.cfg.MaxStreamKeys)
	errc := make(chan error, 1)
	stashed := make(chan *job, 1) // the job the reply loop held when it ended
	var packed, stride atomic.Bool
	var seen idSet // the ids accepted on this stream
	// notices: void notices for ids this stream got keys for (recover.go).
	notices := make(chan *pb.KeyReply, 64)
	go func() {
		defer close(order)
		for {
			rs, err := stream.Recv()
			if err != nil {
				return
			}
			if rs.PackedReplies {
				packed.Store(true)
			}
			if rs.StrideReplies {
				stride.Store(true)
			}
			js := p.requestsOf(app, rs, &seen, notices)
			for k, j := range js {
				if held.acquire(ctx, j.keys()) == nil {
					select {
					case order <- j:
						continue
					case <-ctx.Done():
					}
				}
				// The stream is gone.
				if p.cfg.Party == 1 {
					// Admitted but never to be answered on this stream.
					ids := make([]uint64, 0, len(js)-k)
					for _, j := range js[k:] {
						ids = append(ids, j.id)
					}
					p.pend.fail(app, ids, ErrClassUnavailable, "application stream closed")
				}
				return
			}
		}
	}()
	go func() {
		var out pb.KeyReplies
		// The packed buffers outlive the stream (a stream often carries a
		// few batches): they grow once per process, not once per stream.
		rb := packedPool.Get().(*replyBuf)
		pk := rb.pk
		defer func() { rb.reset(); packedPool.Put(rb) }()
		replies, keys := 0, 0
		// inMsg are the jobs in the message being built: once it is sent
		// (or failed to send), their key bytes are wiped and their keys
		// leave the stream's window.
		var inMsg []*job
		send := func() error {
			if replies == 0 {
				return nil
			}
			out.Packed = nil
			lent := false
			if len(pk.Ids) > 0 {
				rb.finish(stride.Load())
				out.Packed = pk
				if rb.aliased {
					// The keys are one stretch of a slab: the codec sends
					// them as they are and wipes them once gRPC has
					// written them (kordpb.LendKeys).
					keys := pk.Keys
					// The jobs' references to the pooled socket
					// buffers their keys are in go with the loan.
					var refs []slabRef
					for _, j := range inMsg {
						if r, ok := j.takeRef(j.keyViews()); ok {
							refs = append(refs, r)
						}
					}
					pb.LendKeys(pk, func() {
						socket.WipeKeys(keys)
						for _, r := range refs {
							r.release()
						}
					})
					lent = true
				}
			}
			err := stream.Send(&out)
			if lent {
				if done := pb.Unlend(pk); done != nil {
					done() // never encoded: wiped here
				}
			}
			clear(out.Replies)
			out.Replies = out.Replies[:0]
			rb.reset()
			n := 0
			for _, j := range inMsg {
				n += j.keys()
				j.wipeOutputs(lent)
			}
			clear(inMsg)
			inMsg = inMsg[:0]
			held.release(n)
			replies, keys = 0, 0
			return err
		}
		add := func(j *job) error {
			// One message carries replies of one form: a reply of the
			// other form sends what is built first.
			asPacked := j.reply == nil && packed.Load() && j.corr == nil && !j.vecShares() // correlations: KeyShare.corr; drawn vectors: KeyShare.beta_shares
			if asPacked && len(out.Replies) > 0 || !asPacked && len(pk.Ids) > 0 {
				if err := send(); err != nil {
					j.wipeOutputs(false)
					return err
				}
			}
			if asPacked {
				rb.add(j)
			} else {
				out.Replies = append(out.Replies, j.pbReply())
			}
			inMsg = append(inMsg, j)
			replies++
			keys += j.nOut()
			return nil
		}
		// next is a job taken from order that was not answered yet: the
		// message goes out with the replies that are ready, without waiting
		// for it (replies of one batch go out as soon as it is delivered).
		var next *job
		defer func() { stashed <- next }()
		for {
			j := next
			next = nil
			if j == nil {
				var ok bool
				select {
				case j, ok = <-order:
				case n := <-notices:
					// A void notice for an id this stream got keys for.
					if err := stream.Send(&pb.KeyReplies{Replies: []*pb.KeyReply{n}}); err != nil {
						errc <- err
						return
					}
					continue
				}
				if !ok {
					break
				}
			}
			if err := j.wait(ctx); err != nil {
				next = j
				errc <- err
				return
			}
			if err := add(j); err != nil {
				errc <- err
				return
			}
		more:
			for replies < 1024 && keys < 16384 {
				select {
				case j2, ok := <-order:
					if !ok {
						break more
					}
					if !j2.answered() || keys >= minLentKeys && rb.breaks(j2) {
						// Not ready; or its keys are not the next ones of the
						// slab the message's keys are a stretch of, which
						// adding it would copy out of the slab (and out of
						// the codec's no-copy path): it opens the next
						// message instead.
						next = j2
						break more
					}
					if err := add(j2); err != nil {
						errc <- err
						return
					}
				default:
					break more
				}
			}
			if err := send(); err != nil {
				errc <- err
				return
			}
		}
		errc <- nil
	}()
	err := <-errc
	left := <-stashed
	if ctx.Err() != nil && p.cfg.Party == 1 {
		// The application went away: drop its unclaimed requests.
		var ids []uint64
		if left != nil {
			ids = append(ids, left.id)
		}
		for j := range order {
			ids = append(ids, j.id)
		}
		p.pend.fail(app, ids, ErrClassUnavailable, "application stream closed")
	}
	return err
}

var packedPool = sync.Pool{New: func() any { return newReplyBuf() }}

// Get answers one request.
func (p *Party) Get(ctx context.Context, r *pb.KeyRequest) (*pb.KeyReply, error) {
	j := p.requestOf(appOf(ctx), r)
	if err := j.wait(ctx); err != nil {
		if p.cfg.Party == 1 {
			p.pend.fail(j.app, []uint64{j.id}, ErrClassUnavailable, "request cancelled")
		}
		return nil, status.FromContextError(err).Err()
	}
	if j.code != codes.OK {
		// Refused before it was queued: a full party or a duplicate id.
		return nil, status.Error(j.code, j.reply.Error)
	}
	return j.pbReply(), nil
}

// Status reports the party and its module.
func (p *Party) Status(ctx context.Context, _ *pb.StatusRequest) (*pb.StatusReply, error) {
	s := &pb.StatusReply{Party: uint32(p.cfg.Party), PeerConnected: p.peerUp.Load(), KeysDelivered: p.keysDelivered.Load(),
		Batches: p.batches.Load(), Resyncs: p.resyncs.Load(), FrameBytesSent: p.frameBytes.Load(), Rounds: p.rounds.Load(),
		InFlight: p.inFlight.Load(), Session: p.sessions.Load(), PackedRequests: true}
	if p.cfg.Party == 0 {
		s.Pending = uint64(p.q.size())
	} else {
		s.Pending = uint64(p.pend.size())
	}
	res, err := p.mod.Do(ctx, []socket.Call{{Poll: true}}, false)
	if err == nil && res[0].Err == nil {
		s.Module = socket.PollToPB(res[0].Poll, res[0].Locked)
		s.Paired = res[0].Poll.Paired
		p.setNext(res[0].Poll.NextCounter, false)
		p.m.floor.Set(float64(res[0].Poll.PeerFloor))
	}
	return s, nil
}

// Pair runs the one-time pairing (party 0), relaying through the peer.
func (p *Party) Pair(ctx context.Context, _ *pb.PairRequest) (*pb.PairReply, error) {
	if p.cfg.Party != 0 {
		return nil, status.Error(codes.FailedPrecondition, "pairing is driven by party 0")
	}
	if err := p.PairModules(ctx); err != nil {
		return nil, status.Error(codes.Aborted, err.Error())
	}
	return &pb.PairReply{Paired: true}, nil
}

// PairModules relays the pairing messages between the two modules.
func (p *Party) PairModules(ctx context.Context) error {
	r, err := p.mod.Provision(ctx, &msg.ProvisionRequest{})
	if err != nil {
		return fmt.Errorf("pairing: own module: %w", err)
	}
	var paired [2]bool
	m := r.Message
	for i := 0; i < 4 && len(m) > 0; i++ {
		if i%2 == 0 {
			pm, err := p.peer.Pair(ctx, &pb.PairMessage{Message: m})
			if err != nil {
				return fmt.Errorf("pairing: peer: %w", err)
			}
			m, paired[1] = pm.Message, paired[1] || pm.Paired
		} else {
			r, err := p.mod.Provision(ctx, &msg.ProvisionRequest{Message: m})
			if err != nil {
				return fmt.Errorf("pairing: own module: %w", err)
			}
			m, paired[0] = r.Message, paired[0] || r.Paired
		}
	}
	if !paired[0] || !paired[1] {
		return errors.New("pairing did not complete")
	}
	p.log.Info("modules paired")
	return nil
}

// Pair (peer link, party 1) hands one pairing message to the module.
func (p *Party) peerPair(ctx context.Context, m *pb.PairMessage) (*pb.PairMessage, error) {
	r, err := p.mod.Provision(ctx, &msg.ProvisionRequest{Message: m.GetMessage()})
	if err != nil {
		return nil, status.Error(codes.InvalidArgument, err.Error())
	}
	return &pb.PairMessage{Message: r.Message, Paired: r.Paired}, nil
}

// PeerServer is party 1's PeerLink service.
type PeerServer struct {
	pb.UnimplementedPeerLinkServer
	p *Party
}

// Peer returns the PeerLink service of party 1.
func (p *Party) Peer() *PeerServer { return &PeerServer{p: p} }

// Pair relays a pairing message to the module.
func (s *PeerServer) Pair(ctx context.Context, m *pb.PairMessage) (*pb.PairMessage, error) {
	return s.p.peerPair(ctx, m)
}

// Session serves party 0's key stream.
func (s *PeerServer) Session(stream pb.PeerLink_SessionServer) error { return s.p.serveSession(stream) }
