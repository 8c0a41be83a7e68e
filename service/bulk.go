package service

import (
	"errors"
	"fmt"
	"hash"

	"github.com/kord-fss/kord/module"
	"github.com/kord-fss/kord/module/msg"
	"github.com/kord-fss/kord/module/socket"
	pb "github.com/kord-fss/kord/proto/kordpb"
)

// Bulk batches (issue 19, bulk transport): in a session whose party 1 said
// it reads Batch.runs (HelloReply.bulk), a batch goes to each module as a
// few requests instead of one request per key: every maximal run of bound
// or derived items of one shape (and, derived, one β rule) is one
// msg.Bulk — one counter reservation, one frame each way (the
// concatenation of the per-key frames' bytes, so each tier's wire bytes
// are unchanged), one slab of keys at a fixed stride — and a run of
// consume items goes the per-key path (packed shares, a range collect).
// Party 0 sends the split with the batch (Batch.runs); party 1 derives it
// from the items itself (bulkRuns) and refuses a batch whose runs differ,
// before claiming anything. The pair digest is over the outputs' pair tags
// in counter order exactly as on the per-key path, so recovery's recorded
// digests stay comparable. A batch without runs is one per-key segment:
// the path of a session with a party 1 that predates runs.

// A correlation item (ItemCorrelation) is a run and a segment of its own:
// one msg.SubmitCorrelation, n = the counters it takes, one correlation
// collect, its one pair tag in the digest. Nothing of it crosses between
// the sites but its item in the batch header.

// segment is one module request of a batch: jobs [j0, j1), n keys (a
// correlation: n counters).
type segment struct {
	j0, j1 int
	n      int
	bulk   bool
	corr   bool // one correlation job
	// frames: how many frames this site's module produced for it (set
	// once submitted); the peer's module produces as many.
	frames int
}

// bulkKey is what the items of one bulk run share.
type bulkKey struct {
	mode, typ, in, out uint32
	deriveBeta         bool
	beta               uint64
	group              uint32 // a payload vector's (such an item is a run of its own)
}

func bulkKeyOf(it *pb.BatchItem) (bulkKey, bool) {
	m := msg.Mode(it.GetMode())
	if m != msg.Bound && m != msg.Derived {
		return bulkKey{}, false
	}
	return bulkKey{mode: it.GetMode(), typ: it.GetType(), in: it.GetInBits(), out: it.GetOutBits(),
		deriveBeta: it.GetDeriveBeta(), beta: it.GetBeta(), group: it.GetGroup()}, true
}

// vecItem reports whether an item's payload is a vector (group ≥ 2): the
// module makes such keys only as a bulk, so the item is a bulk run of its
// own, whatever its key count, on both the runs and the per-key split.
func vecItem(it *pb.BatchItem) bool { return it.GetGroup() > 1 }

func itemKeys(it *pb.BatchItem) int { return int(max(it.GetCount(), 1)) }

// minBulk is the fewest keys a run needs to go as a bulk: a bulk costs
// its module a counter commit and a slab of its own, which a run of a few
// keys does not earn back; shorter runs join the per-key requests around
// them.
const minBulk = 8

// bulkRuns splits a batch's items into runs, in item order: a maximal run
// of bound or derived items of one bulkKey (at most msg.MaxBulk keys,
// at least minBulk) is one bulk; the items between bulks (consume items,
// and short runs) form one per-key request each. It returns the items per
// run. Both parties compute it from the same items, so they agree on the
// split (isBulkRun tells the kinds apart).
func bulkRuns(items []*pb.BatchItem) []uint32 {
	type run struct {
		n    uint32
		bulk bool
		corr bool // a correlation: never joined with another run
	}
	var raw []run
	var cur bulkKey
	curOK, keys := false, 0
	for i, it := range items {
		if it.GetCorr() != nil {
			raw = append(raw, run{n: 1, corr: true})
			curOK = false
			continue
		}
		if vecItem(it) {
			raw = append(raw, run{n: 1, bulk: true, corr: true}) // never joined
			curOK = false
			continue
		}
		k, ok := bulkKeyOf(it)
		n := itemKeys(it)
		if i > 0 && ok && curOK && k == cur && keys+n <= msg.MaxBulk {
			raw[len(raw)-1].n++
			keys += n
			raw[len(raw)-1].bulk = keys >= minBulk
			continue
		}
		raw = append(raw, run{n: 1, bulk: ok && n >= minBulk})
		cur, curOK, keys = k, ok, n
	}
	var runs []uint32
	prevBulk := true
	for _, r := range raw {
		if !r.bulk && !r.corr && !prevBulk {
			runs[len(runs)-1] += r.n
		} else {
			runs = append(runs, r.n)
		}
		prevBulk = r.bulk || r.corr
	}
	return runs
}

