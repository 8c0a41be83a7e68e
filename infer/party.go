package infer

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/kord-fss/kord/client"
	"github.com/kord-fss/kord/fss"
	"github.com/kord-fss/kord/module/msg"
	pb "github.com/kord-fss/kord/proto/kordpb"
)

// PartySupply is ONE party's offline driver through its own party daemon
// (the deployment path): every DCF key comes as a derived-key request and
// every weight mask and input correlation as a correlation request
// (client.Correlation) to the daemon, which has its module draw it
// together with the other site's module. The party receives only its own
// shares; nothing per key or correlation crosses between the sites but
// the batch headers the daemons exchange.
//
// Both parties must drive their PartySupply in lockstep over the same
// architecture and the same FirstID: request ids are assigned in the same
// deterministic order at both sites, which is how the daemons match them.
//
// The requests of one evaluation are known before any is answered (they
// depend only on the architecture), so Gen sends them all on one stream
// at once and then assembles the material from the replies, in order. It
// reuses Supply.Gen for the assembly: a plan is recorded once by running
// Gen over a source that only notes each request, then each evaluation
// replays the daemon's replies through the same Gen (the other party's
// half of each result is a zero placeholder, discarded).
type PartySupply struct {
	b      int
	c      *client.Client
	ctx    context.Context
	nextID uint64
	sp     *Supply
	src    *partySource
	stream *client.Stream
	// Plan is the request list of one evaluation: keys (by shape) and
	// correlations, in order.
	Plan []PlanItem
}

// PlanItem is one request of an evaluation's plan: N derived DCF keys of
// shape P (β derived when WantBeta, else 1), or (Corr set) one input
// correlation.
type PlanItem struct {
	P        fss.Params
	N        int
	WantBeta bool
	Corr     *msg.Correlation
}

// partySource is the recording and replaying key and correlation source
// of a PartySupply.
type partySource struct {
	b      int
	record bool
	plan   []PlanItem
	// replay: the daemon's replies, consumed in plan order
	keys  []keyReply
	corrs []*msg.CorrShares
	// session: a correlation request for a weight mask (NewPartySupply)
	weights func(c msg.Correlation) (*msg.CorrShares, uint64, error)
	// buf is take's staging buffer for one reply's keys, kept (wiped)
	// between batches so that it is not regrown for every reply.
	buf []byte
}

// keyReply is one derived-key reply: the keys and this party's α and β
// shares.
type keyReply struct {
	keys   []*fss.Key
	as, bs []uint64
}

// NewPartySupply opens party b's session through its daemon: a kept
// weight mask for every linear layer of arch (one correlation request
// each, ids from firstID on), then the plan of one evaluation. It returns
// the supply and party b's Session.
func NewPartySupply(ctx context.Context, b int, c *client.Client, arch *Model, firstID uint64) (*PartySupply, *Session, error) {
	if b != 0 && b != 1 {
		return nil, nil, fmt.Errorf("infer: party must be 0 or 1, not %d", b)
	}
	if c == nil {
		return nil, nil, errors.New("infer: a party supply needs a client of its party daemon")
	}
	ps := &PartySupply{b: b, c: c, ctx: ctx, nextID: firstID}
	ps.src = &partySource{b: b, weights: func(corr msg.Correlation) (*msg.CorrShares, uint64, error) {
		id := ps.id()
		r, err := c.Get(ctx, client.Correlation(id, corr))
		if err != nil {
			return nil, 0, fmt.Errorf("weight mask request %d: %w", id, err)
		}
		if r.Err != nil {
			return nil, 0, fmt.Errorf("weight mask request %d: %w", id, r.Err)
		}
		if len(r.Shares) != 1 || r.Shares[0].Corr == nil {
			return nil, 0, fmt.Errorf("weight mask request %d: the reply holds no correlation", id)
		}
		return r.Shares[0].Corr, r.Shares[0].Counter, nil
	}}
	sp, ss, err := NewSupply(arch, Sources{Keys: ps.src, Corr: ps.src})
	if err != nil {
		return nil, nil, err
	}
	ps.sp = sp
	ss[1-b].Wipe()
	ps.src.record = true
	mat, err := sp.Gen()
	ps.src.record = false
	if err != nil {
		ss[b].Wipe()
		return nil, nil, fmt.Errorf("infer: recording the plan: %w", err)
	}
	mat[0].Wipe()
	mat[1].Wipe()
	ps.Plan = ps.src.plan
	return ps, ss[b], nil
}

func (ps *PartySupply) id() uint64 {
	ps.nextID++
	return ps.nextID - 1
}

// NextID is the id the next request will take.
func (ps *PartySupply) NextID() uint64 { return ps.nextID }

// requests lists one evaluation's requests under fresh ids; a key item
// over service.MaxCount keys goes as several requests.
func (ps *PartySupply) requests() []*pb.KeyRequest {
	var out []*pb.KeyRequest
	for _, it := range ps.Plan {
		if it.Corr != nil {
			out = append(out, client.Correlation(ps.id(), *it.Corr))
			continue
		}
		beta := uint64(1)
		if it.WantBeta {
			beta = 0
		}
		for n := it.N; n > 0; n -= maxKeysPerRequest {
			out = append(out, client.Derived(ps.id(), it.P, min(n, maxKeysPerRequest), beta, it.WantBeta))
		}
	}
	return out
}

