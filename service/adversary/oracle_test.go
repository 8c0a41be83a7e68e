package adversary

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/kord-fss/kord/client"
	"github.com/kord-fss/kord/fss"
	"github.com/kord-fss/kord/internal/prg"
	"github.com/kord-fss/kord/module/msg"
	pb "github.com/kord-fss/kord/proto/kordpb"
)

// The run's totals, printed by TestMain as the summary line.
var total struct{ steps, mutated, checks, violations, known atomic.Int64 }

// Request kinds the suite asks for.
const (
	kBound = iota
	kDerived
	kCorr
)

// req is one request of the test's applications: what both sites ask
// for under one id, and what the pair must evaluate to.
type req struct {
	id          uint64
	kind        int
	p           fss.Params
	alpha, beta uint64 // bound: the pair's α and β; derived: β unless drawn
	deriveBeta  bool
	count       int // derived: keys (one bulk from 8 on)
	corr        msg.Correlation
	r           [2]*pb.KeyRequest
}

func boundReq(rng *rand.Rand, id uint64, p fss.Params) *req {
	ma, mb := prg.Mask(p.InBits), prg.Mask(p.OutBits)
	q := &req{id: id, kind: kBound, p: p, alpha: rng.Uint64() & ma, beta: rng.Uint64()&mb | 1}
	a0, b0 := rng.Uint64()&ma, rng.Uint64()&mb
	q.r[0] = client.Bound(id, 0, p, a0, b0)
	q.r[1] = client.Bound(id, 0, p, (q.alpha-a0)&ma, (q.beta-b0)&mb)
	return q
}

func derivedReq(rng *rand.Rand, id uint64, p fss.Params) *req {
	q := &req{id: id, kind: kDerived, p: p, deriveBeta: rng.IntN(2) == 0, beta: rng.Uint64()&prg.Mask(p.OutBits) | 1, count: 1}
	if q.deriveBeta {
		q.beta = 0
	}
	if rng.IntN(3) == 0 {
		q.count = 8 + rng.IntN(5) // a bulk (bulk.go's minBulk)
	}
	q.r[0] = client.Derived(id, p, q.count, q.beta, q.deriveBeta)
	q.r[1] = client.Derived(id, p, q.count, q.beta, q.deriveBeta)
	return q
}

func corrReq(id uint64, c msg.Correlation) *req {
	q := &req{id: id, kind: kCorr, corr: c}
	q.r[0], q.r[1] = client.Correlation(id, c), client.Correlation(id, c)
	return q
}

// randomReq draws one request of a random kind and shape.
func randomReq(rng *rand.Rand, id uint64) *req {
	typ := []fss.Type{fss.DPF, fss.DCF}[rng.IntN(2)]
	p := fss.Params{Type: typ, InBits: 8 + rng.IntN(9), OutBits: 8 + rng.IntN(9)}
	switch rng.IntN(8) {
	case 0:
		return corrReq(id, msg.Correlation{Kind: msg.CorrMatVec, Ring: 16, In: 2 + rng.IntN(3), Out: 1 + rng.IntN(3)})
	case 1, 2:
		return derivedReq(rng, id, p)
	}
	return boundReq(rng, id, p)
}

// oracle checks the honest site's replies (checks i–iv of issue 32).
type oracle struct {
	t testing.TB
	w *world
	// known: the test exercises an attack still open on this code
	// (attacks_test.go): its findings are counted apart. quiet: the
	// oracle's own test, whose findings are only listed.
	known, quiet bool

	mu        sync.Mutex
	delivered map[uint64]uint64 // counter → request id it was delivered for
	ranges    map[uint64][]rng  // request id → counters of the batches it was in (honest view)
	instance  map[uint64]*req   // request id → the request the honest application last asked under it
	found     []string          // violations
	unpaired  int               // outputs whose partner the adversary never collected
	corrs     []*msg.CorrShares // the correlation shares delivered (copies)
	classes   map[string]int    // the honest site's refusals, by class
	bound     time.Duration     // check (iv)'s bound (0: endBound)
	okBound   []*req            // bound requests delivered (one key each)
}

