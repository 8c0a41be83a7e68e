// Package client is the Go client of a kord party's application API
// (KeySource, proto/kord/v1/service.proto). An application at each site
// talks to its own party: it streams requests carrying its own additive
// shares and gets back its own key shares, in order.
//
// Matching: both sites' applications send, for each key they want, a
// request with the same id and the same mode, tier, type and widths. Party
// 0 decides the order in which requests are served (its arrival order);
// party 1 serves its requests in that order by id. Ids must be unique
// among a site's requests in flight, and on one stream for its life. A
// request with no partner at the other site fails unmatched on its own
// after --match-timeout; it holds up no other request.
//
// Crashes: when a stream breaks because a party went away, open a new
// stream and resend every request it has no answer for, unchanged (same
// id, shape and shares): the restarted party completes the pairs its
// module generated before the crash, and answers the others spent or void
// at both sites (docs/api.md, "Recovery after a party restart"). void
// means the pair cannot be completed: any share of that id delivered at
// the other site must be discarded too, and that site's stream gets a
// second reply for the id, class void (a Reply whose ID was answered
// before: discard the key share it carried).
//
// Failures and α: a refusal (ReplyError) says whether the same α may be
// used again (ReplyError.AlphaReusable). Once a module has opened the
// peer's frame for a request, the outcome (delivery or refusal) may depend
// on α — on the keystream tier an attacker on the link can make it reveal
// one bit —, so such a request is never retried by the parties and fails
// tampered or spent: the application must draw a fresh α, not re-share the
// old one. Bound and consume requests with an empty tier get batchmac
// (authenticated); otp, the keystream tier, is an explicit opt-in for
// semi-honest hosts and network only.
//
// Several module pairs: a Pool is one site's client of K independent
// pairs; site 0's pool chooses the pair of each request and the id carries
// the choice to site 1's (pool.go, docs/scaling.md).
//
// Receiving in bulk: Stream.RecvBatch hands out the replies of a received
// message as a Batch of fss.KeyViews over the received buffer (no Key
// parsed and nothing allocated per key); Release wipes its memory and
// returns it to the stream for a later message. Recv, which parses each
// key into an fss.Key of its own, is a convenience over it.
package client

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/backoff"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/experimental"

	"github.com/kord-fss/kord/fss"
	"github.com/kord-fss/kord/internal/fdpass"
	"github.com/kord-fss/kord/module/msg"
	"github.com/kord-fss/kord/module/socket"
	pb "github.com/kord-fss/kord/proto/kordpb"
)

// Client is a connection to one party.
type Client struct {
	conn *grpc.ClientConn
	api  pb.KeySourceClient
	// packedReq: 0 unknown, 1 the party reads packed requests, 2 it does not.
	packedReq atomic.Int32
	// fds holds the memfds the party passed on this client's Unix
	// connections (slab hand-off); nil when the party is not on a Unix
	// socket or fds cannot be passed here.
	fds *fdpass.Inbox
}

