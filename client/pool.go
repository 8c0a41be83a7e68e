package client

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"sync"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/status"

	pb "github.com/kord-fss/kord/proto/kordpb"
)

// A pair group is K independent module pairs serving one site pair: pair
// i is module pair i with its own pairing, root secret, counters and state
// file, reached at each site through that site's party i. A Pool is one
// site's client of its K parties.
//
// Site 0's application leads. Its pool chooses the pair of each request
// (Pool.Assign, round robin over the pairs that are up) and writes the
// choice into the request's id: the top PoolPairBits bits name the pair
// (PoolID, PoolPair). The application hands the id to site 1's
// application as it hands over any id; site 1's pool sends the request to
// the party the id names and never chooses. So a pair's two halves always
// come from one module pair: the two sites' requests under one id reach
// the two parties of one pair, which match them as a single pair would.
//
// When a pair dies, nothing is lost and nothing is delivered at one site
// only: the pair's parties answer what they can with the ordinary classes
// (docs/api.md), and a PoolStream answers every request the pair left
// unanswered — its stream broke, or the pair made no progress for
// PoolOptions.Stall and the pool abandoned its stream — with class spent
// (a reply that never came is taken as spent: kordpb.Classes), so the
// application asks again under a new id with a fresh α. The leader skips
// the pair until it is healthy again (PoolOptions.Hold, Pool.Check).

// PoolPairBits is how many top bits of a pool request's id name its pair.
const PoolPairBits = 8

// MaxPoolPairs is the most pairs one pool spreads over.
const MaxPoolPairs = 1 << PoolPairBits

// poolSeqBits is the width of the application's part of a pool id.
const poolSeqBits = 64 - PoolPairBits

// MaxPoolSeq is the largest application sequence number a pool id holds.
const MaxPoolSeq = 1<<poolSeqBits - 1

// ErrNoPair is Assign's error when no pair of the pool is up.
var ErrNoPair = errors.New("client: no module pair of the pool is up")

// PoolID is the id of request seq on pair: the pair in the top
// PoolPairBits bits, seq (at most MaxPoolSeq) below.
func PoolID(pair int, seq uint64) (uint64, error) {
	if pair < 0 || pair >= MaxPoolPairs {
		return 0, fmt.Errorf("client: pool pair %d is outside 0..%d", pair, MaxPoolPairs-1)
	}
	if seq > MaxPoolSeq {
		return 0, fmt.Errorf("client: pool request id %d does not fit in %d bits (the top %d name the pair)", seq, poolSeqBits, PoolPairBits)
	}
	return uint64(pair)<<poolSeqBits | seq, nil
}

// PoolPair is the pair a pool id names.
func PoolPair(id uint64) int { return int(id >> poolSeqBits) }

// PoolSeq is the application's sequence number in a pool id.
func PoolSeq(id uint64) uint64 { return id & MaxPoolSeq }

// PoolOptions tune a Pool; the zero value is the default.
type PoolOptions struct {
	// Stall: a pair with requests outstanding on a PoolStream that
	// answers none of them for this long is taken as down, and the
	// stream's requests on it are abandoned (answered spent). Default
	// 30 s: longer than a module or party restart and a resync, and than
	// the parties' default --match-timeout of 5 s, after which they
	// answer unmatched requests themselves.
	Stall time.Duration
	// Hold: how long the leader skips a pair taken down before it tries
	// it again (Check brings it back sooner if its party reports it
	// healthy after the hold). Default Stall.
	Hold time.Duration
	// CheckTimeout bounds one Status probe in Check (default 2 s).
	CheckTimeout time.Duration
	// Creds are DialPool's transport credentials for every pair's party
	// (TLS: the application's certificate, AppTLS); nil: plaintext
	// (loopback or Unix socket). CredsFor, if set, gives pair i's instead
	// (pairs whose certificates come from different CAs).
	Creds    credentials.TransportCredentials
	CredsFor func(pair int) credentials.TransportCredentials
}

func (o PoolOptions) withDefaults() PoolOptions {
	if o.Stall <= 0 {
		o.Stall = 30 * time.Second
	}
	if o.Hold <= 0 {
		o.Hold = o.Stall
	}
	if o.CheckTimeout <= 0 {
		o.CheckTimeout = 2 * time.Second
	}
	return o
}

// Pool is one site's client of the K parties of a pair group.
type Pool struct {
	site  int
	opts  PoolOptions
	pairs []*poolMember
	owned bool // Close closes the clients (DialPool)

	mu sync.Mutex
	rr int // the pair Assign tries first
}

