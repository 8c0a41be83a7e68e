package infer

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/kord-fss/kord/client"
	"github.com/kord-fss/kord/fss"
	"github.com/kord-fss/kord/gates"
	"github.com/kord-fss/kord/module/msg"
	pb "github.com/kord-fss/kord/proto/kordpb"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// DaemonSource is the deployment's key and correlation source for a
// process that runs both online parties (RunStream): it holds a client of
// each site's party daemon and sends every request the supplier makes —
// derived DCF keys (DerivedBatch), weight masks (Weights) and input
// correlations (Input) — to both daemons at once, under the same id (one
// counter for both), on one request stream per site. Each party's half of
// the answer is its own daemon's: the daemons' modules derive the keys and
// correlations together, nothing is generated in this process and nothing
// but the daemons' batch headers crosses between the sites.
//
// A key count over PerRequest (default 1024) goes as several requests, and
// a step's two kinds of keys (reluGen's, truncGen's) go together: one
// exchange per step, all its requests sent before any reply is read. The
// two halves are checked to pair (the same counters
// per key, the same counter and pair tag per correlation). An error names
// the request and the site; it also ends the source (both streams are
// cancelled and every later call fails with the same error), since the two
// sites' streams may then disagree on what was answered. An exchange
// whose replies stop coming for Timeout fails too, so a daemon that is
// alive but stuck (its module gone, the sites' link down) gives an error,
// not a hang.
//
// Calls are serialised (the supplier makes one at a time anyway).
// DaemonSource satisfies gates.BatchSource and CorrSource.
type DaemonSource struct {
	apps [2]*client.Client
	// PerRequest is the most keys of one request (0:
	// DefaultDaemonPerRequest; at most 4096, the daemons' limit,
	// service.MaxCount).
	PerRequest int
	// Timeout bounds the wait for the next reply while an exchange has
	// replies due, at either site (0: DefaultDaemonTimeout).
	Timeout time.Duration

	ctx     context.Context
	cancel  context.CancelFunc
	mu      sync.Mutex
	streams [2]*client.Stream
	bufs    [2][]byte // each site's key bytes on their way to fss.ParseKeys
	nextID  uint64
	err     error // sticky
	// counts, for reports
	requests, keys, corrs atomic.Int64
}

// DaemonSource's defaults: the longest wait for a reply (the slowest a
// healthy exchange waits is one correlation's computation or one batch of
// keys, about a second at ResNet-18's size on a loaded 2-core machine),
// and the keys per request (the party daemons' default batch: each request
// one batch of the daemons, and the first replies come back while later
// ones are still being generated).
const (
	DefaultDaemonTimeout    = 30 * time.Second
	DefaultDaemonPerRequest = 1024
)

var (
	_ gates.BatchSource = (*DaemonSource)(nil)
	_ CorrSource        = (*DaemonSource)(nil)
	_ multiSource       = (*DaemonSource)(nil)
)

// NewDaemonSource returns a source over the clients of party 0's and
// party 1's daemons (paired), its request ids from firstID on (0: 1).
// Requests stop when ctx ends; Close ends the streams.
func NewDaemonSource(ctx context.Context, apps [2]*client.Client, firstID uint64) (*DaemonSource, error) {
	if apps[0] == nil || apps[1] == nil {
		return nil, errors.New("infer: a daemon source needs a client of each site's party daemon")
	}
	if firstID == 0 {
		firstID = 1
	}
	d := &DaemonSource{apps: apps, nextID: firstID}
	d.ctx, d.cancel = context.WithCancel(ctx)
	return d, nil
}

// Close ends both request streams; later calls fail.
func (d *DaemonSource) Close() {
	d.mu.Lock()
	defer d.mu.Unlock()
	for _, s := range d.streams {
		if s != nil {
			_ = s.CloseSend()
		}
	}
	if d.err == nil {
		d.err = errors.New("infer: the daemon source is closed")
	}
	d.cancel()
}

// NextID is the id the next request will take.
func (d *DaemonSource) NextID() uint64 {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.nextID
}

// Counts returns the requests sent to each site so far, and the derived
// keys and correlations they asked for.
func (d *DaemonSource) Counts() (requests, keys, corrs int64) {
	return d.requests.Load(), d.keys.Load(), d.corrs.Load()
}

// siteReply is one site's answer to one request of an exchange: the keys
// (parsed, copies) with this site's α and β shares and counters, or the
// correlation shares (copies).
type siteReply struct {
	keys     []*fss.Key
	as, bs   []uint64
	counters []uint64
	corr     *msg.CorrShares
}

func (r *siteReply) wipe() {
	for _, k := range r.keys {
		if k != nil {
			k.Wipe()
		}
	}
	clear(r.as)
	clear(r.bs)
	r.corr.Wipe()
}