// maxKeysPerRequest is the party daemon's limit on derived keys per
// request (service.MaxCount).
const maxKeysPerRequest = 4096

// Gen fetches one evaluation's keys and correlations from the daemon and
// returns party b's material. On an error nothing further is requested
// for this evaluation and what arrived is wiped.
func (ps *PartySupply) Gen() (*Material, error) {
	if ps.stream == nil {
		st, err := ps.c.Stream(ps.ctx)
		if err != nil {
			return nil, fmt.Errorf("infer: opening a request stream: %w", err)
		}
		ps.stream = st
	}
	reqs := ps.requests()
	if err := ps.stream.SendBatch(reqs); err != nil {
		return nil, fmt.Errorf("infer: sending %d requests: %w", len(reqs), err)
	}
	src := ps.src
	src.keys, src.corrs = src.keys[:0], src.corrs[:0]
	fail := func(err error) (*Material, error) {
		src.wipe()
		return nil, err
	}
	for got := 0; got < len(reqs); {
		bt, err := ps.stream.RecvBatch()
		if err != nil {
			return fail(fmt.Errorf("infer: receiving request %d: %w", reqs[got].Id, err))
		}
		got, err = src.take(bt, reqs, got)
		bt.Release()
		if err != nil {
			return fail(err)
		}
	}
	mat, err := ps.sp.Gen()
	if err != nil {
		return fail(err)
	}
	if len(src.keys) != 0 || len(src.corrs) != 0 {
		mat[ps.b].Wipe()
		return fail(errors.New("infer: the daemon's replies do not follow the plan"))
	}
	return mat[ps.b], nil
}

// Close ends the request stream.
func (ps *PartySupply) Close() {
	if ps.stream != nil {
		_ = ps.stream.CloseSend()
	}
}

// take copies the replies of one received batch, for requests reqs[got:]
// in order, out of the batch's memory: each reply's keys are copied into
// one buffer and parsed together (fss.ParseKeys), the correlations
// copied. It returns the next request's index.
func (s *partySource) take(bt client.Batch, reqs []*pb.KeyRequest, got int) (int, error) {
	buf := s.buf[:0]
	defer func() { clear(buf); s.buf = buf[:0] }()
	for r := 0; r < bt.Replies(); r++ {
		if got >= len(reqs) {
			return got, errors.New("infer: the daemon sent more replies than requests")
		}
		rq, rep := reqs[got], bt.Reply(r)
		got++
		if rep.Err != nil || rep.ID != rq.Id {
			return got, fmt.Errorf("infer: request %d (reply %d): %v", rq.Id, rep.ID, rep.Err)
		}
		if rq.Corr != nil {
			c := bt.Corr(rep.First)
			if rep.N != 1 || c == nil {
				return got, fmt.Errorf("infer: request %d: the reply holds no correlation", rq.Id)
			}
			own := *c
			own.A, own.R, own.Z = slices.Clone(c.A), slices.Clone(c.R), slices.Clone(c.Z)
			s.corrs = append(s.corrs, &own)
			continue
		}
		if rep.N != int(rq.Count) || rep.N == 0 {
			return got, fmt.Errorf("infer: request %d: %d keys for %d", rq.Id, rep.N, rq.Count)
		}
		stride := bt.Key(rep.First).Params().KeySize()
		kr := keyReply{as: make([]uint64, rep.N), bs: make([]uint64, rep.N)}
		for i := 0; i < rep.N; i++ {
			kr.as[i], kr.bs[i] = bt.AlphaShare(rep.First+i), bt.BetaShare(rep.First+i)
		}
		// The reply's keys are parsed where they lie in the batch when
		// the message packed them at the request's stride; else they are
		// gathered into buf first.
		kb, st := bt.ReplyKeys(r)
		if kb == nil || st != stride {
			clear(buf)
			buf = slices.Grow(buf[:0], rep.N*stride)
			for i := 0; i < rep.N; i++ {
				v := bt.Key(rep.First + i)
				if len(v.Bytes()) != stride {
					return got, fmt.Errorf("infer: request %d: key %d is not of the request's shape", rq.Id, i)
				}
				buf = append(buf, v.Bytes()...)
			}
			kb = buf
		}
		keys, err := fss.ParseKeys(kb, stride, rep.N)
		if err != nil {
			return got, fmt.Errorf("infer: request %d: %w", rq.Id, err)
		}
		kr.keys = keys
		s.keys = append(s.keys, kr)
	}
	return got, nil
}

// wipe zeroes the replies not consumed.
func (s *partySource) wipe() {
	for _, kr := range s.keys {
		for _, k := range kr.keys {
			k.Wipe()
		}
		clear(kr.as)
		clear(kr.bs)
	}
	for _, c := range s.corrs {
		c.Wipe()
	}
	s.keys, s.corrs = s.keys[:0], s.corrs[:0]
}