type poolMember struct {
	c  *Client
	mu sync.Mutex
	// down: the pair is skipped (for why) until retry; after retry it is
	// tried again, and a healthy Check or a reply brings it back.
	down  bool
	why   error
	retry time.Time
	downs int // times taken down
}

// NewPool is site's (0 or 1) pool over clients, clients[i] being this
// site's party of pair i. The pool does not close them.
func NewPool(site int, clients []*Client, o PoolOptions) (*Pool, error) {
	if site != 0 && site != 1 {
		return nil, fmt.Errorf("client: pool site %d: want 0 or 1", site)
	}
	if len(clients) == 0 || len(clients) > MaxPoolPairs {
		return nil, fmt.Errorf("client: a pool takes 1..%d pairs, got %d", MaxPoolPairs, len(clients))
	}
	p := &Pool{site: site, opts: o.withDefaults()}
	for i, c := range clients {
		if c == nil {
			return nil, fmt.Errorf("client: pool pair %d has no client", i)
		}
		p.pairs = append(p.pairs, &poolMember{c: c})
	}
	return p, nil
}

// DialPool dials this site's party of each pair (addrs[i] is pair i's, as
// Dial takes it) and returns their pool; Close closes the connections.
func DialPool(site int, addrs []string, o PoolOptions) (*Pool, error) {
	if len(addrs) == 0 || len(addrs) > MaxPoolPairs {
		return nil, fmt.Errorf("client: a pool takes 1..%d pairs, got %d", MaxPoolPairs, len(addrs))
	}
	cs := make([]*Client, 0, len(addrs))
	closeAll := func() {
		for _, c := range cs {
			c.Close()
		}
	}
	for i, a := range addrs {
		creds := o.Creds
		if o.CredsFor != nil {
			creds = o.CredsFor(i)
		}
		c, err := Dial(a, creds)
		if err != nil {
			closeAll()
			return nil, fmt.Errorf("client: pool pair %d (%s): %w", i, a, err)
		}
		cs = append(cs, c)
	}
	p, err := NewPool(site, cs, o)
	if err != nil {
		closeAll()
		return nil, err
	}
	p.owned = true
	return p, nil
}

// Close closes the pool's connections if DialPool made them.
func (p *Pool) Close() error {
	if !p.owned {
		return nil
	}
	var errs []error
	for _, m := range p.pairs {
		errs = append(errs, m.c.Close())
	}
	return errors.Join(errs...)
}

// Len is the number of pairs.
func (p *Pool) Len() int { return len(p.pairs) }

// Site is the pool's site.
func (p *Pool) Site() int { return p.site }

// Client is this site's client of pair i.
func (p *Pool) Client(i int) *Client { return p.pairs[i].c }

// Up reports whether the leader may choose pair i now: it is not down, or
// its hold has passed (a trial).
func (p *Pool) Up(i int) bool {
	m := p.pairs[i]
	m.mu.Lock()
	defer m.mu.Unlock()
	return !m.down || !time.Now().Before(m.retry)
}

// Down is why pair i is down (nil when it is up) and how often it was
// taken down.
func (p *Pool) Down(i int) (why error, downs int) {
	m := p.pairs[i]
	m.mu.Lock()
	defer m.mu.Unlock()
	if !m.down {
		return nil, m.downs
	}
	return m.why, m.downs
}

// MarkDown takes pair i down for why: the leader skips it for
// PoolOptions.Hold, and until a Check finds it healthy or it answers a
// request again.
func (p *Pool) MarkDown(i int, why error) {
	m := p.pairs[i]
	m.mu.Lock()
	defer m.mu.Unlock()
	if !m.down {
		m.downs++
	}
	m.down, m.why, m.retry = true, why, time.Now().Add(p.opts.Hold)
}

// markUp brings pair i back once its hold has passed (a reply or a
// healthy probe).
func (p *Pool) markUp(i int) {
	m := p.pairs[i]
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.down && !time.Now().Before(m.retry) {
		m.down, m.why = false, nil
	}
}