// Dial connects to a party's application address ("host:port" or
// "unix:///path"); creds nil means plaintext. On a Unix socket (Linux)
// its streams ask for slab_fds: the party may then pass a message's keys
// as the sealed memfd its module wrote them into, which the stream reads
// in one copy (docs/api.md, "Slabs handed on as memfds").
func Dial(addr string, creds credentials.TransportCredentials) (*Client, error) {
	if creds == nil {
		creds = insecure.NewCredentials()
	}
	var opts []grpc.DialOption
	var fds *fdpass.Inbox
	if path, ok := strings.CutPrefix(addr, "unix://"); ok && fdpass.Supported && socket.SlabFDSupported && path != "" {
		// A same-host party may hand this client a message's keys as the
		// sealed memfd its module wrote them into (slab_fds): the fds
		// come beside the bytes on the connection, read with recvmsg.
		fds = fdpass.NewInbox()
		opts = append(opts, grpc.WithContextDialer(func(ctx context.Context, a string) (net.Conn, error) {
			// gRPC hands a dialer of a unix:// target the target itself.
			if p, ok := strings.CutPrefix(a, "unix://"); ok {
				a = p
			} else {
				a = strings.TrimPrefix(a, "unix:")
			}
			var d net.Dialer
			c, err := d.DialContext(ctx, "unix", a)
			if err != nil {
				return nil, err
			}
			return fdpass.Client(c, fds), nil
		}))
	}
	// Key replies stream in bulk: a 1 MiB flow-control window keeps the
	// party from waiting for window updates. No read buffer: gRPC then
	// reads each HTTP/2 frame straight from the socket into a frame buffer
	// of kordpb.BufferPool (wiped when freed) instead of through a 256 KiB
	// buffer of its own that it never wipes: one user-space copy of every
	// key byte fewer, at no measurable CPU cost (BENCHMARKS.md, "Bulk
	// transport").
	opts = append(opts, grpc.WithTransportCredentials(creds),
		grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(256<<20), grpc.ForceCodecV2(pb.Codec())),
		grpc.WithInitialWindowSize(1<<20), grpc.WithInitialConnWindowSize(1<<20),
		grpc.WithWriteBufferSize(256<<10), grpc.WithReadBufferSize(0),
		// The frames a reply's keys arrive in are wiped as soon as gRPC
		// frees them (kordpb.BufferPool), not when next handed out.
		experimental.WithBufferPool(pb.BufferPool()),
		// A restarted party is dialled again within tens of milliseconds
		// (gRPC's default waits a second first), so that an application
		// can resend its unanswered requests at once.
		grpc.WithConnectParams(grpc.ConnectParams{MinConnectTimeout: 5 * time.Second,
			Backoff: backoff.Config{BaseDelay: 25 * time.Millisecond, Multiplier: 1.6, Jitter: 0.2, MaxDelay: time.Second}}))
	conn, err := grpc.NewClient(addr, opts...)
	if err != nil {
		return nil, err
	}
	return &Client{conn: conn, api: pb.NewKeySourceClient(conn), fds: fds}, nil
}

// Close closes the connection.
func (c *Client) Close() error {
	err := c.conn.Close()
	if c.fds != nil {
		c.fds.Close()
	}
	return err
}

// Bound builds a bound-mode request: this site's additive shares of α
// (mod 2^ℓ) and β (mod 2^n). tier is msg.Keystream ("otp" on the wire),
// msg.MAC or msg.BatchMAC; 0 lets the party choose its default, batchmac
// (otp is for semi-honest hosts and network only).
func Bound(id uint64, tier msg.Tier, p fss.Params, alphaShare, betaShare uint64) *pb.KeyRequest {
	return &pb.KeyRequest{Id: id, Mode: msg.Bound.String(), Tier: tierName(tier), Type: p.Type.String(), InBits: uint32(p.InBits), OutBits: uint32(p.OutBits),
		AlphaShare: alphaShare, BetaShare: betaShare}
}

// BoundBulk builds one bound-mode request for len(alphaShares) keys of
// one shape and tier: this site's additive shares of each key's α (mod
// 2^ℓ) and β (mod 2^n), betaShares[i] with alphaShares[i]. The parties
// take it as one request (one id, one answer of that many keys, in
// order; it fails whole), which costs them far less per key than as many
// single requests. At most service.MaxCount keys; the other site asks
// for the same count under the same id.
func BoundBulk(id uint64, tier msg.Tier, p fss.Params, alphaShares, betaShares []uint64) *pb.KeyRequest {
	return &pb.KeyRequest{Id: id, Mode: msg.Bound.String(), Tier: tierName(tier), Type: p.Type.String(), InBits: uint32(p.InBits), OutBits: uint32(p.OutBits),
		Count: uint32(len(alphaShares)), AlphaShares: alphaShares, BetaShares: betaShares}
}

// tierName is a tier's name on the wire: "" for 0 (the party's default
// tier, batchmac), else its external name (msg.Keystream is "otp").
func tierName(t msg.Tier) string {
	if t == 0 {
		return ""
	}
	return t.String()
}