func wipeReplies(rs []siteReply) {
	for i := range rs {
		rs[i].wipe()
	}
}

// describe names request rq for an error.
func describe(rq *pb.KeyRequest) string {
	if rq.Corr != nil {
		return fmt.Sprintf("request %d (a correlation)", rq.Id)
	}
	return fmt.Sprintf("request %d (%d %s-%d→%d keys)", rq.Id, rq.Count, strings.ToLower(rq.Type), rq.InBits, rq.OutBits)
}

// exchange sends reqs (made by mk from the ids it is given) to both sites
// and returns each site's replies, in order. On any error the source ends.
func (d *DaemonSource) exchange(what string, n int, mk func(ids []uint64) []*pb.KeyRequest) (reqs []*pb.KeyRequest, out [2][]siteReply, err error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.err != nil {
		return nil, out, d.err
	}
	ids := make([]uint64, n)
	for i := range ids {
		ids[i] = d.nextID
		d.nextID++
	}
	reqs = mk(ids)
	fail := func(err error) ([]*pb.KeyRequest, [2][]siteReply, error) {
		wipeReplies(out[0])
		wipeReplies(out[1])
		d.err = err
		d.cancel() // the other site's stream stops too
		return nil, [2][]siteReply{}, err
	}
	for b := 0; b < 2; b++ {
		if d.streams[b] != nil {
			continue
		}
		st, err := d.apps[b].Stream(d.ctx)
		if err != nil {
			return fail(fmt.Errorf("infer: %s: opening a request stream to site %d's party daemon: %w", what, b, err))
		}
		d.streams[b] = st
	}
	timeout := d.Timeout
	if timeout <= 0 {
		timeout = DefaultDaemonTimeout
	}
	// the watchdog: a reply at either site is progress
	var timedOut atomic.Bool
	var last atomic.Int64
	var answered [2]atomic.Int64 // replies received, per site
	last.Store(time.Now().UnixNano())
	done := make(chan struct{})
	go func() {
		tick := time.NewTicker(max(timeout/8, time.Millisecond))
		defer tick.Stop()
		for {
			select {
			case <-done:
				return
			case now := <-tick.C:
				if now.Sub(time.Unix(0, last.Load())) > timeout {
					timedOut.Store(true)
					d.cancel()
					return
				}
			}
		}
	}()
	var errs [2]error
	var wg sync.WaitGroup
	for b := 0; b < 2; b++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			out[b], errs[b] = d.site(b, reqs, &last, &answered[b])
			if errs[b] != nil {
				d.cancel() // no use waiting for the other site
			}
		}()
	}
	wg.Wait()
	close(done)
	d.requests.Add(int64(len(reqs)))
	if timedOut.Load() {
		b := 0 // the site further behind
		if answered[1].Load() < answered[0].Load() {
			b = 1
		}
		waiting := describe(reqs[min(int(answered[b].Load()), len(reqs)-1)])
		return fail(fmt.Errorf("infer: %s: site %d: waiting for %s: no reply from the party daemons for %v", what, b, waiting, timeout))
	}
	// the site whose error is not the other's cancellation is the cause
	for b := 0; b < 2; b++ {
		if errs[b] != nil && !errors.Is(errs[b], context.Canceled) && status.Code(errs[b]) != codes.Canceled {
			return fail(fmt.Errorf("infer: %s: site %d: %w", what, b, errs[b]))
		}
	}
	if errs[0] != nil || errs[1] != nil {
		b := 0
		if errs[0] == nil {
			b = 1
		}
		return fail(fmt.Errorf("infer: %s: site %d: %w", what, b, errs[b]))
	}
	// both halves must pair
	for i, rq := range reqs {
		r0, r1 := &out[0][i], &out[1][i]
		if rq.Corr != nil {
			if r0.corr.Counter != r1.corr.Counter || r0.corr.PairTag != r1.corr.PairTag {
				return fail(fmt.Errorf("infer: %s: %s: the two sites' correlation shares do not pair", what, describe(rq)))
			}
			continue
		}
		if !slices.Equal(r0.counters, r1.counters) {
			return fail(fmt.Errorf("infer: %s: %s: the two sites' keys do not pair (counters differ)", what, describe(rq)))
		}
	}
	return reqs, out, nil
}

