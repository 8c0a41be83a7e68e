package service

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sync"

	"github.com/kord-fss/kord/fss"
	"github.com/kord-fss/kord/internal/prg"
	"github.com/kord-fss/kord/module/msg"
	"github.com/kord-fss/kord/module/socket"
	pb "github.com/kord-fss/kord/proto/kordpb"
)

// LocalPair is the two parties of one deployment in one process: party
// 0's peer sessions run over an in-process link to party 1 (memLink), so
// the session protocol — batches, frames, transcript, pair digests,
// confirmations, abandon, resync, spent and unmatched classes — is the
// daemons' own (leader and follower), without gRPC or a socket. An
// application in the same process asks each party with Request, which
// takes the application API's validation, admission and batching.
type LocalPair struct {
	Parties [2]*Party

	ctx    context.Context // ends at Close
	cancel context.CancelFunc
	wg     sync.WaitGroup // Run of both parties and party 1's sessions
}

// LocalLink is how a LocalPair's peer sessions cross between its
// parties: in memory (the zero value), or over a connection pair.
type LocalLink struct {
	// Conns, if set, returns a fresh connection pair for each session
	// (a is party 0's end): e.g. a shaped TCP pair (internal/netshape),
	// so that the sessions pay a network's delay and bandwidth.
	Conns func() (a, b net.Conn, err error)
	// Tap (fault tests; nil: none) is called on every message party 0
	// sends, before it crosses, and may alter it as an attacker on the
	// link could.
	Tap func(*pb.PeerMsg)
	// Tap1 is Tap for the messages party 1 sends (in-process link only).
	Tap1 func(*pb.PeerMsg)
}

// NewLocalPair starts the two parties of a deployment in process:
// mods[b] is party b's module, already paired with the other (their
// witness exchange happens at the first session). c holds the settings of
// both (Party, Module and the peer-link fields are set here); link says
// how their sessions cross. Close stops them.
func NewLocalPair(mods [2]socket.Module, c Config, link LocalLink) (*LocalPair, error) {
	lp := &LocalPair{}
	for b := range 2 {
		cb := c
		cb.Party, cb.Module, cb.inProcess = b, mods[b], true
		p, err := New(cb)
		if err != nil {
			return nil, err
		}
		lp.Parties[b] = p
	}
	lp.ctx, lp.cancel = context.WithCancel(context.Background())
	p0, p1 := lp.Parties[0], lp.Parties[1]
	p0.local = func(ctx context.Context) (peerLink, error) {
		a, b, err := link.open(ctx)
		if err != nil {
			return nil, err
		}
		lp.wg.Add(1)
		go func() {
			defer lp.wg.Done()
			if err := p1.follow(ctx, b); err != nil && ctx.Err() == nil {
				p1.log.Debug("in-process peer session ended", "err", err)
			}
			b.close() // as a stream whose server returned: party 0 reads what was sent, then the end
		}()
		return a, nil
	}
	for _, p := range lp.Parties {
		lp.wg.Add(1)
		go func() {
			defer lp.wg.Done()
			p.Run(lp.ctx)
		}()
	}
	return lp, nil
}

// localEnd is one end of a LocalPair's peer link.
type localEnd interface {
	peerLink
	close()
}

// open returns the two ends of one session's link.
func (o LocalLink) open(ctx context.Context) (localEnd, localEnd, error) {
	if o.Conns == nil {
		a, b := memLinks(ctx)
		a.tap, b.tap = o.Tap, o.Tap1
		return a, b, nil
	}
	ca, cb, err := o.Conns()
	if err != nil {
		return nil, nil, fmt.Errorf("service: local peer link: %w", err)
	}
	a, b := &connLink{c: ca, tap: o.Tap}, &connLink{c: cb}
	// A connection does not end with the session's context by itself.
	context.AfterFunc(ctx, func() { a.close(); b.close() })
	return a, b, nil
}