// Derived builds a request for count keys with α drawn inside the modules
// (β too when deriveBeta; otherwise β is the public beta).
func Derived(id uint64, p fss.Params, count int, beta uint64, deriveBeta bool) *pb.KeyRequest {
	return &pb.KeyRequest{Id: id, Mode: msg.Derived.String(), Type: p.Type.String(), InBits: uint32(p.InBits), OutBits: uint32(p.OutBits),
		Count: uint32(count), Beta: beta, DeriveBeta: deriveBeta}
}

// WithProfile sets r's key profile and returns r: msg.KordV1 (the
// default) or msg.Llama, whose keys are EzPC LLAMA's DCF in LLAMA's own
// layout (type dcf only). A llama key share comes back as Share.Raw (Get,
// Recv) or Batch.Raw, never as a parsed kord-v1 key.
func WithProfile(r *pb.KeyRequest, pr msg.Profile) *pb.KeyRequest {
	r.Profile = ""
	if pr != msg.KordV1 {
		r.Profile = pr.String()
	}
	return r
}

// BoundVector builds a bound-mode request for a llama DCF whose payload
// is a vector (LLAMA's groupSize, 2..msg.MaxGroup elements): this site's
// additive share of α and of each payload element (betaShares, one per
// element, each mod 2^n). The profile is set to llama.
func BoundVector(id uint64, tier msg.Tier, p fss.Params, alphaShare uint64, betaShares []uint64) *pb.KeyRequest {
	r := WithProfile(Bound(id, tier, p, alphaShare, 0), msg.Llama)
	r.Group, r.BetaShares = uint32(len(betaShares)), betaShares
	return r
}

// DerivedVector builds a request for count llama DCF keys with α drawn
// inside the modules and the public payload vector betas (2..msg.MaxGroup
// elements; both sites send the same). The profile is set to llama. A
// reply carries each key's α share; β, public, has no share in it.
func DerivedVector(id uint64, p fss.Params, count int, betas []uint64) *pb.KeyRequest {
	r := WithProfile(Derived(id, p, count, 0, false), msg.Llama)
	r.Group, r.Betas = uint32(len(betas)), betas
	return r
}

// DerivedDrawnVector builds a request for count llama DCF keys whose α
// and every element of a payload vector of group elements (2..msg.MaxGroup)
// are drawn inside the modules. A reply carries each key's α share and,
// in Share.BetaShares (Batch.BetaShares), its share of each element.
func DerivedDrawnVector(id uint64, p fss.Params, count, group int) *pb.KeyRequest {
	r := WithProfile(Derived(id, p, count, 0, true), msg.Llama)
	r.Group = uint32(group)
	return r
}

// rawProfile reports whether r asks for a profile whose keys are not
// kord-v1 keys (handed out as bytes, unparsed).
func rawProfile(r *pb.KeyRequest) bool {
	pr, err := msg.ParseProfile(strings.ToLower(r.Profile))
	return err == nil && pr != msg.KordV1 // an unknown name is refused by the party
}

// Correlation builds a request for one derived multiplication
// correlation of shape c (msg.SubmitCorrelation): both modules draw the
// masks and compute their product, and each site's reply carries only its
// own party's shares (Share.Corr). A weight mask (c.Part msg.CorrWeight)
// is kept by the modules for later input correlations, which name it by
// the Counter of its reply (c.WeightFrom). Both sites send the same shape
// under the same id.
func Correlation(id uint64, c msg.Correlation) *pb.KeyRequest {
	return &pb.KeyRequest{Id: id, Mode: "correlation", Corr: socket.CorrToPB(&c)}
}

// LlamaGates builds a request for EzPC LLAMA gate key packs of width bits
// (8..64): relu ReLU packs, ars arithmetic-shift packs by shift, maxpool
// pair-MaxPool packs, at most msg.MaxGatePacks in all. Both modules draw
// the masks and build the packs; each site's reply (Share.Corr) carries
// only its own party's packs (Packs, in LLAMA's layout, ReLU then ARS then
// MaxPool) and its additive shares of the input masks (R) and output
// masks (Z). Both sites send the same request under the same id.
func LlamaGates(id uint64, bits, relu, ars, shift, maxpool int) *pb.KeyRequest {
	return Correlation(id, msg.LlamaGates(bits, relu, ars, shift, maxpool))
}