// site sends reqs on site b's stream and reads their replies, noting the
// time of each received batch in last and the replies taken in answered.
func (d *DaemonSource) site(b int, reqs []*pb.KeyRequest, last, answered *atomic.Int64) ([]siteReply, error) {
	st := d.streams[b]
	if err := st.SendBatch(reqs); err != nil {
		if errors.Is(err, io.EOF) { // the stream broke: its status says why
			if bt, rerr := st.RecvBatch(); rerr != nil {
				err = rerr
			} else {
				bt.Release()
			}
		}
		return nil, fmt.Errorf("sending %s and %d more: %w", describe(reqs[0]), len(reqs)-1, err)
	}
	out := make([]siteReply, 0, len(reqs))
	buf := d.bufs[b] // kept across exchanges: a step's keys go through it
	defer func() { clear(buf); d.bufs[b] = buf[:0] }()
	for len(out) < len(reqs) {
		bt, err := st.RecvBatch()
		if err != nil {
			wipeReplies(out)
			return nil, fmt.Errorf("waiting for %s: %w", describe(reqs[len(out)]), err)
		}
		last.Store(time.Now().UnixNano())
		buf, err = takeReplies(bt, reqs, &out, buf)
		bt.Release()
		answered.Store(int64(len(out)))
		if err != nil {
			wipeReplies(out)
			return nil, err
		}
	}
	return out, nil
}

// takeReplies copies the replies of one received batch, for the requests
// after those in *out, out of the batch's memory (keys parsed together
// with fss.ParseKeys, correlations copied).
func takeReplies(bt client.Batch, reqs []*pb.KeyRequest, out *[]siteReply, buf []byte) ([]byte, error) {
	for r := 0; r < bt.Replies(); r++ {
		got := len(*out)
		if got >= len(reqs) {
			return buf, errors.New("the daemon sent more replies than requests")
		}
		rq, rep := reqs[got], bt.Reply(r)
		if rep.Err != nil {
			return buf, fmt.Errorf("%s: %w", describe(rq), rep.Err)
		}
		if rep.ID != rq.Id {
			return buf, fmt.Errorf("%s: the daemon answered request %d instead", describe(rq), rep.ID)
		}
		if rq.Corr != nil {
			c := bt.Corr(rep.First)
			if rep.N != 1 || c == nil {
				return buf, fmt.Errorf("%s: the reply holds no correlation", describe(rq))
			}
			own := *c
			own.A, own.R, own.Z = slices.Clone(c.A), slices.Clone(c.R), slices.Clone(c.Z)
			*out = append(*out, siteReply{corr: &own})
			continue
		}
		if rep.N != int(rq.Count) || rep.N == 0 {
			return buf, fmt.Errorf("%s: %d keys in the reply", describe(rq), rep.N)
		}
		stride := bt.Key(rep.First).Params().KeySize()
		buf = slices.Grow(buf[:0], rep.N*stride)
		sr := siteReply{as: make([]uint64, rep.N), bs: make([]uint64, rep.N), counters: make([]uint64, rep.N)}
		for i := 0; i < rep.N; i++ {
			v := bt.Key(rep.First + i)
			if len(v.Bytes()) != stride {
				return buf, fmt.Errorf("%s: key %d is not of the request's shape", describe(rq), i)
			}
			buf = append(buf, v.Bytes()...)
			sr.as[i], sr.bs[i], sr.counters[i] = bt.AlphaShare(rep.First+i), bt.BetaShare(rep.First+i), bt.Counter(rep.First+i)
		}
		keys, err := fss.ParseKeys(buf, stride, rep.N)
		clear(buf)
		if err != nil {
			return buf, fmt.Errorf("%s: %w", describe(rq), err)
		}
		sr.keys = keys
		*out = append(*out, sr)
	}
	return buf, nil
}

// KeysPerRequest is the number of keys each request asks for: PerRequest,
// DefaultDaemonPerRequest for 0, at most the largest request.
func (d *DaemonSource) KeysPerRequest() int { return d.perRequest() }

func (d *DaemonSource) perRequest() int {
	if d.PerRequest <= 0 {
		return DefaultDaemonPerRequest
	}
	if d.PerRequest > maxKeysPerRequest {
		return maxKeysPerRequest
	}
	return d.PerRequest
}

// DerivedBatch asks both daemons for n derived key pairs of shape p (β = 1
// unless wantBeta), as requests of at most PerRequest keys.
func (d *DaemonSource) DerivedBatch(p fss.Params, n int, wantBeta bool) (keys [2][]*fss.Key, as, bs [2][]uint64, err error) {
	out, err := d.derivedBatches([]derivedAsk{{p, n, wantBeta}})
	if err != nil {
		return keys, as, bs, err
	}
	return out[0].k, out[0].as, out[0].bs, nil
}