// isBulkRun tells which runs of bulkRuns are bulks: those whose items
// share one bulkKey and hold at least minBulk keys (a per-key run never
// does: it is a short run, consume items, or short runs of different
// shapes).
func isBulkRun(items []*pb.BatchItem) bool {
	if vecItem(items[0]) {
		_, ok := bulkKeyOf(items[0])
		return ok && len(items) == 1
	}
	k0, ok := bulkKeyOf(items[0])
	keys := 0
	for _, it := range items {
		if k, ok := bulkKeyOf(it); !ok || k != k0 {
			return false
		}
		keys += itemKeys(it)
	}
	return ok && keys >= minBulk
}

// equalRuns reports whether two splits are the same.
func equalRuns(a, b []uint32) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// segmentsOf lays runs (nil: none, the per-key path) over jobs; the runs
// must cover the jobs exactly (bulkRuns of their items).
func segmentsOf(jobs []*job, runs []uint32) []segment {
	if len(runs) == 0 {
		return perKeySegments(jobs)
	}
	segs := make([]segment, 0, len(runs))
	at := 0
	for _, r := range runs {
		s := segment{j0: at, j1: at + int(r)}
		for _, j := range jobs[s.j0:s.j1] {
			s.n += j.keys()
		}
		if r == 1 && jobs[s.j0].corr != nil {
			s.corr = true
			segs = append(segs, s)
			at = s.j1
			continue
		}
		items := make([]*pb.BatchItem, 0, s.j1-s.j0)
		for _, j := range jobs[s.j0:s.j1] {
			items = append(items, j.item)
		}
		s.bulk = isBulkRun(items)
		segs = append(segs, s)
		at = s.j1
	}
	return segs
}

// perKeySegments is the split of a batch without runs: one per-key
// segment, except that each correlation job is a segment of its own.
func perKeySegments(jobs []*job) []segment {
	var segs []segment
	s := segment{}
	for i, j := range jobs {
		if j.corr == nil && j.group < 2 {
			s.n += j.keys()
			s.j1 = i + 1
			continue
		}
		if s.j1 > s.j0 {
			segs = append(segs, s)
		}
		// A correlation, or a payload vector (a bulk of its own).
		segs = append(segs, segment{j0: i, j1: i + 1, n: j.keys(), corr: j.corr != nil, bulk: j.group > 1})
		s = segment{j0: i + 1, j1: i + 1}
	}
	if s.j1 > s.j0 || len(segs) == 0 {
		segs = append(segs, s)
	}
	return segs
}

// submitCalls appends the module calls submitting a batch's segments under
// tier. wipe clears the shares they carry once sent.
func submitCalls(calls []socket.Call, jobs []*job, segs []segment, tier msg.Tier) (_ []socket.Call, wipe func()) {
	var bulks []*msg.Bulk
	var shares [][]msg.Share
	for _, s := range segs {
		if s.corr {
			calls = append(calls, socket.Call{Submit: &msg.SubmitRequest{Kind: msg.SubmitCorrelation, Corr: jobs[s.j0].corr}})
			continue
		}
		if !s.bulk {
			sh := make([]msg.Share, 0, s.n)
			for _, j := range jobs[s.j0:s.j1] {
				if j.derived > 0 {
					for range j.derived {
						sh = append(sh, j.shares[0])
					}
					continue
				}
				sh = append(sh, j.shares...)
			}
			shares = append(shares, sh)
			calls = append(calls, socket.Call{Submit: &msg.SubmitRequest{Kind: msg.SubmitShares, Tier: tier, Shares: sh}})
			continue
		}
		b := bulkOf(jobs[s.j0], s.n)
		if b.Mode == msg.Bound {
			b.AlphaShares, b.BetaShares = make([]uint64, 0, s.n), make([]uint64, 0, s.n*b.G())
			for _, j := range jobs[s.j0:s.j1] {
				appendBulkShares(b, j)
			}
		}
		bulks = append(bulks, b)
		calls = append(calls, socket.Call{Submit: &msg.SubmitRequest{Kind: msg.SubmitBulk, Tier: tier, Bulk: b}})
	}
	return calls, func() {
		for _, b := range bulks {
			clear(b.AlphaShares)
			clear(b.BetaShares)
		}
		for _, sh := range shares {
			clear(sh)
		}
	}
}