// Consume builds a consume-mode request: the key stays in the module, which
// returns this site's evaluation shares at the public points.
func Consume(id uint64, tier msg.Tier, p fss.Params, alphaShare, betaShare uint64, points []uint64) *pb.KeyRequest {
	r := Bound(id, tier, p, alphaShare, betaShare)
	r.Mode, r.Points = msg.Consume.String(), points
	return r
}

// Share is this site's output for one key.
type Share struct {
	Counter               uint64
	Key                   *fss.Key // bound, derived (kord-v1)
	AlphaShare, BetaShare uint64   // derived
	// BetaShares: this site's share of each element of a drawn payload
	// vector (DerivedDrawnVector); BetaShare is then 0.
	BetaShares []uint64
	Evals      []uint64 // consume
	// Raw is the key share of a request of another profile than kord-v1
	// (WithProfile): for msg.Llama, the bytes LLAMA's serializer writes
	// for this party (fss/llama parses them). Key is then nil.
	Raw []byte
	// Corr: this party's shares of a correlation (Correlation requests);
	// the application wipes them once used (msg.CorrShares.Wipe).
	Corr *msg.CorrShares
}

// Reply answers one request.
type Reply struct {
	ID     uint64
	Shares []Share
	Err    error // *ReplyError when the party refused the request
}

// ReplyError is a refused request. Class is one of kordpb.Classes.
type ReplyError struct{ Class, Msg string }

func (e *ReplyError) Error() string { return fmt.Sprintf("kord %s: %s", e.Class, e.Msg) }

// AlphaReusable reports whether the application may ask for a key with
// the same α again after this refusal (kordpb.Classes, docs/api.md). It is
// false for tampered, spent and void (the batch ended after a module had
// opened the peer's frame for the request: the outcome may have revealed a
// bit of α) and for any class it does not know. Then the application must
// choose a fresh α — a fresh sharing of the same α is not enough, since
// host 0 knows its own share. The decision is joint: reuse α only when the
// other site's reply allows it too. A reply that never came because a
// party went away is obtained by resending the request unchanged; take
// one that never came for any other reason as spent.
func (e *ReplyError) AlphaReusable() bool { return pb.AlphaReusable(e.Class) }

// Parse converts a wire reply, parsing the keys.
func Parse(r *pb.KeyReply) *Reply { return parse(r, false) }

// parse is Parse; raw keeps the keys as bytes (Share.Raw) instead.
func parse(r *pb.KeyReply, raw bool) *Reply {
	out := &Reply{ID: r.Id}
	if r.Error != "" {
		out.Err = &ReplyError{Class: r.ErrorClass, Msg: r.Error}
		return out
	}
	out.Shares = make([]Share, len(r.Keys))
	for i, k := range r.Keys {
		s := Share{Counter: k.Counter, AlphaShare: k.AlphaShare, BetaShare: k.BetaShare, Evals: k.Evals, BetaShares: k.BetaShares}
		if len(k.Key) > 0 && raw {
			s.Raw = k.Key
		} else if len(k.Key) > 0 {
			key, err := fss.ParseKey(k.Key)
			if err != nil {
				out.Err = fmt.Errorf("client: key at counter %d: %w", k.Counter, err)
				return out
			}
			s.Key = key
		}
		if k.Corr != nil {
			c, err := socket.CorrSharesFromPB(k.Corr)
			if err != nil {
				out.Err = fmt.Errorf("client: correlation at counter %d: %w", k.Counter, err)
				return out
			}
			s.Corr = c
		}
		out.Shares[i] = s
	}
	return out
}

// Get sends one request and waits for its reply.
func (c *Client) Get(ctx context.Context, r *pb.KeyRequest) (*Reply, error) {
	rep, err := c.api.Get(ctx, r)
	if err != nil {
		return nil, err
	}
	return parse(rep, rawProfile(r)), nil
}

// Status reports the party.
func (c *Client) Status(ctx context.Context) (*pb.StatusReply, error) {
	return c.api.Status(ctx, &pb.StatusRequest{})
}

// Pair asks party 0 to pair the two modules.
func (c *Client) Pair(ctx context.Context) error {
	_, err := c.api.Pair(ctx, &pb.PairRequest{})
	return err
}