// derivedBatches asks both daemons for several batches of derived keys in
// one exchange (a step's two kinds of keys: one round trip, not two).
func (d *DaemonSource) derivedBatches(asks []derivedAsk) ([]derivedKeys, error) {
	out := make([]derivedKeys, len(asks))
	per := d.perRequest()
	nreq, total := 0, 0
	var what []string
	for _, a := range asks {
		if a.n > 0 {
			nreq += (a.n + per - 1) / per
			total += a.n
			beta := "β = 1"
			if a.wantBeta {
				beta = "β drawn"
			}
			what = append(what, fmt.Sprintf("%d derived %s keys (%s)", a.n, keyKind(a.p), beta))
		}
	}
	if nreq == 0 {
		return out, nil
	}
	desc := strings.Join(what, " and ")
	reqs, got, err := d.exchange(desc, nreq, func(ids []uint64) []*pb.KeyRequest {
		rs := make([]*pb.KeyRequest, 0, len(ids))
		for _, a := range asks {
			beta := uint64(1)
			if a.wantBeta {
				beta = 0
			}
			for lo := 0; lo < a.n; lo += per {
				rs = append(rs, client.Derived(ids[len(rs)], a.p, min(per, a.n-lo), beta, a.wantBeta))
			}
		}
		return rs
	})
	if err != nil {
		return nil, err
	}
	for b := 0; b < 2; b++ {
		r := 0 // the next request's reply
		for i, a := range asks {
			o := &out[i]
			o.k[b], o.as[b], o.bs[b] = make([]*fss.Key, 0, a.n), make([]uint64, 0, a.n), make([]uint64, 0, a.n)
			for lo := 0; lo < a.n; lo += per {
				sr := &got[b][r]
				for _, k := range sr.keys {
					if k.Params() != a.p {
						wipeReplies(got[0])
						wipeReplies(got[1])
						return nil, fmt.Errorf("infer: %s: %s: a key of shape %v", desc, describe(reqs[r]), k.Params())
					}
				}
				o.k[b] = append(o.k[b], sr.keys...)
				o.as[b] = append(o.as[b], sr.as...)
				o.bs[b] = append(o.bs[b], sr.bs...)
				clear(sr.as)
				clear(sr.bs)
				r++
			}
		}
	}
	d.keys.Add(int64(total))
	return out, nil
}

// Derived is DerivedBatch of one key.
func (d *DaemonSource) Derived(p fss.Params, wantBeta bool) (k [2]*fss.Key, as, bs [2]uint64, err error) {
	ks, a, bt, err := d.DerivedBatch(p, 1, wantBeta)
	if err != nil {
		return k, as, bs, err
	}
	for b := 0; b < 2; b++ {
		k[b], as[b], bs[b] = ks[b][0], a[b][0], bt[b][0]
	}
	return k, as, bs, nil
}

// Bound is refused: the streamed evaluation asks for derived keys only
// (a bound key would have this process hold both parties' shares of α).
func (d *DaemonSource) Bound(fss.Params, [2]uint64, [2]uint64) ([2]*fss.Key, error) {
	return [2]*fss.Key{}, errors.New("infer: the daemon source serves derived keys only")
}

// BoundBatch is refused, as Bound.
func (d *DaemonSource) BoundBatch(fss.Params, [2][]uint64, [2][]uint64) ([2][]*fss.Key, error) {
	return [2][]*fss.Key{}, errors.New("infer: the daemon source serves derived keys only")
}

// corr asks both daemons for correlation c and returns both sites' shares.
func (d *DaemonSource) corr(what string, c msg.Correlation) ([2]*msg.CorrShares, error) {
	_, out, err := d.exchange(what, 1, func(ids []uint64) []*pb.KeyRequest {
		return []*pb.KeyRequest{client.Correlation(ids[0], c)}
	})
	if err != nil {
		return [2]*msg.CorrShares{}, err
	}
	d.corrs.Add(1)
	return [2]*msg.CorrShares{out[0][0].corr, out[1][0].corr}, nil
}

// Weights asks both daemons for a kept weight mask for layer l
// (msg.CorrWeight); its handle is the modules' counter.
func (d *DaemonSource) Weights(l *Layer, in Shape, ring int) (*WeightMask, error) {
	c, err := corrShape(l, in, ring)
	if err != nil {
		return nil, err
	}
	c.Part = msg.CorrWeight
	sh, err := d.corr(fmt.Sprintf("weight mask of a %v layer", l.Kind), c)
	if err != nil {
		return nil, err
	}
	return &WeightMask{Handle: sh[0].Counter, A: [2][]uint64{sh[0].A, sh[1].A}}, nil
}

// Input asks both daemons for a fresh input correlation against weight
// mask w (msg.CorrInput).
func (d *DaemonSource) Input(w *WeightMask, l *Layer, in Shape, ring int) ([2]*LinearCorr, error) {
	var out [2]*LinearCorr
	c, err := inputCorr(w, l, in, ring)
	if err != nil {
		return out, err
	}
	sh, err := d.corr(fmt.Sprintf("input correlation of a %v layer", l.Kind), c)
	if err != nil {
		return out, err
	}
	for b := 0; b < 2; b++ {
		out[b] = &LinearCorr{R: sh[b].R, Z: sh[b].Z}
	}
	return out, nil
}