// failRefusedCorrs answers bad_request the correlation job whose
// submission the module refused, if the first refusal of res is one: a
// refusal that comes from the module's state (an input correlation
// against a weight mask it does not keep, e.g. after it restarted) and
// would come again on every retry. It returns the other jobs (to go back
// in the queue).
func failRefusedCorrs(res []socket.Result, segs []segment, jobs []*job) []*job {
	for i := 0; i < len(res) && i < len(segs); i++ {
		err := res[i].Err
		if err == nil {
			continue
		}
		if !segs[i].corr || !errors.Is(err, module.ErrBadRequest) {
			return jobs
		}
		bad := jobs[segs[i].j0]
		bad.fail(ErrClassBadRequest, "correlation refused by the module: %v (weight masks are kept until a module restarts or more than %d are kept: draw a new one)", err, module.MaxWeights)
		rest := make([]*job, 0, len(jobs)-1)
		for _, j := range jobs {
			if j != bad {
				rest = append(rest, j)
			}
		}
		return rest
	}
	return jobs
}

// submitted reads the results of submitCalls (one per segment): the
// batch's first counter and key count, its own frames (all segments'
// frames concatenated, in order), and each segment's frame count. The
// segments must have taken consecutive counters.
func submitted(res []socket.Result, segs []segment) (first uint64, count int, frames socket.Frames, err error) {
	if len(res) != len(segs) {
		return 0, 0, frames, fmt.Errorf("%d results for %d submissions", len(res), len(segs))
	}
	for i := range segs {
		r := res[i]
		if r.Err != nil {
			return 0, 0, frames, r.Err
		}
		sub := r.Submit
		want := segs[i].n
		if segs[i].corr {
			want = 1 // one correlation, over n counters
		}
		if sub == nil || sub.Count != want {
			return 0, 0, frames, fmt.Errorf("%w: the module took %d keys of a submission of %d", errDesync, subCount(sub), want)
		}
		if i == 0 {
			first = sub.FirstCounter
		} else if sub.FirstCounter != first+uint64(count) {
			return 0, 0, frames, fmt.Errorf("%w: the module assigned counter %d to part %d of the batch, expected %d", errDesync, sub.FirstCounter, i, first+uint64(count))
		}
		count += segs[i].n
		segs[i].frames = r.Packed.Count()
		if len(segs) == 1 {
			frames = r.Packed
			continue
		}
		frames.Data = append(frames.Data, r.Packed.Data...)
		frames.Lens = append(frames.Lens, r.Packed.Lens...)
	}
	return first, count, frames, nil
}

func subCount(s *msg.SubmitResponse) int {
	if s == nil {
		return 0
	}
	return s.Count
}

// finishCalls lists the module calls that finish a batch: the peer's
// frames (one call for all), then one collect per segment — a slab for a
// bulk, a range for the others.
func finishCalls(calls []socket.Call, frames socket.Frames, jobs []*job, segs []segment, first uint64) []socket.Call {
	if frames.Count() > 0 {
		calls = append(calls, socket.Call{Frames: &frames})
	}
	c := first
	for _, s := range segs {
		if s.corr {
			calls = append(calls, socket.Call{Collect: &msg.CollectRequest{Counter: c, Corr: true}})
			c += uint64(s.n)
			continue
		}
		if s.bulk {
			calls = append(calls, socket.Call{Collect: &msg.CollectRequest{Counter: c, Count: s.n}})
			c += uint64(s.n)
			continue
		}
		r := &socket.CollectRange{First: c, Count: s.n}
		consume := false
		for _, j := range jobs[s.j0:s.j1] {
			consume = consume || j.points != nil
		}
		if consume {
			r.Points = make([][]uint64, 0, s.n)
			for _, j := range jobs[s.j0:s.j1] {
				for range j.keys() {
					r.Points = append(r.Points, j.points)
				}
			}
		}
		calls = append(calls, socket.Call{Range: r})
		c += uint64(s.n)
	}
	return calls
}