// Stream is a stream of requests answered in order. RecvBatch reads its
// replies a message at a time, in place; Recv and RecvRaw read them one
// reply at a time, over the same batches.
type Stream struct {
	s      pb.KeySource_KeysClient
	packed bool // the party reads packed requests
	// rawIDs counts the requests sent, by id, whose keys are not kord-v1
	// keys (WithProfile): their replies' keys are handed out as bytes.
	rawMu  sync.Mutex
	rawIDs map[uint64]int
	anyRaw atomic.Bool // a raw request was ever sent: kord-v1 streams skip the lock
	// cur is the batch Recv and RecvRaw are reading, from reply cur.r0.
	cur  Batch
	free chan *batchMem // released batches' memory, for the next messages
	// fds: the client's received memfds, when the stream asks the party
	// for slab_fds (a Unix connection); nil otherwise.
	fds *fdpass.Inbox
}

// Stream opens a request stream. It asks the party for packed replies
// (all keys of a message in one buffer); a party that predates them
// answers one message per reply, which the stream reads the same way.
//
// Requests go packed (KeyRequests.packed) when the party says it reads
// them (StatusReply.packed_requests, asked once per Client).
func (c *Client) Stream(ctx context.Context) (*Stream, error) {
	if c.packedReq.Load() == 0 {
		st, err := c.Status(ctx)
		if err != nil {
			return nil, err
		}
		if st.PackedRequests {
			c.packedReq.Store(1)
		} else {
			c.packedReq.Store(2)
		}
	}
	s, err := c.api.Keys(ctx)
	if err != nil {
		return nil, err
	}
	return &Stream{s: s, packed: c.packedReq.Load() == 1, free: make(chan *batchMem, freeBatches), fds: c.fds}, nil
}

// noteRaw records the requests of rs whose keys come back as bytes.
func (s *Stream) noteRaw(rs []*pb.KeyRequest) {
	for _, r := range rs {
		if rawProfile(r) {
			s.anyRaw.Store(true)
			s.rawMu.Lock()
			if s.rawIDs == nil {
				s.rawIDs = map[uint64]int{}
			}
			s.rawIDs[r.Id]++
			s.rawMu.Unlock()
		}
	}
}

// takeRaw reports whether the reply to id carries raw keys, and forgets
// one request of that id.
func (s *Stream) takeRaw(id uint64) bool {
	if !s.anyRaw.Load() {
		return false
	}
	s.rawMu.Lock()
	defer s.rawMu.Unlock()
	n, ok := s.rawIDs[id]
	if !ok {
		return false
	}
	if n <= 1 {
		delete(s.rawIDs, id)
	} else {
		s.rawIDs[id] = n - 1
	}
	return true
}

// Send sends one request.
func (s *Stream) Send(r *pb.KeyRequest) error {
	s.noteRaw([]*pb.KeyRequest{r})
	return s.s.Send(&pb.KeyRequests{Requests: []*pb.KeyRequest{r}, PackedReplies: true, StrideReplies: true, SlabFds: s.fds != nil})
}

// SendBatch sends several requests in one message.
func (s *Stream) SendBatch(rs []*pb.KeyRequest) error {
	s.noteRaw(rs)
	if s.packed {
		if pk, ok := packRequests(rs); ok {
			return s.s.Send(&pb.KeyRequests{Packed: pk, PackedReplies: true, StrideReplies: true, SlabFds: s.fds != nil})
		}
	}
	return s.s.Send(&pb.KeyRequests{Requests: rs, PackedReplies: true, StrideReplies: true, SlabFds: s.fds != nil})
}