// Assign is the leader's choice (site 0 only): it picks the next pair
// that is up, round robin, and writes it into every request's id, which
// must be at most MaxPoolSeq (the application's sequence number); all of
// rs go to that one pair. It returns the pair, or ErrNoPair (wrapped, with
// each pair's reason) when none is up. The application then sends rs on a
// PoolStream and gives site 1 the ids as written.
func (p *Pool) Assign(rs ...*pb.KeyRequest) (int, error) {
	if p.site != 0 {
		return 0, errors.New("client: only site 0's pool chooses pairs (site 1 sends each request to the pair its id names)")
	}
	for _, r := range rs {
		if r == nil {
			return 0, errors.New("client: Assign: nil request")
		}
		if r.Id > MaxPoolSeq {
			return 0, fmt.Errorf("client: Assign: request id %d does not fit in %d bits (the top %d name the pair)", r.Id, poolSeqBits, PoolPairBits)
		}
	}
	pair, err := p.choose()
	if err != nil {
		return 0, err
	}
	for _, r := range rs {
		r.Id = uint64(pair)<<poolSeqBits | r.Id
	}
	return pair, nil
}

// choose is the next pair that is up, round robin.
func (p *Pool) choose() (int, error) {
	p.mu.Lock()
	start := p.rr
	p.mu.Unlock()
	for k := range p.pairs {
		i := (start + k) % len(p.pairs)
		if p.Up(i) {
			p.mu.Lock()
			p.rr = i + 1
			p.mu.Unlock()
			return i, nil
		}
	}
	var why []error
	for i := range p.pairs {
		if e, _ := p.Down(i); e != nil {
			why = append(why, fmt.Errorf("pair %d: %w", i, e))
		}
	}
	return 0, fmt.Errorf("%w (%d pairs): %w", ErrNoPair, len(p.pairs), errors.Join(why...))
}

// Check asks each pair's party for its status and takes down the pairs
// that are not healthy (an application that is not the parties' operator
// identity gets a limited Status, which still says paired and peer up): the party does not answer, its module does not
// answer or is not paired, or (site 0) it has no peer session. A healthy
// pair whose hold has passed comes back. It returns each pair's problem
// (nil when healthy).
func (p *Pool) Check(ctx context.Context) []error {
	out := make([]error, len(p.pairs))
	var wg sync.WaitGroup
	for i, m := range p.pairs {
		wg.Go(func() {
			cctx, cancel := context.WithTimeout(ctx, p.opts.CheckTimeout)
			defer cancel()
			st, err := m.c.Status(cctx)
			switch {
			case status.Code(err) == codes.PermissionDenied:
				// A party that refuses this application Status says
				// nothing of the pair.
				out[i] = fmt.Errorf("status not checked: %w", err)
				return
			case err != nil:
				out[i] = fmt.Errorf("party does not answer: %w", err)
			case st.Module == nil && !st.Limited: // limited: no module record for an application
				out[i] = errors.New("its module does not answer")
			case !st.Paired:
				out[i] = errors.New("its module is not paired")
			case p.site == 0 && !st.PeerConnected:
				out[i] = errors.New("no peer session with site 1")
			}
			if out[i] != nil {
				p.MarkDown(i, out[i])
			} else {
				p.markUp(i)
			}
		})
	}
	wg.Wait()
	return out
}

// Watch runs Check every interval until ctx ends.
func (p *Pool) Watch(ctx context.Context, every time.Duration) {
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			p.Check(ctx)
		}
	}
}

// PoolReply is one reply of a PoolStream and the pair that gave it.
type PoolReply struct {
	Pair int
	*Reply
	// Abandoned: the pair never answered this request (its stream broke or
	// stalled); Err is a *ReplyError of class spent.
	Abandoned bool
}

// PoolStream is a request stream over every pair of a pool: each request
// goes to its id's pair (one Stream per pair, opened when first used, and
// again after one broke), and Recv returns the pairs' replies as they
// come — in request order within a pair, interleaved across pairs.
type PoolStream struct {
	p   *Pool
	ctx context.Context
	out chan PoolReply

	opening []sync.Mutex // one stream opening per pair at a time
	mu      sync.Mutex
	legs    []*poolLeg
	readers int  // reader goroutines running
	closed  bool // CloseSend: no new legs
	stop    context.CancelFunc
}

// poolLeg is a PoolStream's stream on one pair.
type poolLeg struct {
	st      *Stream
	cancel  context.CancelFunc
	sendMu  sync.Mutex
	pending map[uint64]time.Time // ids sent and not answered → sent at
	last    time.Time            // the latest reply, or the first send while none was pending
	why     error                // why the stream was abandoned
}

// Stream opens a PoolStream. Its streams on the pairs open as requests
// need them; ctx ends them all.
func (p *Pool) Stream(ctx context.Context) (*PoolStream, error) {
	sctx, stop := context.WithCancel(ctx)
	s := &PoolStream{p: p, ctx: sctx, out: make(chan PoolReply, 1024), legs: make([]*poolLeg, len(p.pairs)), opening: make([]sync.Mutex, len(p.pairs)), stop: stop}
	go s.watchdog()
	return s, nil
}