type rng struct{ first, n uint64 }

func newOracle(t testing.TB, known bool) *oracle {
	return &oracle{t: t, known: known, delivered: map[uint64]uint64{}, ranges: map[uint64][]rng{}, instance: map[uint64]*req{}}
}

func (o *oracle) violation(format string, args ...any) {
	s := fmt.Sprintf(format, args...)
	o.mu.Lock()
	o.found = append(o.found, s)
	o.mu.Unlock()
	switch {
	case o.quiet:
	case o.known:
		total.known.Add(1)
		o.t.Logf("known-open finding: %s", s)
	default:
		total.violations.Add(1)
		o.t.Errorf("violation: %s", s)
	}
}

func (o *oracle) findings() []string {
	o.mu.Lock()
	defer o.mu.Unlock()
	return append([]string(nil), o.found...)
}

func (o *oracle) endBound() time.Duration {
	if o.bound > 0 {
		return o.bound
	}
	return endBound
}

// sawBatch notes the counters of a batch as the honest site used it.
func (o *oracle) sawBatch(b *pb.Batch) {
	items := b.Items
	var ids []uint64
	var counts []uint32
	for _, it := range items {
		ids, counts = append(ids, it.GetId()), append(counts, it.GetCount())
	}
	if pk := b.GetPackedItems(); pk != nil && len(items) == 0 {
		ids = pk.Ids
		counts = pk.Counts
	}
	c := b.FirstCounter
	o.mu.Lock()
	defer o.mu.Unlock()
	for i, id := range ids {
		n := uint64(1)
		if i < len(counts) && counts[i] > 1 {
			n = uint64(counts[i])
		}
		o.ranges[id] = append(o.ranges[id], rng{c, n})
		c += n
	}
}

// newInstances starts check (iii)'s record afresh for each of qs that is
// another request than the one last asked under its id (an id reused for
// a fresh α once the first was answered): the frames opened for the
// earlier request are not frames of this one, whose α the site may call
// reusable. A resend of the same request (the same *req) keeps its record.
func (o *oracle) newInstances(qs []*req) {
	o.mu.Lock()
	defer o.mu.Unlock()
	for _, q := range qs {
		if prev := o.instance[q.id]; prev != nil && prev != q {
			delete(o.ranges, q.id)
		}
		o.instance[q.id] = q
	}
}

// honestOpened reports whether the honest module opened a frame at any
// counter of a batch id was in.
func (o *oracle) honestOpened(id uint64) bool {
	o.mu.Lock()
	rs := append([]rng(nil), o.ranges[id]...)
	o.mu.Unlock()
	for _, r := range rs {
		for c := r.first; c < r.first+r.n; c++ {
			if o.w.opens[o.w.honest].opened(c) {
				return true
			}
		}
	}
	return false
}

// ask has both applications ask for qs (each request concurrently, as
// independent applications would) and checks the honest site's replies.
// The adversary's replies are not checked (its site is not the one the
// properties protect); its requests are given up once the honest site
// has answered all of its own.
func (o *oracle) ask(qs []*req) { o.askAt(qs, [2]bool{true, true}) }

// askHonest has only the honest application ask for qs.
func (o *oracle) askHonest(qs []*req) {
	var at [2]bool
	at[o.w.honest] = true
	o.askAt(qs, at)
}

func (o *oracle) askAt(qs []*req, at [2]bool) {
	var hw, aw sync.WaitGroup
	h := o.w.honest
	if at[h] {
		o.newInstances(qs)
	}
	actx, acancel := context.WithTimeout(context.Background(), o.endBound())
	defer acancel()
	for _, q := range qs {
		for b := range 2 {
			if !at[b] {
				continue
			}
			app := o.w.app(b)
			if b != h {
				aw.Add(1)
				go func() {
					defer aw.Done()
					app.Get(actx, q.r[b])
				}()
				continue
			}
			hw.Add(1)
			go func() {
				defer hw.Done()
				ctx, cancel := context.WithTimeout(context.Background(), o.endBound())
				defer cancel()
				start := time.Now()
				rep, err := o.get(ctx, app, q.r[b])
				o.check(q, rep, err, time.Since(start))
			}()
		}
	}
	hw.Wait()
	// The adversary's side may still be answering a pair the honest
	// site finished: give it a moment, then give up.
	done := make(chan struct{})
	go func() { aw.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(200 * time.Millisecond):
		acancel()
		<-done
	}
}