// collected gathers each job's outputs from the collect results of
// finishCalls (one per segment) and writes their pair tags, in counter
// order, to h. A slab's keys stay where the socket read them: each job's
// outputs are views of it (job.keyBuf). A slab of one-element keys makes
// no record per key: each job's outputs are its view of the slab
// (job.vn..., its entry in the result nil), whose mask shares the job
// wipes once replied; a payload vector's slab's mask shares are wiped once
// copied into its records.
func collected(res []socket.Result, jobs []*job, segs []segment, first uint64, h hash.Hash) ([][]msg.CollectResponse, error) {
	if len(res) != len(segs) {
		return nil, fmt.Errorf("%w: %d results for %d collects", errDesync, len(res), len(segs))
	}
	// A bulk segment of one-element keys is read in place (the jobs'
	// views of its slab): only the other segments' outputs are records.
	n := 0
	for _, s := range segs {
		switch {
		case s.corr:
			n++ // one record, whatever the counters (blocks) it took
		case !s.bulk || jobs[s.j0].group > 1:
			n += s.n
		}
	}
	for _, j := range jobs {
		j.clearView()
	}
	all := make([]msg.CollectResponse, 0, n)
	out := make([][]msg.CollectResponse, len(jobs))
	var starts [][2]int // the segments with records: index, first record
	var err error
	// allPooled: every segment is a slab whose jobs hold the response
	// buffer, so the results' own reference can go.
	allPooled := len(res) > 0
	c := first
	for si, s := range segs {
		r := res[si]
		if r.Err != nil {
			err = fmt.Errorf("%w: collect: %v", errDesync, r.Err)
			break
		}
		k0 := len(all)
		viewed := false
		switch {
		case s.corr:
			allPooled = false
			var sh *msg.CorrShares
			if r.Collect != nil {
				sh = r.Collect.Corr
			}
			j := jobs[s.j0]
			if sh == nil || sh.Counter != c || sh.Blocks != s.n || sh.Corr != *j.corr {
				sh.Wipe()
				err = fmt.Errorf("%w: collect: the module answered with another correlation than the one at counter %d", errDesync, c)
			} else {
				all = append(all, msg.CollectResponse{Counter: c, Corr: sh, PairTag: sh.PairTag})
				h.Write(sh.PairTag[:])
				j.keyBuf, j.keyOff, j.slabFirst, j.slabN, j.slab = nil, 0, 0, 0, nil
			}
		case s.bulk:
			sl := (*msg.Slab)(nil)
			if r.Collect != nil {
				sl = r.Collect.Slab
			}
			if sl == nil || sl.First != c || sl.N != s.n {
				socket.WipeSlab(sl)
				err = fmt.Errorf("%w: collect: the module answered with another slab than counters %d+%d", errDesync, c, s.n)
				break
			}
			if viewed = viewable(sl); viewed {
				k := 0
				for ji := s.j0; ji < s.j1; ji++ {
					j := jobs[ji]
					m := j.keys()
					j.vn, j.vFirst, j.vMode, j.vStride = m, sl.First+uint64(k), sl.Mode, sl.Stride
					j.vTags = sl.PairTags[k*msg.PairTagSize : (k+m)*msg.PairTagSize : (k+m)*msg.PairTagSize]
					if len(sl.AlphaShares) == sl.N {
						j.vAlpha, j.vBeta = sl.AlphaShares[k:k+m:k+m], sl.BetaShares[k:k+m:k+m]
					}
					k += m
				}
			} else {
				all = appendSlab(all, sl)
			}
			h.Write(sl.PairTags)
			off := 0
			for ji := s.j0; ji < s.j1; ji++ {
				j := jobs[ji]
				j.keyBuf, j.keyOff, j.slabFirst, j.slabN, j.slab = sl.Keys, off, sl.First, sl.N, nil
				if r.Buf == nil {
					j.slab = sl
				}
				off += j.keys() * sl.Stride
			}
			if r.Buf != nil && off == len(sl.Keys) {
				// Each job holds the pooled buffer until its part of
				// the slab is wiped (job.wipeOutputs, or the codec once
				// a lent reply is written): the buffer's last release
				// then wipes only the rest of it.
				off = 0
				for ji := s.j0; ji < s.j1; ji++ {
					j := jobs[ji]
					n := j.keys() * sl.Stride
					r.Buf.Hold()
					j.keyRef, j.keyRegion = r.Buf, sl.Keys[off:off+n:off+n]
					off += n
				}
				r.Buf.KeysWiped(sl.Keys)
			} else if socket.IsMapped(sl.Keys) {
				// A mapped slab lives only as long as its references.
				err = fmt.Errorf("%w: collect: the jobs do not cover the slab at counter %d", errDesync, c)
			} else {
				allPooled = false
			}
		default:
			allPooled = false
			if len(r.Range) != s.n {
				wipeOutputs(r.Range)
				err = fmt.Errorf("%w: collect: %d outputs for %d keys", errDesync, len(r.Range), s.n)
				break
			}
			all = append(all, r.Range...)
			for i := range r.Range {
				h.Write(r.Range[i].PairTag[:])
			}
			for _, j := range jobs[s.j0:s.j1] {
				j.keyBuf, j.keyOff, j.slabFirst, j.slabN, j.slab = nil, 0, 0, 0, nil
			}
		}
		if err != nil {
			break
		}
		if !viewed {
			starts = append(starts, [2]int{si, k0})
		}
		c += uint64(s.n)
	}
	if err == nil {
		// The records' slices are taken once all is whole (an append
		// past its capacity moves it, and only all is wiped on error).
		for _, st := range starts {
			s, k := segs[st[0]], st[1]
			for ji := s.j0; ji < s.j1; ji++ {
				m := jobs[ji].keys()
				if jobs[ji].corr != nil {
					m = 1
				}
				out[ji] = all[k : k+m : k+m]
				k += m
			}
		}
	}
	if err != nil {
		// The jobs' references, if any, stay taken: the buffer goes to
		// the garbage collector, wiped here.
		wipeOutputs(all)
		wipeResults(res)
		for _, j := range jobs {
			j.clearView() // the slabs' parts, wiped with the results
		}
		releaseMapped(res)
		return nil, err
	}
	if allPooled {
		released := map[*socket.RecvBuf]bool{}
		for _, r := range res {
			if r.Buf != nil && !released[r.Buf] {
				released[r.Buf] = true
				r.Buf.Release()
			}
		}
	}
	return out, nil
}