// leg returns pair i's stream, opening it if needed. The stream is opened
// outside s.mu (opening asks the party for its status once per client,
// which waits on the network), one opening per pair at a time.
func (s *PoolStream) leg(i int) (*poolLeg, error) {
	s.mu.Lock()
	if l := s.legs[i]; l != nil {
		s.mu.Unlock()
		return l, nil
	}
	s.mu.Unlock()
	s.opening[i].Lock()
	defer s.opening[i].Unlock()
	s.mu.Lock()
	if l := s.legs[i]; l != nil || s.closed {
		s.mu.Unlock()
		if l == nil {
			return nil, errors.New("client: pool stream: CloseSend was called")
		}
		return l, nil
	}
	s.mu.Unlock()
	lctx, cancel := context.WithCancel(s.ctx)
	st, err := s.p.pairs[i].c.Stream(lctx)
	if err != nil {
		cancel()
		return nil, err
	}
	l := &poolLeg{st: st, cancel: cancel, pending: map[uint64]time.Time{}}
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		cancel()
		return nil, errors.New("client: pool stream: CloseSend was called")
	}
	s.legs[i] = l
	s.readers++
	s.mu.Unlock()
	go s.read(i, l)
	return l, nil
}

// Send sends r to the pair its id names.
func (s *PoolStream) Send(r *pb.KeyRequest) error { return s.SendBatch([]*pb.KeyRequest{r}) }