// Close stops both parties and waits for their sessions to end. Requests
// not answered by then fail (unavailable).
func (lp *LocalPair) Close() {
	lp.cancel()
	lp.wg.Wait()
	for _, p := range lp.Parties {
		p.q.mu.Lock()
		queued := p.q.removeLocked(func(*job) bool { return true })
		p.q.mu.Unlock()
		for _, j := range queued {
			j.fail(ErrClassUnavailable, "the party stopped")
		}
		p.pend.mu.Lock()
		for id, j := range p.pend.jobs {
			delete(p.pend.jobs, id)
			j.fail(ErrClassUnavailable, "the party stopped")
		}
		p.pend.mu.Unlock()
		// Party 1's batches answered and never confirmed: not delivered.
		p.heldMu.Lock()
		held := p.held
		p.held = nil
		p.heldMu.Unlock()
		for _, h := range held {
			wipeJobReplies(h.jobs, h.replies)
			p.back(h.jobs, ErrClassSpent, "the party stopped before party 0 confirmed the batch")
			for _, j := range h.jobs {
				if !j.answered() {
					j.fail(ErrClassUnavailable, "the party stopped")
				}
			}
		}
	}
}

// Answer is the answer to one request of Request.
type Answer struct {
	ID uint64
	// Outputs is one output per key (nil when the request failed): the
	// key share, or the evaluation shares in consume mode, with this
	// party's mask shares in derived mode and the pair tag. The Answer
	// holds the only copy; Wipe clears it.
	Outputs []msg.CollectResponse
	// ErrorClass and Error say why the request failed (empty: answered);
	// the classes are the application API's (docs/api.md), e.g. spent,
	// tampered, unmatched, bad_request.
	ErrorClass, Error string

	j *job
}

// Wipe clears the answer's outputs.
func (a *Answer) Wipe() {
	if a.j != nil {
		a.j.wipeOutputs(false)
		a.j = nil
	}
	a.Outputs = nil
}

// TakeSlab hands over the slab the answers' keys are views of, when
// they are exactly one whole slab that the party owns (a bulk collect of
// an in-process module: not a socket buffer), in order: the first
// answer's keys start the slab and the last one's end it, with no error
// and no other key among them. The caller then owns the slab (its keys,
// pair tags and, in derived mode, this party's mask shares, which are
// moved back into it from the outputs): it wipes it (Slab.Wipe, or the
// module's Recycle). The answers are emptied (their Wipe does nothing
// more). ok false: nothing changed, the answers keep their outputs.
func TakeSlab(ans []Answer) (_ *msg.Slab, ok bool) {
	if len(ans) == 0 || ans[0].j == nil || ans[0].j.slab == nil {
		return nil, false
	}
	s := ans[0].j.slab
	off, n := 0, 0
	for i := range ans {
		j := ans[i].j
		if j == nil || ans[i].ErrorClass != "" || j.slab != s || j.keyRef != nil || j.keyOff != off || len(j.outs) == 0 ||
			len(ans[i].Outputs) != len(j.outs) {
			return nil, false
		}
		for k := range j.outs {
			if len(j.outs[k].Key) != s.Stride {
				return nil, false
			}
		}
		off += len(j.outs) * s.Stride
		n += len(j.outs)
	}
	if n != s.N || off != len(s.Keys) {
		return nil, false
	}
	// The mask shares went to the outputs (appendSlab cleared the
	// slab's): back into the slab, one per key, or a payload vector's
	// per element.
	g := max(s.Group, 1)
	alphas := len(s.AlphaShares) == s.N
	betas := len(s.BetaShares) == s.N*g
	i := 0
	for a := range ans {
		j := ans[a].j
		for k := range j.outs {
			o := &j.outs[k]
			if alphas {
				s.AlphaShares[i] = o.AlphaShare
			}
			if betas && g == 1 {
				s.BetaShares[i] = o.BetaShare
			} else if betas {
				copy(s.BetaShares[i*g:(i+1)*g], o.BetaShares)
			}
			o.AlphaShare, o.BetaShare, o.Key = 0, 0, nil
			i++
		}
		j.keyBuf, j.keyOff, j.slab, j.outs = nil, 0, nil, nil
		ans[a].Outputs, ans[a].j = nil, nil
	}
	return s, true
}