// packRequests packs rs (PackedRequests); ok is false when one does not
// fit the packed form (an unknown mode, tier or type, a width over 255),
// which then goes as it is, for the party to answer with its error.
func packRequests(rs []*pb.KeyRequest) (*pb.PackedRequests, bool) {
	n := len(rs)
	pk := &pb.PackedRequests{Ids: make([]uint64, n), Shapes: make([]byte, 0, 6*n), AlphaShares: make([]uint64, n),
		BetaShares: make([]uint64, n), Counts: make([]uint32, n), Betas: make([]uint64, n)}
	for i, r := range rs {
		mode, err := msg.ParseMode(r.Mode)
		if err != nil || r.InBits > 255 || r.OutBits > 255 || r.Group != 0 || len(r.Betas) != 0 || len(r.BetaShares) != 0 || len(r.AlphaShares) != 0 {
			return nil, false // a payload vector or a bound bulk has no packed form: it goes as it is
		}
		var tier msg.Tier
		if r.Tier != "" {
			if tier, err = msg.ParseTier(r.Tier); err != nil {
				return nil, false
			}
		}
		typ, err := fss.ParseType(r.Type)
		if err != nil {
			return nil, false
		}
		prof, err := msg.ParseProfile(strings.ToLower(r.Profile))
		if err != nil {
			return nil, false
		}
		var db byte
		if r.DeriveBeta {
			db = 1
		}
		pk.Ids[i], pk.AlphaShares[i], pk.BetaShares[i], pk.Counts[i], pk.Betas[i] = r.Id, r.AlphaShare, r.BetaShare, r.Count, r.Beta
		pk.Shapes = append(pk.Shapes, byte(mode), byte(tier), msg.TypeByte(prof, typ), byte(r.InBits), byte(r.OutBits), db)
		if len(r.Points) > 0 {
			if pk.PointLens == nil {
				pk.PointLens = make([]uint32, n)
			}
			pk.PointLens[i] = uint32(len(r.Points))
			pk.Points = append(pk.Points, r.Points...)
		}
	}
	return pk, true
}

// CloseSend says no more requests follow.
func (s *Stream) CloseSend() error { return s.s.CloseSend() }

// Recv returns the next reply, in request order, its keys parsed (copies
// of their own: nothing of it refers to the stream's memory). It is a
// convenience over RecvBatch, which spares the per-key allocations.
func (s *Stream) Recv() (*Reply, error) {
	m, rep, err := s.next()
	if err != nil {
		return nil, err
	}
	out := &Reply{ID: rep.ID, Err: rep.Err}
	if rep.Err == nil {
		out.Shares = make([]Share, rep.N)
		var evals []uint64
		for i := range out.Shares {
			k := rep.First + i
			sh := &out.Shares[i]
			sh.Counter = m.counters[k]
			if k < len(m.alphas) {
				sh.AlphaShare, sh.BetaShare = m.alphas[k], m.betas[k]
			}
			if k < len(m.evals) && len(m.evals[k]) > 0 {
				if evals == nil {
					evals = make([]uint64, 0, evalCount(m.evals[rep.First:rep.First+rep.N]))
				}
				lo := len(evals)
				evals = append(evals, m.evals[k]...)
				sh.Evals = evals[lo:len(evals):len(evals)]
			}
			if k < len(m.corrs) && m.corrs[k] != nil {
				c := *m.corrs[k]
				c.A, c.R, c.Z, c.Packs = slices.Clone(c.A), slices.Clone(c.R), slices.Clone(c.Z), slices.Clone(c.Packs)
				sh.Corr = &c
			}
			if k < len(m.bvecs) && m.bvecs[k] != nil {
				sh.BetaShares = slices.Clone(m.bvecs[k])
			}
			if k < len(m.raws) && m.raws[k] != nil {
				sh.Raw = append([]byte(nil), m.raws[k]...)
			} else if v := m.views[k]; !v.IsZero() {
				key, err := v.Key()
				if err != nil { // the views were checked as the batch was read
					out.Err, out.Shares = fmt.Errorf("client: key at counter %d: %w", sh.Counter, err), nil
					break
				}
				sh.Key = key
			}
		}
	}
	s.done(rep)
	return out, nil
}

// evalCount is the number of evaluation shares in es.
func evalCount(es [][]uint64) int {
	n := 0
	for _, e := range es {
		n += len(e)
	}
	return n
}