// get is the honest application's request r: a unary Get, or, in a world
// with slabFDs, a stream of its own on the Unix socket that asks for
// slab_fds, so that a reply whose keys are a whole slab of the honest
// module's comes as that slab's memfd (the hand-off is under the checks).
func (o *oracle) get(ctx context.Context, app *client.Client, r *pb.KeyRequest) (*client.Reply, error) {
	if !o.w.opts.slabFDs {
		return app.Get(ctx, r)
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	st, err := app.Stream(ctx)
	if err != nil {
		return nil, err
	}
	if err := st.Send(r); err != nil {
		return nil, err
	}
	return st.Recv()
}

// check runs checks (i)–(iv) on the honest site's reply to q.
func (o *oracle) check(q *req, rep *client.Reply, err error, took time.Duration) {
	total.checks.Add(1)
	if err != nil {
		if status.Code(err) == codes.DeadlineExceeded || errors.Is(err, context.DeadlineExceeded) {
			o.violation("(iv) request %d did not end within %v", q.id, o.endBound())
			return
		}
		o.t.Logf("request %d: %v", q.id, err)
		return
	}
	if took > o.endBound() {
		o.violation("(iv) request %d took %v (bound %v)", q.id, took, o.endBound())
	}
	var re *client.ReplyError
	if errors.As(rep.Err, &re) {
		o.mu.Lock()
		if o.classes == nil {
			o.classes = map[string]int{}
		}
		o.classes[re.Class]++
		o.mu.Unlock()
		if q.kind == kBound && re.AlphaReusable() && o.honestOpened(q.id) {
			o.violation("(iii) request %d answered %q (α reusable) although the honest module opened a frame of it", q.id, re.Class)
		}
		return
	}
	if rep.Err != nil {
		o.violation("(ii) request %d: unreadable reply: %v", q.id, rep.Err)
		return
	}
	want := 1
	if q.kind == kDerived {
		want = q.count
	}
	if len(rep.Shares) != want {
		o.violation("(ii) request %d: %d outputs for %d keys", q.id, len(rep.Shares), want)
		return
	}
	for _, s := range rep.Shares {
		o.checkShare(q, s)
	}
	if q.kind == kBound {
		o.mu.Lock()
		o.okBound = append(o.okBound, q)
		o.mu.Unlock()
	}
}

// deliveredBound returns a bound request the honest site delivered, at
// random (nil: none yet).
func (o *oracle) deliveredBound(r *rand.Rand) *req {
	o.mu.Lock()
	defer o.mu.Unlock()
	if len(o.okBound) == 0 {
		return nil
	}
	return o.okBound[r.IntN(len(o.okBound))]
}

// checkShare checks one output of a reply to q: (i) its counters were
// never delivered before, (ii) it pairs with the adversary module's
// output at its counter as q's function.
func (o *oracle) checkShare(q *req, s client.Share) {
	n := uint64(1)
	if q.kind == kCorr {
		if s.Corr == nil {
			o.violation("(ii) request %d: a correlation reply without shares", q.id)
			return
		}
		b, _ := q.corr.Blocks()
		n = uint64(b)
	}
	o.mu.Lock()
	if s.Corr != nil {
		c := *s.Corr
		c.A, c.R, c.Z = append([]uint64(nil), c.A...), append([]uint64(nil), c.R...), append([]uint64(nil), c.Z...)
		o.corrs = append(o.corrs, &c)
	}
	var again []uint64 // the request it was delivered for before
	for c := s.Counter; c < s.Counter+n; c++ {
		if prev, ok := o.delivered[c]; ok && again == nil {
			again = []uint64{c, prev}
		}
		o.delivered[c] = q.id
	}
	o.mu.Unlock()
	if again != nil {
		o.violation("(i) the output at counter %d was delivered for request %d and again for request %d", again[0], again[1], q.id)
	}
	part, ok := o.w.adv.out(s.Counter)
	if !ok {
		o.mu.Lock()
		o.unpaired++
		o.mu.Unlock()
		return
	}
	if err := o.pairs(q, s, part); err != nil {
		o.violation("(ii) request %d (counter %d): %v", q.id, s.Counter, err)
	}
}

// pairs checks that the honest share s and the adversary module's output
// at the same counter are the two halves of q's function.
func (o *oracle) pairs(q *req, s client.Share, part output) error {
	h := o.w.honest
	if q.kind == kCorr {
		return corrPairs(q, s.Corr, part)
	}
	if part.corr != nil || len(part.key) == 0 {
		return fmt.Errorf("the peer module's output at this counter is not a key")
	}
	pk, err := fss.ParseKey(part.key)
	if err != nil {
		return fmt.Errorf("the peer module's key: %w", err)
	}
	if s.Key == nil {
		return fmt.Errorf("no key delivered")
	}
	if s.Key.Params() != q.p {
		return fmt.Errorf("a key of shape %v for a request of shape %v", s.Key.Params(), q.p)
	}
	ma, mb := prg.Mask(q.p.InBits), prg.Mask(q.p.OutBits)
	alpha, beta := q.alpha, q.beta
	if q.kind == kDerived {
		alpha = (s.AlphaShare + part.alpha) & ma
		beta = (s.BetaShare + part.beta) & mb
		if !q.deriveBeta && beta != q.beta {
			return fmt.Errorf("derived β %d, the request's β %d", beta, q.beta)
		}
	}
	k := [2]*fss.Key{}
	k[h], k[1-h] = s.Key, pk
	return fss.CheckPair(k[0], k[1], alpha, beta, alpha, (alpha+1)&ma, (alpha-1)&ma, rand.Uint64()&ma)
}

// corrPairs checks a correlation: both shares are of q's description
// with the same pair tag, and the product relation holds.
func corrPairs(q *req, c *msg.CorrShares, part output) error {
	if part.corr == nil {
		return fmt.Errorf("the peer module's output at this counter is not a correlation")
	}
	if c.Corr != q.corr || part.corr.Corr != q.corr {
		return fmt.Errorf("correlation of shape %+v here and %+v at the peer for a request of shape %+v", c.Corr, part.corr.Corr, q.corr)
	}
	if c.PairTag != part.corr.PairTag {
		return fmt.Errorf("the pair tags differ")
	}
	if q.corr.Kind != msg.CorrMatVec || q.corr.Part != msg.CorrFull {
		return nil
	}
	m := prg.Mask(q.corr.Ring)
	sum := func(x, y []uint64) []uint64 {
		out := make([]uint64, len(x))
		for i := range x {
			out[i] = (x[i] + y[i]) & m
		}
		return out
	}
	if len(c.A) != len(part.corr.A) || len(c.R) != len(part.corr.R) || len(c.Z) != len(part.corr.Z) {
		return fmt.Errorf("share sizes differ")
	}
	a, r, z := sum(c.A, part.corr.A), sum(c.R, part.corr.R), sum(c.Z, part.corr.Z)
	if len(a) != q.corr.In*q.corr.Out || len(r) != q.corr.In || len(z) != q.corr.Out {
		return fmt.Errorf("%d, %d, %d words of A, R, Z", len(a), len(r), len(z))
	}
	for i := range z {
		var want uint64
		for j := range r {
			want += a[i*q.corr.In+j] * r[j]
		}
		if want&m != z[i] {
			return fmt.Errorf("Z[%d] = %d, (A·R)[%d] = %d", i, z[i], i, want&m)
		}
	}
	return nil
}