// Request asks party b for rs, as one message of the application API
// would, and waits until each request is answered. The other party's
// application must ask for requests with the same ids (the pairs are
// matched by id, as between two daemons). If ctx ends first, the requests
// still waiting fail (unavailable) and ctx's error is returned with no
// answers; the outputs of those already answered are wiped.
func (lp *LocalPair) Request(ctx context.Context, b int, rs *pb.KeyRequests) ([]Answer, error) {
	q, err := lp.Enqueue(b, rs)
	if err != nil {
		return nil, err
	}
	return q.Wait(ctx)
}

// Queued is one Enqueue's requests at one party, to wait for.
type Queued struct {
	lp *LocalPair
	p  *Party
	js []*job
}

// Enqueue queues rs at party b, as Request does, and returns at once.
// An application playing both sites queues party 1's requests before
// party 0's: party 0's batch then never reaches party 1 before the
// requests it names, so no batch is refused for a missing id (and
// retried) however late a goroutine is scheduled.
func (lp *LocalPair) Enqueue(b int, rs *pb.KeyRequests) (*Queued, error) {
	p, err := lp.party(b)
	if err != nil {
		return nil, err
	}
	return &Queued{lp: lp, p: p, js: p.requests(rs, nil, nil)}, nil
}

// Wait waits until each request is answered (Request).
func (q *Queued) Wait(ctx context.Context) ([]Answer, error) { return q.lp.await(ctx, q.p, q.js) }

// party is party b, if the pair is open.
func (lp *LocalPair) party(b int) (*Party, error) {
	if b != 0 && b != 1 {
		return nil, fmt.Errorf("service: party %d is not 0 or 1", b)
	}
	if lp.ctx.Err() != nil {
		return nil, errors.New("service: the local pair is closed")
	}
	return lp.Parties[b], nil
}

// await waits until each of js (party p's) is answered and returns the
// answers, as Request does.
func (lp *LocalPair) await(ctx context.Context, p *Party, js []*job) ([]Answer, error) {
	for i, j := range js {
		if err := j.wait(ctx); err != nil {
			lp.abandon(p, js[i:])
			for _, j := range js[:i] {
				j.wipeOutputs(false)
			}
			return nil, err
		}
	}
	out := make([]Answer, len(js))
	for i, j := range js {
		out[i] = Answer{ID: j.id, j: j}
		if j.reply != nil {
			out[i].ErrorClass, out[i].Error = j.reply.ErrorClass, j.reply.Error
			if out[i].ErrorClass == "" {
				out[i].ErrorClass = ErrClassBadRequest // refused before it was queued (j.code)
			}
			out[i].j = nil
			continue
		}
		j.materialize() // answers carry records
		out[i].Outputs = j.outs
	}
	return out, nil
}

// BoundBulk is one bound request of LocalPair.RequestBulk: N keys of one
// profile and shape under one tier, with this party's additive shares of
// each key's α (AlphaShares[i], mod 2^InBits) and β (BetaShares[i], mod
// 2^OutBits). It is one job (one id, one admission, one batch item of
// count N, one answer of N outputs): the parties' per-request work is
// paid once for its N keys. It succeeds or fails whole: one spent class
// covers all N keys.
type BoundBulk struct {
	ID                      uint64
	Tier                    msg.Tier
	Profile                 msg.Profile
	Params                  fss.Params
	AlphaShares, BetaShares []uint64
}

// RequestBulk asks party b for bound bulk requests (the other party's
// application asks for the same ids, shapes, tiers and counts), as
// Request does for the application API's requests, and waits until each
// is answered. A malformed one (N = 0 or over MaxCount, share counts that
// differ, a share or shape out of range, an unknown tier) is answered
// bad_request and takes no counter.
func (lp *LocalPair) RequestBulk(ctx context.Context, b int, rs []BoundBulk) ([]Answer, error) {
	q, err := lp.EnqueueBulk(b, rs)
	if err != nil {
		return nil, err
	}
	return q.Wait(ctx)
}