// RecvRaw returns the next wire reply without parsing the keys. Its key
// shares and evaluation shares are slices of the received message, which
// the stream then leaves to the garbage collector instead of wiping and
// reusing it.
func (s *Stream) RecvRaw() (*pb.KeyReply, error) {
	m, rep, err := s.next()
	if err != nil {
		return nil, err
	}
	m.raw = true
	msg := m.msg.M
	own := m.msg.OwnKeys() // keys read from a memfd, which wipe wipes even so: copied out
	var out *pb.KeyReply
	if pk := msg.GetPacked(); pk != nil && len(pk.Ids) > 0 {
		out = &pb.KeyReply{Id: rep.ID, Keys: make([]*pb.KeyShare, rep.N)}
		shares := make([]pb.KeyShare, rep.N)
		for i := range shares {
			k := rep.First + i
			sh := &shares[i]
			sh.Counter = m.counters[k]
			if k < len(m.alphas) {
				sh.AlphaShare, sh.BetaShare = m.alphas[k], m.betas[k]
			}
			if l := keyLen(pk, k); l > 0 {
				sh.Key = pk.Keys[m.koff[k] : m.koff[k]+l : m.koff[k]+l]
				if own {
					sh.Key = bytes.Clone(sh.Key)
				}
			}
			if k < len(m.evals) {
				sh.Evals = m.evals[k]
			}
			out.Keys[i] = sh
		}
	} else {
		out = msg.Replies[s.cur.r0]
	}
	s.done(rep)
	return out, nil
}

// next returns the reply Recv or RecvRaw reads next, reading a message
// when the current batch is used up.
func (s *Stream) next() (*batchMem, BatchReply, error) {
	if s.cur.Replies() == 0 {
		b, err := s.RecvBatch()
		if err != nil {
			return nil, BatchReply{}, err
		}
		s.cur = b
	}
	rep := s.cur.m.reps[s.cur.r0]
	return s.cur.m, rep, nil
}

// done moves past rep, the reply next returned, and releases the batch
// after its last reply.
func (s *Stream) done(rep BatchReply) {
	s.cur.r0++
	s.cur.k0 = rep.First + rep.N
	if s.cur.Replies() == 0 {
		s.cur.Release()
		s.cur = Batch{}
	}
}

// checkPacked checks that a packed message's lists agree: keys at
// key_lens, or at key_stride (key_lens then empty).
func checkPacked(pk *pb.PackedReplies) error {
	bad := func(what string) error { return fmt.Errorf("client: malformed packed replies: %s", what) }
	if len(pk.Counts) != len(pk.Ids) {
		return bad("counts")
	}
	n := 0
	for _, c := range pk.Counts {
		if int(c) > maxPackedKeys-n {
			return bad("counts")
		}
		n += int(c)
	}
	if len(pk.Counters) != n {
		return bad("counters")
	}
	if pk.KeyStride != 0 {
		if len(pk.KeyLens) != 0 {
			return bad("key_lens with key_stride")
		}
		if uint64(pk.KeyStride)*uint64(n) != uint64(len(pk.Keys)) {
			return bad("keys do not match key_stride")
		}
	} else if len(pk.KeyLens) != n {
		return bad("key_lens")
	}
	if len(pk.AlphaShares) != len(pk.BetaShares) || len(pk.AlphaShares) != 0 && len(pk.AlphaShares) != n {
		return bad("alpha/beta shares")
	}
	if len(pk.EvalLens) != 0 && len(pk.EvalLens) != n {
		return bad("eval_lens")
	}
	kb, eb := uint64(0), uint64(0)
	for i := 0; i < n; i++ {
		if pk.KeyStride == 0 {
			kb += uint64(pk.KeyLens[i])
		}
		if len(pk.EvalLens) > 0 {
			eb += uint64(pk.EvalLens[i])
		}
	}
	if pk.KeyStride != 0 {
		kb = uint64(len(pk.Keys))
	}
	if kb != uint64(len(pk.Keys)) || eb != uint64(len(pk.Evals)) {
		return bad("keys or evals do not match their lengths")
	}
	return nil
}

// maxPackedKeys bounds the keys of one packed message the client indexes.
const maxPackedKeys = 1 << 26

// keyLen is the size of key i of a checked packed message.
func keyLen(pk *pb.PackedReplies, i int) int {
	if pk.KeyStride != 0 {
		return int(pk.KeyStride)
	}
	return int(pk.KeyLens[i])
}