// wipeResults clears the outputs in collect results that will not be
// delivered.
func wipeResults(res []socket.Result) {
	for _, r := range res {
		if r.Collect != nil {
			socket.WipeSlab(r.Collect.Slab)
			clear(r.Collect.Key)
			r.Collect.Corr.Wipe()
		}
		wipeOutputs(r.Range)
	}
}

// viewable reports whether a slab's outputs can be read in place (job
// views, collected): one-element keys, pair tags for each, and this
// site's mask shares for each key or none.
func viewable(sl *msg.Slab) bool {
	a, b := len(sl.AlphaShares), len(sl.BetaShares)
	return sl.Group <= 1 && len(sl.PairTags) == sl.N*msg.PairTagSize && len(sl.Keys) == sl.N*sl.Stride &&
		(a == 0 && b == 0 || a == sl.N && b == sl.N)
}

// appendSlab appends a slab's outputs to dst, keys as views of the slab,
// and wipes the slab's mask shares (copied into the outputs).
func appendSlab(dst []msg.CollectResponse, sl *msg.Slab) []msg.CollectResponse {
	shares := len(sl.AlphaShares) == sl.N
	g := max(sl.Group, 1)
	var vec []uint64 // a payload vector's β shares, copied out of the slab
	if shares && g > 1 {
		vec = append([]uint64(nil), sl.BetaShares...)
	}
	for i := 0; i < sl.N; i++ {
		o := msg.CollectResponse{Counter: sl.First + uint64(i), Mode: sl.Mode, Key: sl.Key(i),
			PairTag: [msg.PairTagSize]byte(sl.PairTags[i*msg.PairTagSize:])}
		if shares {
			o.AlphaShare = sl.AlphaShares[i]
			if g == 1 {
				o.BetaShare = sl.BetaShares[i]
			} else {
				o.BetaShares = vec[i*g : (i+1)*g : (i+1)*g]
			}
		}
		dst = append(dst, o)
	}
	clear(sl.AlphaShares)
	clear(sl.BetaShares)
	return dst
}