func (s *partySource) Bound(fss.Params, [2]uint64, [2]uint64) ([2]*fss.Key, error) {
	return [2]*fss.Key{}, errors.New("infer: a party supply serves derived keys only")
}

func (s *partySource) Derived(p fss.Params, wantBeta bool) (k [2]*fss.Key, as, bs [2]uint64, err error) {
	ks, a, bt, err := s.DerivedBatch(p, 1, wantBeta)
	if err != nil {
		return k, as, bs, err
	}
	for b := 0; b < 2; b++ {
		k[b], as[b], bs[b] = ks[b][0], a[b][0], bt[b][0]
	}
	return k, as, bs, nil
}

func (s *partySource) BoundBatch(fss.Params, [2][]uint64, [2][]uint64) ([2][]*fss.Key, error) {
	return [2][]*fss.Key{}, errors.New("infer: a party supply serves derived keys only")
}

// DerivedBatch records (or replays) n derived keys: party b's half is the
// daemon's, the other a placeholder of nil keys and zero shares.
func (s *partySource) DerivedBatch(p fss.Params, n int, wantBeta bool) (keys [2][]*fss.Key, as, bs [2][]uint64, err error) {
	for b := 0; b < 2; b++ {
		keys[b], as[b], bs[b] = make([]*fss.Key, n), make([]uint64, n), make([]uint64, n)
	}
	if s.record {
		s.plan = append(s.plan, PlanItem{P: p, N: n, WantBeta: wantBeta})
		return keys, as, bs, nil
	}
	i := 0
	for i < n {
		if len(s.keys) == 0 {
			return keys, as, bs, fmt.Errorf("the daemon sent %d of %d keys of %v", i, n, p)
		}
		kr := s.keys[0]
		for k, key := range kr.keys {
			if key == nil || key.Params() != p || i >= n {
				return keys, as, bs, fmt.Errorf("the daemon's key %d is not a %v key of this request", i, p)
			}
			keys[s.b][i], as[s.b][i], bs[s.b][i] = key, kr.as[k], kr.bs[k]
			i++
		}
		s.keys = s.keys[1:]
	}
	return keys, as, bs, nil
}

// Weights asks the daemon for a kept weight mask (session start).
func (s *partySource) Weights(l *Layer, in Shape, ring int) (*WeightMask, error) {
	c, err := corrShape(l, in, ring)
	if err != nil {
		return nil, err
	}
	c.Part = msg.CorrWeight
	sh, counter, err := s.weights(c)
	if err != nil {
		return nil, err
	}
	w := &WeightMask{Handle: counter}
	w.A[s.b], w.A[1-s.b] = sh.A, make([]uint64, len(sh.A))
	return w, nil
}

// Input records (or replays) an input correlation against w.
func (s *partySource) Input(w *WeightMask, l *Layer, in Shape, ring int) ([2]*LinearCorr, error) {
	var out [2]*LinearCorr
	c, err := inputCorr(w, l, in, ring)
	if err != nil {
		return out, err
	}
	nz := outLen(l, in)
	out[1-s.b] = &LinearCorr{R: make([]uint64, in.Len()), Z: make([]uint64, nz)}
	if s.record {
		s.plan = append(s.plan, PlanItem{Corr: &c})
		out[s.b] = &LinearCorr{R: make([]uint64, in.Len()), Z: make([]uint64, nz)}
		return out, nil
	}
	if len(s.corrs) == 0 {
		return out, errors.New("the daemon sent fewer correlations than the plan has")
	}
	sh := s.corrs[0]
	s.corrs = s.corrs[1:]
	if sh.Corr != c {
		sh.Wipe()
		return out, fmt.Errorf("the daemon's correlation has shape %+v, want %+v", sh.Corr, c)
	}
	out[s.b] = &LinearCorr{R: sh.R, Z: sh.Z}
	return out, nil
}

// CorrWords is the number of correlation words (R and Z) one party
// receives per evaluation.
func (ps *PartySupply) CorrWords() int {
	n := 0
	for _, it := range ps.Plan {
		if it.Corr != nil {
			_, nr, nz, _ := it.Corr.Sizes()
			n += nr + nz
		}
	}
	return n
}

// PlanCounts is the number of keys and of correlations per evaluation and
// the bytes of one party's material (key shares at their kord-v1 size,
// mask and payload shares and correlation words at ⌈width/8⌉ bytes).
func (ps *PartySupply) PlanCounts(ring int) (keys, corrs int, bytes int64) {
	for _, it := range ps.Plan {
		if it.Corr != nil {
			corrs++
			_, nr, nz, _ := it.Corr.Sizes()
			bytes += int64(nr+nz) * int64((ring+7)/8)
			continue
		}
		keys += it.N
		bytes += int64(it.N) * int64(it.P.KeySize()+(it.P.InBits+7)/8+(it.P.OutBits+7)/8)
	}
	return keys, corrs, bytes
}