// SendBatch sends rs, each to the pair its id names, one message per
// pair. A request whose id names no pair of the pool is refused before
// anything is sent.
func (s *PoolStream) SendBatch(rs []*pb.KeyRequest) error {
	n := len(s.p.pairs)
	by := make([][]*pb.KeyRequest, n)
	for _, r := range rs {
		i := PoolPair(r.Id)
		if i >= n {
			return fmt.Errorf("client: request id %#x names pair %d, and the pool has %d pairs (0..%d)", r.Id, i, n, n-1)
		}
		by[i] = append(by[i], r)
	}
	var errs []error
	for i, group := range by {
		if len(group) == 0 {
			continue
		}
		if err := s.sendTo(i, group); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// sendTo sends rs on pair i's stream. A send that fails ends that stream:
// its unanswered requests, rs included, are answered spent; so are rs when
// no stream to the pair opens (the pair is taken down).
func (s *PoolStream) sendTo(i int, rs []*pb.KeyRequest) error {
	for {
		l, err := s.leg(i)
		if err != nil {
			return s.noLeg(i, rs, err)
		}
		s.mu.Lock()
		if s.legs[i] != l { // it ended meanwhile: open another
			s.mu.Unlock()
			continue
		}
		now := time.Now()
		if len(l.pending) == 0 {
			l.last = now
		}
		for _, r := range rs {
			l.pending[r.Id] = now
		}
		s.mu.Unlock()
		l.sendMu.Lock()
		err = l.st.SendBatch(rs)
		l.sendMu.Unlock()
		if err != nil {
			s.abandon(i, l, fmt.Errorf("send: %w", err))
		}
		return nil
	}
}

// noLeg answers rs spent when no stream to pair i opens (and takes the
// pair down), unless CloseSend was called: then it returns err.
func (s *PoolStream) noLeg(i int, rs []*pb.KeyRequest, err error) error {
	s.mu.Lock()
	closed := s.closed
	if !closed {
		s.readers++
	}
	s.mu.Unlock()
	if closed {
		return err
	}
	why := fmt.Errorf("no stream opens: %w", err)
	s.p.MarkDown(i, why)
	ids := make([]uint64, len(rs))
	for k, r := range rs {
		ids[k] = r.Id
	}
	go s.answerSpent(i, ids, why)
	return nil
}

// abandon ends pair i's stream l for why: its reader answers what is
// pending as spent, and the pair is taken down.
func (s *PoolStream) abandon(i int, l *poolLeg, why error) {
	s.mu.Lock()
	if l.why == nil {
		l.why = why
	}
	s.mu.Unlock()
	s.p.MarkDown(i, why)
	l.cancel()
}

// read forwards pair i's replies until its stream ends, then answers its
// unanswered requests.
func (s *PoolStream) read(i int, l *poolLeg) {
	var err error
	for {
		var r *Reply
		r, err = l.st.Recv()
		if err != nil {
			break
		}
		s.mu.Lock()
		delete(l.pending, r.ID)
		l.last = time.Now()
		s.mu.Unlock()
		s.p.markUp(i)
		select {
		case s.out <- PoolReply{Pair: i, Reply: r}:
		case <-s.ctx.Done():
		}
	}
	s.mu.Lock()
	if s.legs[i] == l {
		s.legs[i] = nil
	}
	why, abandoned := l.why, l.why != nil
	if why == nil {
		why = err
	}
	type sent struct {
		id uint64
		at time.Time
	}
	left := make([]sent, 0, len(l.pending))
	for id, at := range l.pending {
		left = append(left, sent{id, at})
	}
	l.pending = nil
	s.mu.Unlock()
	l.cancel()
	if len(left) > 0 && !abandoned {
		s.p.MarkDown(i, fmt.Errorf("stream ended: %w", err))
	}
	slices.SortFunc(left, func(a, b sent) int { return a.at.Compare(b.at) })
	ids := make([]uint64, len(left))
	for k, q := range left {
		ids[k] = q.id
	}
	s.answerSpent(i, ids, why)
}

// answerSpent answers ids, which pair i never answered, as spent, and
// then ends a reader (s.readers was counted for it): the last reader
// after CloseSend closes the replies.
func (s *PoolStream) answerSpent(i int, ids []uint64, why error) {
	for _, id := range ids {
		rep := &Reply{ID: id, Err: &ReplyError{Class: pb.ClassSpent,
			Msg: fmt.Sprintf("pool pair %d gave no reply (%v); take as spent: ask again with a fresh α", i, why)}}
		select {
		case s.out <- PoolReply{Pair: i, Reply: rep, Abandoned: true}:
		case <-s.ctx.Done():
		}
	}
	s.mu.Lock()
	s.readers--
	last := s.closed && s.readers == 0
	s.mu.Unlock()
	if last {
		close(s.out)
	}
}

// watchdog abandons the streams of pairs that stall: requests outstanding
// and no reply for PoolOptions.Stall.
func (s *PoolStream) watchdog() {
	t := time.NewTicker(max(time.Millisecond, s.p.opts.Stall/8))
	defer t.Stop()
	for {
		select {
		case <-s.ctx.Done():
			return
		case <-t.C:
		}
		now := time.Now()
		type stalled struct {
			i int
			l *poolLeg
			d time.Duration
		}
		var st []stalled
		s.mu.Lock()
		for i, l := range s.legs {
			if l != nil && len(l.pending) > 0 && l.why == nil && now.Sub(l.last) >= s.p.opts.Stall {
				st = append(st, stalled{i, l, now.Sub(l.last)})
			}
		}
		s.mu.Unlock()
		for _, x := range st {
			s.abandon(x.i, x.l, fmt.Errorf("stalled: %d requests outstanding and no reply for %v", len(x.l.pending), x.d.Round(time.Millisecond)))
		}
	}
}

// Pending is the number of requests sent on pair i and not yet answered.
func (s *PoolStream) Pending(i int) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	if l := s.legs[i]; l != nil {
		return len(l.pending)
	}
	return 0
}

// Abandon ends pair i's stream now: its unanswered requests are answered
// spent and the pair is taken down for why.
func (s *PoolStream) Abandon(i int, why error) {
	s.mu.Lock()
	l := s.legs[i]
	s.mu.Unlock()
	if l != nil {
		s.abandon(i, l, why)
	}
}

// Recv returns the next reply of any pair. After CloseSend it returns
// io.EOF once every pair's stream has ended and each request sent has
// been answered.
func (s *PoolStream) Recv() (PoolReply, error) {
	select {
	case r, ok := <-s.out:
		if !ok {
			return PoolReply{}, io.EOF
		}
		return r, nil
	case <-s.ctx.Done():
		return PoolReply{}, s.ctx.Err()
	}
}

// CloseSend says no more requests follow, on every pair.
func (s *PoolStream) CloseSend() error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	legs := slices.Clone(s.legs)
	none := s.readers == 0
	s.mu.Unlock()
	var errs []error
	for _, l := range legs {
		if l != nil {
			l.sendMu.Lock()
			errs = append(errs, l.st.CloseSend())
			l.sendMu.Unlock()
		}
	}
	if none {
		close(s.out)
	}
	return errors.Join(errs...)
}

// Close ends every pair's stream of s.
func (s *PoolStream) Close() { s.stop() }