// wipeOutputs clears outputs that will not be delivered.
func wipeOutputs(outs []msg.CollectResponse) {
	for i := range outs {
		socket.WipeKeys(outs[i].Key)
		clear(outs[i].Evals)
		clear(outs[i].BetaShares)
		outs[i].AlphaShare, outs[i].BetaShare = 0, 0
		outs[i].Corr.Wipe()
	}
}

// outputs checks the frame result of finishCalls and gathers each job's
// outputs (views of the collect results, no copy) and the batch's pair
// digest: SHA-256 over the pair tags of its outputs, in counter order. The
// peer's modules give the peer the same digest exactly when every output
// of the batch is one share of the same key pair as the peer's
// (docs/protocol.md, "Pair tags"); and the batch's confirmation hash
// (confirm.go). It returns an error if a frame was refused.
func outputs(res []socket.Result, frames socket.Frames, jobs []*job, segs []segment, first uint64) ([][]msg.CollectResponse, []byte, []byte, error) {
	if frames.Count() > 0 {
		r := res[0]
		res = res[1:]
		if r.Err != nil {
			wipeResults(res)
			return nil, nil, nil, fmt.Errorf("%w: peer frames: %v", errDesync, r.Err)
		}
		if r.Frames.Accepted != frames.Count() {
			wipeResults(res)
			return nil, nil, nil, fmt.Errorf("%w: module rejected peer frame %d (%s)", errDesync, r.Frames.Accepted, r.Frames.Reject)
		}
	}
	h := newTagHashes(first)
	out, err := collected(res, jobs, segs, first, h)
	if err != nil {
		return nil, nil, nil, err
	}
	return out, h.Sum(nil), h.confirmation(), nil
}

// markOpenedSegs is markOpened for a batch of segments: accepted is how
// many of the peer's frames the module accepted, in order (-1: unknown,
// every framed job counts as opened). A bulk's one frame, like a BatchMAC
// frame, covers every share of its segment; on the per-key path a
// keystream or MAC frame covers one framed share.
func markOpenedSegs(jobs []*job, segs []segment, tier msg.Tier, accepted int) {
	if accepted == 0 {
		return
	}
	f := 0 // index of the segment's first frame
	for _, s := range segs {
		left := -1 // this segment's frames accepted
		if accepted >= 0 {
			left = min(max(accepted-f, 0), s.frames)
		}
		f += s.frames
		switch {
		case left == 0:
		case s.bulk:
			for _, j := range jobs[s.j0:s.j1] {
				if j.shares[0].Mode != msg.Derived {
					j.spent.Store(true)
				}
			}
		default:
			markOpened(jobs[s.j0:s.j1], tier, left)
		}
	}
}

// keyViews returns j's keys as one slice of its slab (nil when they are
// not in one), for a reply that aliases them.
func (j *job) keyViews() []byte {
	var n int
	switch {
	case j.keyBuf == nil:
		return nil
	case j.vn > 0:
		n = j.vn * j.vStride
	case len(j.outs) == 0:
		return nil
	default:
		n = len(j.outs) * len(j.outs[0].Key)
	}
	if j.keyOff+n > len(j.keyBuf) {
		return nil
	}
	return j.keyBuf[j.keyOff : j.keyOff+n : j.keyOff+n]
}