// EnqueueBulk queues rs at party b, as RequestBulk does, and returns at
// once (Enqueue).
func (lp *LocalPair) EnqueueBulk(b int, rs []BoundBulk) (*Queued, error) {
	p, err := lp.party(b)
	if err != nil {
		return nil, err
	}
	slab := make([]job, len(rs))
	js := make([]*job, len(rs))
	var errs []error
	for i := range rs {
		j := &slab[i]
		js[i] = j
		if err := j.initBulk(&rs[i]); err != nil {
			if errs == nil {
				errs = make([]error, len(rs))
			}
			*j = job{id: rs[i].ID}
			errs[i] = fmt.Errorf("request %d: %w", rs[i].ID, err)
		}
	}
	p.admit(js, errs)
	return &Queued{lp: lp, p: p, js: js}, nil
}

// initBulk is init for a BoundBulk.
func (j *job) initBulk(r *BoundBulk) error {
	n := len(r.AlphaShares)
	switch {
	case n == 0 || n > MaxCount:
		return badf("count: %d keys, want 1..%d", n, MaxCount)
	case len(r.BetaShares) != n:
		return badf("beta_shares: %d for %d alpha shares", len(r.BetaShares), n)
	case r.Tier != msg.Keystream && r.Tier != msg.MAC && r.Tier != msg.BatchMAC:
		return badf("tier: %v is not otp, mac or batchmac", r.Tier)
	case r.Params.Type != fss.DPF && r.Params.Type != fss.DCF:
		return badf("type: %v is not dpf or dcf", r.Params.Type)
	}
	if err := msg.CheckShape(r.Profile, r.Params); err != nil {
		return badf("shape: %v", err)
	}
	in, out := r.Params.InBits, r.Params.OutBits
	ma, mb := prg.Mask(in), prg.Mask(out)
	for i := range n {
		if r.AlphaShares[i]&^ma != 0 || r.BetaShares[i]&^mb != 0 {
			return badf("shares[%d]: does not fit in %d input and %d output bits", i, in, out)
		}
	}
	j.id, j.tier = r.ID, r.Tier
	j.itemv.Id, j.itemv.Mode, j.itemv.Type, j.itemv.InBits, j.itemv.OutBits, j.itemv.Count = r.ID, uint32(msg.Bound),
		uint32(msg.TypeByte(r.Profile, r.Params.Type)), uint32(in), uint32(out), uint32(n)
	j.item = &j.itemv
	j.shares = make([]msg.Share, n)
	for i := range j.shares {
		j.shares[i] = msg.Share{Mode: msg.Bound, Profile: r.Profile, Type: r.Params.Type, InBits: in, OutBits: out,
			AlphaShare: r.AlphaShares[i], BetaShare: r.BetaShares[i]}
	}
	return nil
}

// abandon fails the jobs of a cancelled Request that are still queued or
// pending, and wipes the outputs of the others once they are answered
// (those in flight are answered when their batch ends, or at Close).
func (lp *LocalPair) abandon(p *Party, js []*job) {
	ids := make(map[uint64]bool, len(js))
	list := make([]uint64, 0, len(js))
	for _, j := range js {
		if !j.answered() {
			ids[j.id] = true
			list = append(list, j.id)
		}
	}
	if p.cfg.Party == 0 {
		for _, j := range p.q.extract(ids) {
			j.fail(ErrClassUnavailable, "request cancelled")
		}
	} else {
		p.pend.fail("", list, ErrClassUnavailable, "request cancelled")
	}
	go func() {
		for _, j := range js {
			if j.wait(lp.ctx) == nil || j.answered() {
				j.wipeOutputs(false)
			}
		}
	}()
}

// SentBytes is the total of frame bytes party b has sent to the other.
func (lp *LocalPair) SentBytes(b int) uint64 { return lp.Parties[b].frameBytes.Load() }

// Rounds counts the batches party 0 has had answered.
func (lp *LocalPair) Rounds() uint64 { return lp.Parties[0].rounds.Load() }
