package service

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"google.golang.org/grpc/codes"

	"github.com/kord-fss/kord/fss"
	"github.com/kord-fss/kord/internal/prg"
	"github.com/kord-fss/kord/module/msg"
	"github.com/kord-fss/kord/module/socket"
	pb "github.com/kord-fss/kord/proto/kordpb"
	"github.com/kord-fss/kord/proto/modulepb"
)

// Limits on one application request.
const (
	MaxCount  = 4096    // derived keys per request
	MaxPoints = 1 << 16 // consume-mode points per request
	// MaxCorrBlocks bounds the counters one correlation request takes
	// (msg.Correlation.Blocks: two words a counter).
	MaxCorrBlocks = 1 << 21
)

// ModeCorrelation is the mode of a correlation request (KeyRequest.corr)
// and ItemCorrelation the mode code of its batch item: one derived
// multiplication correlation (msg.SubmitCorrelation), drawn inside both
// modules, nothing per item between the sites but its batch header.
const (
	ModeCorrelation = "correlation"
	ItemCorrelation = 16
)

// Error classes of KeyReply.error_class: the one table is kordpb.Classes
// (proto/kordpb/status.go), which also says for each whether the
// application may use the same α again.
const (
	ErrClassBadRequest  = pb.ClassBadRequest
	ErrClassMismatch    = pb.ClassMismatch
	ErrClassPeer        = pb.ClassPeer
	ErrClassUnavailable = pb.ClassUnavailable
	ErrClassDesync      = pb.ClassDesync // peer link only, not sent to applications
	ErrClassInternal    = pb.ClassInternal
	ErrClassExhausted   = pb.ClassExhausted
	ErrClassTampered    = pb.ClassTampered
	ErrClassSpent       = pb.ClassSpent
	ErrClassUnmatched   = pb.ClassUnmatched
	ErrClassVoid        = pb.ClassVoid
)

// DefaultTier is the tier of a bound or consume request that names none:
// authenticated, one GCM tag per batch. The keystream tier (otp) is an
// explicit opt-in whose claim covers only semi-honest hosts and network.
const DefaultTier = msg.BatchMAC

// job is one application request on its way through the party.
type job struct {
	id uint64
	// app: the application identity the request came from (caller.go);
	// its id is unique only among that application's requests.
	app    string
	item   *pb.BatchItem
	tier   msg.Tier
	shares []msg.Share // one per key; a derived job's: its one shape (derived)
	// derived (a derived job): its key count; shares is then its one
	// shape, shared by every key (a derived key carries no share of
	// its own), not a record per key.
	derived int
	points  []uint64

	// answered: set once the job has its answer (reply or outs). done is
	// made only when someone has to block for the answer (most jobs are
	// answered before their stream's reply loop looks at them), under mu.
	fin  atomic.Bool
	mu   sync.Mutex
	done chan struct{}
	// reply is the error reply; outs the outputs of a successful one (a
	// slice of its batch's collected outputs, keys in one buffer).
	reply *pb.KeyReply
	outs  []msg.CollectResponse
	// code is the gRPC code of a refusal that Get returns as an error
	// (OK: the reply, if an error, is an error_class reply).
	code codes.Code
	// adm is the admission the job holds its share of the party's
	// pending bound from, given back once it is answered (nil: none).
	adm *admission
	// spent: this site's module accepted a peer frame covering the job's
	// shares; it is never submitted again (spent.go).
	spent atomic.Bool
	// run, seq: the party 0 run and batch the job was last sent in (0
	// before), which name it in a SpentRequests report.
	run, seq uint64
	// arrived: when the request joined the pending set (party 1), for its
	// own match timeout, or the queue (party 0: expireQueued). batched (party 0): when it was first sent in a
	// batch; missed: party 1 had no request with its id then, so it is
	// retried in a batch of its own until batched + MatchTimeout.
	arrived, batched time.Time
	missed           bool
	// putBack (party 1): returned to the pending set once already, which
	// restarted its match timeout (pending.putBack).
	putBack bool
	// refused: answered at once, never queued (its id is not used up).
	refused bool
	// notice: where a void notice for this request goes once delivered
	// (its stream's reply loop; nil: none).
	notice chan<- *pb.KeyReply
	// doubt (party 0): requeued from a batch lost with its session, which
	// party 1's module may have opened (settleDoubt).
	doubt bool

	// keyBuf (a bulk batch's): the slab its keys are views of, the first
	// at keyOff; slabFirst and slabN name that slab (the module
	// re-collects a bulk only whole: recover.go). nil, 0: per-key path.
	keyBuf    []byte
	keyOff    int
	slabFirst uint64
	slabN     int
	// keyRef: the job's reference to the pooled socket buffer keyBuf is
	// (socket.RecvBuf), released once keyRegion (the job's part of the
	// slab) is wiped; nil: none (the buffer is left to the collector).
	keyRef    *socket.RecvBuf
	keyRegion []byte
	// slab: the collected slab keyBuf is the key buffer of, when the
	// collect result owns it (an in-process module's: no socket buffer),
	// which TakeSlab can hand over whole; nil otherwise.
	slab *msg.Slab

	// A bulk job's outputs read in place (collected, a slab of
	// one-element keys): vn keys from counter vFirst, their bytes
	// keyViews (vStride each), their pair tags vTags and, when the slab
	// has them, this site's mask shares vAlpha, vBeta — all parts of the
	// collected slab, no record per key (outs is then nil). vn 0: the
	// outputs are outs.
	vn            int
	vFirst        uint64
	vMode         msg.Mode
	vStride       int
	vTags         []byte
	vAlpha, vBeta []uint64

	// corr (a correlation request): its shape, and the counters it takes
	// (shares is then empty; keys counts the counters).
	corr   *msg.Correlation
	blocks int

	// group, betaVec (a llama payload vector, item.Group ≥ 2): the
	// vector's size and, bound, this site's share of each element (wiped
	// with the shares). Such a job is a bulk segment of its own (bulk.go).
	group   int
	betaVec []uint64

	// storage for item and a single share, so that a bound request needs
	// no allocation of its own (jobs of one message share one slab)
	itemv pb.BatchItem
	one   [1]msg.Share
}

func (j *job) keys() int {
	if j.corr != nil {
		return j.blocks
	}
	if j.derived > 0 {
		return j.derived
	}
	return len(j.shares)
}

// vecShares reports whether the job's answer carries a payload vector's
// drawn β shares (derived, derive_beta, group ≥ 2): KeyShare.beta_shares,
// which packed replies do not have.
func (j *job) vecShares() bool { return j.group > 1 && j.item.DeriveBeta }

// weight is what the job counts against the party's pending bound
// (--max-pending): its keys, each a payload vector's G times (a vector
// key is up to G times the bytes of a one-element key).
func (j *job) weight() int { return j.keys() * max(j.group, 1) }

// finish answers the job with its outputs.
func (j *job) finish(outs []msg.CollectResponse) {
	j.outs = outs
	j.done1()
}

func (j *job) done1() {
	for i := range j.shares {
		j.shares[i].AlphaShare, j.shares[i].BetaShare = 0, 0
	}
	clear(j.betaVec)
	if a := j.adm; a != nil {
		a.release(j)
	}
	j.mu.Lock()
	j.fin.Store(true)
	if j.done != nil {
		close(j.done)
	}
	j.mu.Unlock()
}

func (j *job) fail(class, format string, args ...any) {
	j.wipeView() // outputs collected for it, if any, are not delivered
	j.reply = &pb.KeyReply{Id: j.id, Error: fmt.Sprintf(format, args...), ErrorClass: class}
	j.done1()
}

// wait waits for the job's answer (pbReply, or outs when reply is nil).
func (j *job) wait(ctx context.Context) error {
	if j.fin.Load() {
		return nil
	}
	j.mu.Lock()
	if j.fin.Load() {
		j.mu.Unlock()
		return nil
	}
	if j.done == nil {
		j.done = make(chan struct{})
	}
	done := j.done
	j.mu.Unlock()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// answered reports, without waiting, whether the job has its answer.
func (j *job) answered() bool { return j.fin.Load() }

// wipeOutputs clears the job's key bytes, evaluations and mask shares once
// its reply has gone out: the party keeps no copy of what it delivered.
// With lent, its key bytes were lent to the codec, which wipes them
// once written (kordpb.LendKeys): only the shares are wiped here.
//
// Unless lent (its reference then goes with the loan: takeRef), the job
// gives back its reference to the pooled buffer its keys are views of.
func (j *job) wipeOutputs(lent bool) {
	if kv := j.keyViews(); kv != nil {
		if !lent {
			socket.WipeKeys(kv) // one pass over the job's part of its slab
			j.releaseRef(kv)
		}
		for i := range j.outs {
			j.outs[i].AlphaShare, j.outs[i].BetaShare = 0, 0
			clear(j.outs[i].BetaShares)
		}
		clear(j.vAlpha)
		clear(j.vBeta)
		j.clearView()
		return
	}
	clear(j.vAlpha)
	clear(j.vBeta)
	j.clearView()
	for i := range j.outs {
		o := &j.outs[i]
		clear(o.Key)
		clear(o.Evals)
		clear(o.BetaShares)
		o.AlphaShare, o.BetaShare = 0, 0
		o.Corr.Wipe()
	}
	if !lent {
		j.releaseRef(nil)
	}
}

// slabRef is a job's reference to its pooled slab buffer, taken from the
// job: once the job's keys are wiped, region is wiped unless covered
// (the wiped keys were exactly region), then the reference is released.
type slabRef struct {
	ref     *socket.RecvBuf
	region  []byte
	covered bool
}

func (r slabRef) release() {
	if !r.covered {
		socket.WipeKeys(r.region)
	}
	r.ref.Release()
}

// takeRef takes the job's buffer reference (ok false: none); wiped are
// the key bytes the caller wipes (the job's key views).
func (j *job) takeRef(wiped []byte) (slabRef, bool) {
	if j.keyRef == nil {
		return slabRef{}, false
	}
	r := slabRef{ref: j.keyRef, region: j.keyRegion,
		covered: len(wiped) == len(j.keyRegion) && len(wiped) > 0 && &wiped[0] == &j.keyRegion[0]}
	j.keyRef, j.keyRegion = nil, nil
	return r, true
}

// releaseRef releases the job's buffer reference once wiped (its key
// views) are wiped.
func (j *job) releaseRef(wiped []byte) {
	if r, ok := j.takeRef(wiped); ok {
		r.release()
	}
}

// pbReply is the answer as one KeyReply message. Keys in a read-only slab
// mapping (socket.DoMapped) are copied: the codec wipes a KeyReply's keys
// once encoded.
func (j *job) pbReply() *pb.KeyReply {
	if j.reply != nil {
		return j.reply
	}
	n := j.nOut()
	rep := &pb.KeyReply{Id: j.id, Keys: make([]*pb.KeyShare, n)}
	shares := make([]pb.KeyShare, n)
	own := func(k []byte) []byte { return k }
	if socket.IsMapped(j.keyBuf) {
		own = bytes.Clone
	}
	for i := range n {
		if j.vn > 0 {
			c := j.viewOut(i)
			shares[i] = pb.KeyShare{Counter: c.Counter, Key: own(c.Key), AlphaShare: c.AlphaShare, BetaShare: c.BetaShare}
			rep.Keys[i] = &shares[i]
			continue
		}
		c := &j.outs[i]
		shares[i] = pb.KeyShare{Counter: c.Counter, Key: own(c.Key), AlphaShare: c.AlphaShare, BetaShare: c.BetaShare, Evals: c.Evals}
		if j.vecShares() {
			shares[i].BetaShares = c.BetaShares
		}
		if c.Corr != nil {
			shares[i].Corr = &modulepb.CorrShares{Counter: c.Corr.Counter, Blocks: uint32(c.Corr.Blocks), Corr: socket.CorrToPB(&c.Corr.Corr),
				A: c.Corr.A, R: c.Corr.R, Z: c.Corr.Z, PairTag: c.Corr.PairTag[:], Packs: c.Corr.Packs}
		}
		rep.Keys[i] = &shares[i]
	}
	return rep
}

// packLists appends the job's answer to pk's lists, and its key bytes
// to pk.Keys when keys is set (otherwise the caller has placed them).
func (j *job) packLists(pk *pb.PackedReplies, keys bool) {
	if len(pk.Ids) == 0 {
		pk.AlphaShares, pk.BetaShares, pk.EvalLens = pk.AlphaShares[:0], pk.BetaShares[:0], pk.EvalLens[:0]
	}
	pk.Ids = append(pk.Ids, j.id)
	if j.vn > 0 {
		j.packView(pk, keys)
		return
	}
	pk.Counts = append(pk.Counts, uint32(len(j.outs)))
	for i := range j.outs {
		c := &j.outs[i]
		pk.Counters = append(pk.Counters, c.Counter)
		if keys {
			pk.Keys = append(pk.Keys, c.Key...)
		}
		pk.KeyLens = append(pk.KeyLens, uint32(len(c.Key)))
		// The share and evaluation lists start (zero-padded for the keys
		// before) at the first key that has any.
		if len(pk.AlphaShares) > 0 || c.AlphaShare != 0 || c.BetaShare != 0 {
			if len(pk.AlphaShares) == 0 {
				pk.AlphaShares = append(pk.AlphaShares, make([]uint64, len(pk.Counters)-1)...)
				pk.BetaShares = append(pk.BetaShares, make([]uint64, len(pk.Counters)-1)...)
			}
			pk.AlphaShares = append(pk.AlphaShares, c.AlphaShare)
			pk.BetaShares = append(pk.BetaShares, c.BetaShare)
		}
		if len(pk.EvalLens) > 0 || len(c.Evals) > 0 {
			if len(pk.EvalLens) == 0 {
				pk.EvalLens = append(pk.EvalLens, make([]uint32, len(pk.Counters)-1)...)
			}
			pk.Evals = append(pk.Evals, c.Evals...)
			pk.EvalLens = append(pk.EvalLens, uint32(len(c.Evals)))
		}
	}
}

// packView is packLists for a job whose outputs are a view of its slab
// (the same lists, read from the slab's parts).
func (j *job) packView(pk *pb.PackedReplies, keys bool) {
	n := j.vn
	pk.Counts = append(pk.Counts, uint32(n))
	at := len(pk.Counters) // keys before the job's
	pk.Counters = slices.Grow(pk.Counters, n)[:at+n]
	for k := range pk.Counters[at:] {
		pk.Counters[at+k] = j.vFirst + uint64(k)
	}
	l := len(pk.KeyLens)
	pk.KeyLens = slices.Grow(pk.KeyLens, n)[:l+n]
	for k := range pk.KeyLens[l:] {
		pk.KeyLens[l+k] = uint32(j.vStride)
	}
	if keys {
		pk.Keys = append(pk.Keys, j.keyViews()...)
	}
	// The share lists start (zero-padded for the keys before) at the
	// first key that has any, as packLists's: from there on, every key's.
	switch {
	case j.vAlpha != nil:
		k0 := 0
		if len(pk.AlphaShares) == 0 {
			for k0 < n && j.vAlpha[k0] == 0 && j.vBeta[k0] == 0 {
				k0++
			}
			if k0 < n {
				pk.AlphaShares = append(pk.AlphaShares, make([]uint64, at+k0)...)
				pk.BetaShares = append(pk.BetaShares, make([]uint64, at+k0)...)
			}
		}
		if k0 < n {
			pk.AlphaShares = append(pk.AlphaShares, j.vAlpha[k0:]...)
			pk.BetaShares = append(pk.BetaShares, j.vBeta[k0:]...)
		}
	case len(pk.AlphaShares) > 0:
		pk.AlphaShares = append(pk.AlphaShares, make([]uint64, n)...)
		pk.BetaShares = append(pk.BetaShares, make([]uint64, n)...)
	}
	if len(pk.EvalLens) > 0 {
		pk.EvalLens = append(pk.EvalLens, make([]uint32, n)...)
	}
}

// nOut is the number of the job's outputs (its view's or outs).
func (j *job) nOut() int {
	if j.vn > 0 {
		return j.vn
	}
	return len(j.outs)
}

// viewOut is output k of the job's view as a record (its key a view).
func (j *job) viewOut(k int) msg.CollectResponse {
	o := msg.CollectResponse{Counter: j.vFirst + uint64(k), Mode: j.vMode,
		Key:     j.keyBuf[j.keyOff+k*j.vStride : j.keyOff+(k+1)*j.vStride : j.keyOff+(k+1)*j.vStride],
		PairTag: [msg.PairTagSize]byte(j.vTags[k*msg.PairTagSize:])}
	if j.vAlpha != nil {
		o.AlphaShare, o.BetaShare = j.vAlpha[k], j.vBeta[k]
	}
	return o
}

// tagAt is the pair tag of the job's output k (a view's).
func (j *job) tagAt(k int) [msg.PairTagSize]byte {
	return [msg.PairTagSize]byte(j.vTags[k*msg.PairTagSize:])
}

// materialize turns the job's view into records (outs), for callers
// that take outputs as records (in-process answers); the view's mask
// shares move into the records.
func (j *job) materialize() {
	if j.vn == 0 {
		return
	}
	outs := make([]msg.CollectResponse, j.vn)
	for k := range outs {
		outs[k] = j.viewOut(k)
	}
	clear(j.vAlpha)
	clear(j.vBeta)
	j.outs = outs
	j.clearView()
}

// clearView drops the job's view (not its key bytes: keyBuf).
func (j *job) clearView() {
	j.vn, j.vFirst, j.vStride, j.vTags, j.vAlpha, j.vBeta = 0, 0, 0, nil, nil, nil
}

// wipeView clears the key bytes and mask shares of the job's view, outputs
// that will not be delivered, and drops it.
func (j *job) wipeView() {
	if j.vn == 0 {
		return
	}
	if kv := j.keyViews(); kv != nil {
		socket.WipeKeys(kv)
	}
	clear(j.vAlpha)
	clear(j.vBeta)
	j.clearView()
}

// wipeJobReplies clears the outputs of jobs (reps: their records; a
// view's are in the job) that will not be delivered.
func wipeJobReplies(jobs []*job, reps [][]msg.CollectResponse) {
	wipeReplies(reps)
	for _, j := range jobs {
		j.wipeView()
	}
}

// resetPacked empties pk for reuse, wiping the key shares it held.
func resetPacked(pk *pb.PackedReplies) {
	socket.WipeKeys(pk.Keys)
	clear(pk.Evals)
	clear(pk.AlphaShares)
	clear(pk.BetaShares)
	pk.Ids, pk.Counts, pk.Counters, pk.Keys, pk.KeyLens = pk.Ids[:0], pk.Counts[:0], pk.Counters[:0], pk.Keys[:0], pk.KeyLens[:0]
	pk.KeyStride = 0
	pk.AlphaShares, pk.BetaShares, pk.Evals, pk.EvalLens = pk.AlphaShares[:0], pk.BetaShares[:0], pk.Evals[:0], pk.EvalLens[:0]
}

// sameShape reports whether the two sites asked for the same thing.
func sameShape(a, b *pb.BatchItem) bool {
	return a.Id == b.Id && a.Mode == b.Mode && a.Type == b.Type && a.InBits == b.InBits && a.OutBits == b.OutBits &&
		a.Count == b.Count && a.DeriveBeta == b.DeriveBeta && a.Beta == b.Beta && sameCorr(a.Corr, b.Corr) &&
		a.Group == b.Group && slices.Equal(a.Betas, b.Betas)
}

// sameCorr reports whether two items ask for the same correlation (both
// nil: neither is one).
func sameCorr(a, b *modulepb.Correlation) bool {
	if a == nil || b == nil {
		return a == nil && b == nil
	}
	return a.Kind == b.Kind && a.Ring == b.Ring && a.In == b.In && a.Out == b.Out && a.K == b.K && a.H == b.H && a.W == b.W &&
		a.Part == b.Part && a.WeightFrom == b.WeightFrom && a.Relu == b.Relu && a.Ars == b.Ars && a.Shift == b.Shift && a.Maxpool == b.Maxpool
}

var (
	errBad       = errors.New("bad request")
	errDupID     = fmt.Errorf("%w: duplicate id", errBad)
	errExhausted = errors.New("resource exhausted")
)

// admission bounds the keys a party holds queued and not yet answered and,
// at party 0, keeps the ids of those requests unique.
type admission struct {
	mu   sync.Mutex
	keys int
	max  int
	ids  map[rid]struct{} // nil: ids not tracked (party 1's pending set does it)
}

func newAdmission(max int, trackIDs bool) *admission {
	a := &admission{max: max}
	if trackIDs {
		a.ids = map[rid]struct{}{}
	}
	return a
}

// acquire admits j, or refuses it and changes nothing. An admitted job
// gives its share back when it is answered.
func (a *admission) acquire(j *job) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.acquireLocked(j)
}

// acquireAll admits each of js in order under one lock, as acquire does
// one at a time; errs[i] is nil for an admitted job. errs is nil when all
// were admitted.
func (a *admission) acquireAll(js []*job) (errs []error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	for i, j := range js {
		if err := a.acquireLocked(j); err != nil {
			if errs == nil {
				errs = make([]error, len(js))
			}
			errs[i] = err
		}
	}
	return errs
}

func (a *admission) acquireLocked(j *job) error {
	n := j.weight()
	if n > a.max-a.keys {
		if _, dup := a.ids[rid{j.app, j.id}]; dup {
			return fmt.Errorf("%w: request %d is already pending at this site", errDupID, j.id)
		}
		if j.group > 1 {
			return fmt.Errorf("%w: request %d: %d keys of a %d-element payload count as %d, which would pass this party's limit of %d pending keys (--max-pending); %d are pending",
				errExhausted, j.id, j.keys(), j.group, n, a.max, a.keys)
		}
		return fmt.Errorf("%w: request %d: %d keys would pass this party's limit of %d pending keys (--max-pending); %d are pending",
			errExhausted, j.id, n, a.max, a.keys)
	}
	if a.ids != nil {
		// One map operation: a set that does not grow already held the id
		// (storing it again changes nothing).
		had := len(a.ids)
		if a.ids[rid{j.app, j.id}] = struct{}{}; len(a.ids) == had {
			return fmt.Errorf("%w: request %d is already pending at this site", errDupID, j.id)
		}
	}
	a.keys += n
	j.adm = a
	return nil
}

// release gives back what acquire took for j.
func (a *admission) release(j *job) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.keys -= j.weight()
	if a.ids != nil {
		delete(a.ids, rid{j.app, j.id})
	}
	j.adm = nil
}

func (a *admission) pending() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.keys
}

func badf(format string, args ...any) error {
	return fmt.Errorf("%w: %s", errBad, fmt.Sprintf(format, args...))
}

// newJob validates an application request; the error names the field.
func newJob(r *pb.KeyRequest) (*job, error) {
	j := new(job)
	if err := j.init(r); err != nil {
		return nil, err
	}
	return j, nil
}

// init is newJob into j (a zero job, typically one of a slab).
func (j *job) init(r *pb.KeyRequest) error {
	if r == nil {
		return badf("empty request")
	}
	if r.Corr != nil || lowerASCII(r.Mode) == ModeCorrelation {
		return j.initCorr(r)
	}
	mode, err := msg.ParseMode(lowerASCII(r.Mode))
	if err != nil {
		return badf("mode: %v", err)
	}
	typ, err := fss.ParseType(lowerASCII(r.Type))
	if err != nil || (typ != fss.DPF && typ != fss.DCF) {
		return badf("type: %q is not dpf or dcf", r.Type)
	}
	prof, err := msg.ParseProfile(lowerASCII(r.Profile))
	if err != nil {
		return badf("profile: %q is not kord-v1 or llama", r.Profile)
	}
	if prof == msg.Llama && typ != fss.DCF {
		return badf("type: the llama profile has only dcf keys (LLAMA's FSS has no DPF), got %q", r.Type)
	}
	if r.InBits < 1 || r.InBits > 64 {
		return badf("in_bits: %d is outside 1..64", r.InBits)
	}
	if r.OutBits < 1 || r.OutBits > 64 {
		return badf("out_bits: %d is outside 1..64", r.OutBits)
	}
	in, out := int(r.InBits), int(r.OutBits)
	if r.Group > 1 || len(r.Betas) != 0 || len(r.BetaShares) != 0 && len(r.AlphaShares) == 0 {
		return j.initVec(r, mode, prof, typ)
	}
	j.id = r.Id
	// The batch item's type carries the profile in its high nibble
	// (msg.TypeByte; kord-v1's is the type alone), so the parties' item
	// comparisons, bulk runs and transcripts cover it.
	j.itemv.Id, j.itemv.Mode, j.itemv.Type, j.itemv.InBits, j.itemv.OutBits, j.itemv.Count = r.Id, uint32(mode), uint32(msg.TypeByte(prof, typ)), r.InBits, r.OutBits, 1
	j.item = &j.itemv
	base := msg.Share{Mode: mode, Profile: prof, Type: typ, InBits: in, OutBits: out}
	if mode == msg.Derived {
		if r.Tier != "" {
			return badf("tier: derived keys send no frame; leave tier empty")
		}
		if r.AlphaShare != 0 || r.BetaShare != 0 || len(r.Points) != 0 || len(r.AlphaShares) != 0 || len(r.BetaShares) != 0 {
			return badf("alpha_share/beta_share/alpha_shares/beta_shares/points: not used in derived mode")
		}
		n := r.Count
		if n == 0 {
			n = 1
		}
		if n > MaxCount {
			return badf("count: %d is over %d", n, MaxCount)
		}
		if r.DeriveBeta && r.Beta != 0 {
			return badf("beta: must be zero with derive_beta")
		}
		if r.Beta&^prg.Mask(out) != 0 {
			return badf("beta: does not fit in %d output bits", out)
		}
		base.DeriveBeta, base.Beta = r.DeriveBeta, r.Beta
		j.item.Count, j.item.DeriveBeta, j.item.Beta = n, r.DeriveBeta, r.Beta
		j.one[0], j.derived = base, int(n)
		j.shares = j.one[:]
		return nil
	}
	j.tier = DefaultTier
	if r.Tier != "" {
		if j.tier, err = msg.ParseTier(lowerASCII(r.Tier)); err != nil {
			return badf("tier: %v", err)
		}
	}
	if mode == msg.Bound && (r.Count > 1 || len(r.AlphaShares) != 0 || len(r.BetaShares) != 0) {
		// A bound bulk: count keys of one shape and tier as one request.
		if r.AlphaShare != 0 || r.BetaShare != 0 || r.DeriveBeta || r.Beta != 0 || len(r.Points) != 0 {
			return badf("alpha_share/beta_share/derive_beta/beta/points: not used in a bound bulk (alpha_shares, beta_shares)")
		}
		if int(r.Count) != len(r.AlphaShares) {
			return badf("count: %d, with %d alpha_shares (want one per key)", r.Count, len(r.AlphaShares))
		}
		return j.initBulk(&BoundBulk{ID: r.Id, Tier: j.tier, Profile: prof, Params: fss.Params{Type: typ, InBits: in, OutBits: out},
			AlphaShares: r.AlphaShares, BetaShares: r.BetaShares})
	}
	if r.Count > 1 || r.DeriveBeta || r.Beta != 0 {
		return badf("count/derive_beta/beta: only for derived mode")
	}
	if len(r.AlphaShares) != 0 || len(r.BetaShares) != 0 {
		return badf("alpha_shares/beta_shares: only for a bound bulk")
	}
	if r.AlphaShare&^prg.Mask(in) != 0 {
		return badf("alpha_share: does not fit in %d input bits", in)
	}
	if r.BetaShare&^prg.Mask(out) != 0 {
		return badf("beta_share: does not fit in %d output bits", out)
	}
	if mode == msg.Consume {
		if len(r.Points) == 0 || len(r.Points) > MaxPoints {
			return badf("points: %d points, want 1..%d in consume mode", len(r.Points), MaxPoints)
		}
		for i, x := range r.Points {
			if x&^prg.Mask(in) != 0 {
				return badf("points[%d]: does not fit in %d input bits", i, in)
			}
		}
		j.points = append([]uint64(nil), r.Points...)
	} else if len(r.Points) != 0 {
		return badf("points: only for consume mode")
	}
	base.AlphaShare, base.BetaShare = r.AlphaShare, r.BetaShare
	j.one[0] = base
	j.shares = j.one[:]
	return nil
}

// initVec is init for a request whose payload is a vector (group ≥ 2,
// betas or beta_shares given): llama profile, bound or derived, the whole
// request one bulk of the module (so its key bytes are bounded by
// msg.MaxSlabBytes).
func (j *job) initVec(r *pb.KeyRequest, mode msg.Mode, prof msg.Profile, typ fss.Type) error {
	in, out := int(r.InBits), int(r.OutBits)
	switch {
	case r.Group < 2 || r.Group > msg.MaxGroup:
		return badf("group: %d is outside 2..%d, and betas/beta_shares are only for a payload vector", r.Group, msg.MaxGroup)
	case prof != msg.Llama:
		return badf("group: a payload vector needs profile llama, not %q", r.Profile)
	case mode != msg.Bound && mode != msg.Derived:
		return badf("mode: a payload vector is for bound or derived mode, not %v", mode)
	case r.Beta != 0 || r.BetaShare != 0:
		return badf("beta/beta_share: must be zero with a payload vector (group %d): the payload is betas or beta_shares", r.Group)
	case len(r.Points) != 0:
		return badf("points: only for consume mode")
	case len(r.AlphaShares) != 0:
		return badf("alpha_shares: a payload vector's bound request is one key (alpha_share, beta_shares)")
	}
	g := int(r.Group)
	mb := prg.Mask(out)
	j.id, j.group = r.Id, g
	j.itemv = pb.BatchItem{Id: r.Id, Mode: uint32(mode), Type: uint32(msg.TypeByte(prof, typ)), InBits: r.InBits, OutBits: r.OutBits, Count: 1,
		Group: r.Group}
	j.item = &j.itemv
	base := msg.Share{Mode: mode, Profile: prof, Type: typ, InBits: in, OutBits: out}
	ks := msg.KeySizeG(prof, base.Params(), g)
	if mode == msg.Derived {
		switch {
		case r.Tier != "":
			return badf("tier: derived keys send no frame; leave tier empty")
		case r.AlphaShare != 0 || len(r.BetaShares) != 0:
			return badf("alpha_share/beta_shares: not used in derived mode")
		case r.DeriveBeta && len(r.Betas) != 0:
			return badf("betas: must be empty with derive_beta (the modules draw every element)")
		case !r.DeriveBeta && len(r.Betas) != g:
			return badf("betas: %d elements, want group = %d", len(r.Betas), g)
		}
		for i, v := range r.Betas {
			if v&^mb != 0 {
				return badf("betas[%d]: does not fit in %d output bits", i, out)
			}
		}
		n := max(r.Count, 1)
		if n > MaxCount {
			return badf("count: %d is over %d", n, MaxCount)
		}
		if int(n) > msg.MaxSlabBytes/ks {
			return badf("count: %d keys of %d bytes (group %d) pass the limit of %d key bytes per request; ask for at most %d", n, ks, g, msg.MaxSlabBytes, msg.MaxSlabBytes/ks)
		}
		j.itemv.Count, j.itemv.DeriveBeta = n, r.DeriveBeta
		base.DeriveBeta = r.DeriveBeta
		if !r.DeriveBeta {
			j.itemv.Betas = append([]uint64(nil), r.Betas...)
		}
		j.one[0], j.derived = base, int(n)
		j.shares = j.one[:]
		return nil
	}
	j.tier = DefaultTier
	if r.Tier != "" {
		var err error
		if j.tier, err = msg.ParseTier(lowerASCII(r.Tier)); err != nil {
			return badf("tier: %v", err)
		}
	}
	switch {
	case r.Count > 1 || r.DeriveBeta || len(r.Betas) != 0:
		return badf("count/derive_beta/betas: only for derived mode")
	case r.AlphaShare&^prg.Mask(in) != 0:
		return badf("alpha_share: does not fit in %d input bits", in)
	case len(r.BetaShares) != g:
		return badf("beta_shares: %d shares, want group = %d", len(r.BetaShares), g)
	}
	for i, v := range r.BetaShares {
		if v&^mb != 0 {
			return badf("beta_shares[%d]: does not fit in %d output bits", i, out)
		}
	}
	base.AlphaShare = r.AlphaShare
	j.one[0] = base
	j.shares = j.one[:]
	j.betaVec = append([]uint64(nil), r.BetaShares...)
	return nil
}

// initCorr is init for a correlation request: mode "correlation" with a
// shape in corr and every key field empty.
func (j *job) initCorr(r *pb.KeyRequest) error {
	if lowerASCII(r.Mode) != ModeCorrelation {
		return badf("mode: a request with corr must have mode %q, not %q", ModeCorrelation, r.Mode)
	}
	if r.Corr == nil {
		return badf("corr: missing (mode %q)", ModeCorrelation)
	}
	if r.Type != "" || r.Tier != "" || r.InBits != 0 || r.OutBits != 0 || r.AlphaShare != 0 || r.BetaShare != 0 ||
		r.Count != 0 || r.DeriveBeta || r.Beta != 0 || len(r.Points) != 0 || r.Profile != "" || len(r.AlphaShares) != 0 || len(r.BetaShares) != 0 {
		return badf("type/tier/in_bits/out_bits/alpha_share/beta_share/count/derive_beta/beta/points/profile: must be empty in a correlation request")
	}
	c := socket.CorrFromPB(r.Corr)
	blocks, err := c.Blocks()
	if err != nil {
		return badf("%v", err)
	}
	if blocks > MaxCorrBlocks {
		return badf("corr: takes %d counters, over %d", blocks, MaxCorrBlocks)
	}
	j.id, j.corr, j.blocks = r.Id, c, blocks
	j.itemv = pb.BatchItem{Id: r.Id, Mode: ItemCorrelation, InBits: uint32(c.Ring), Count: uint32(blocks), Corr: socket.CorrToPB(c)}
	j.item = &j.itemv
	return nil
}

// lowerASCII is s in lower case: the names of modes, types and tiers are
// read without regard to case (docs/api.md, "Field rules").
func lowerASCII(s string) string {
	for i := 0; i < len(s); i++ {
		if c := s[i]; 'A' <= c && c <= 'Z' {
			b := []byte(s)
			for k := i; k < len(b); k++ {
				if 'A' <= b[k] && b[k] <= 'Z' {
					b[k] += 'a' - 'A'
				}
			}
			return string(b)
		}
	}
	return s
}

// queue is party 0's FIFO of requests waiting for a batch.
type queue struct {
	mu    sync.Mutex
	jobs  []*job
	keys  int
	ready chan struct{} // signalled when jobs arrive
}

func newQueue() *queue { return &queue{ready: make(chan struct{}, 1)} }

func (q *queue) push(j *job) {
	q.mu.Lock()
	if j.arrived.IsZero() {
		j.arrived = time.Now()
	}
	q.jobs = append(q.jobs, j)
	q.keys += j.keys()
	q.mu.Unlock()
	q.signal()
}

// pushAll appends js in order and returns the queue's length.
func (q *queue) pushAll(js []*job) int {
	now := time.Now()
	q.mu.Lock()
	q.jobs = append(q.jobs, js...)
	for _, j := range js {
		q.keys += j.keys()
		if j.arrived.IsZero() {
			j.arrived = now
		}
	}
	n := len(q.jobs)
	q.mu.Unlock()
	q.signal()
	return n
}

func (q *queue) signal() {
	select {
	case q.ready <- struct{}{}:
	default:
	}
}

// requeue puts jobs back at the front, in order; a spent job is failed
// instead (spent.go: it must never be submitted again).
func (q *queue) requeue(js []*job) {
	js = dropSpent(js)
	if len(js) == 0 {
		return
	}
	q.mu.Lock()
	n := 0
	for _, j := range js {
		n += j.keys()
	}
	q.jobs = append(append([]*job(nil), js...), q.jobs...)
	q.keys += n
	q.mu.Unlock()
	q.signal()
}

// failSpent removes and fails the queued jobs that sr names (the peer's
// module opened frames for them); it returns how many it failed.
func (q *queue) failSpent(sr []spentRef) int {
	if len(sr) == 0 {
		return 0
	}
	set := make(map[spentRef]bool, len(sr))
	for _, r := range sr {
		set[r] = true
	}
	q.mu.Lock()
	gone := q.removeLocked(func(j *job) bool { return j.seq != 0 && set[spentRef{run: j.run, seq: j.seq, id: j.id, app: j.app}] })
	q.mu.Unlock()
	for _, j := range gone {
		j.fail(ErrClassSpent, "the peer's module opened this site's frame for the request and its batch was not delivered; α spent: choose a fresh α")
	}
	return len(gone)
}

// dropSpent fails the spent jobs of js (a safety net: Party.back fails
// them with their class first) and returns the others.
func dropSpent(js []*job) []*job {
	for i, j := range js {
		if j.spent.Load() {
			out := append([]*job(nil), js[:i]...)
			for _, j := range js[i:] {
				if j.spent.Load() {
					if !j.answered() {
						j.fail(ErrClassSpent, "the batch ended after this site's module opened the peer's frame; α spent")
					}
					continue
				}
				out = append(out, j)
			}
			return out
		}
	}
	return js
}

// takeDoubt removes and returns the queued jobs in doubt when take is
// set; otherwise it clears their doubt and returns none.
func (q *queue) takeDoubt(take bool) []*job {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.removeLocked(func(j *job) bool {
		if j.doubt && take {
			return true
		}
		j.doubt = false
		return false
	})
}

// expire removes and returns the queued jobs that arrived before t.
func (q *queue) expire(t time.Time) []*job {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.removeLocked(func(j *job) bool { return j.arrived.Before(t) })
}

// extract removes and returns the queued jobs whose requests (application
// and id) are in set.
func (q *queue) extract(set map[rid]bool) []*job {
	if len(set) == 0 {
		return nil
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.removeLocked(func(j *job) bool { return set[rid{j.app, j.id}] })
}

// removeLocked removes the queued jobs for which remove reports true and
// returns them in queue order, keeping the others in order; q.mu is held.
func (q *queue) removeLocked(remove func(*job) bool) []*job {
	var out []*job
	keep := q.jobs[:0]
	for _, j := range q.jobs {
		if remove(j) {
			out = append(out, j)
			q.keys -= j.keys()
			continue
		}
		keep = append(keep, j)
	}
	clear(q.jobs[len(keep):])
	q.jobs = keep
	return out
}

func (q *queue) size() int {
	q.mu.Lock()
	defer q.mu.Unlock()
	return len(q.jobs)
}

// take waits for jobs and returns a batch of at most max keys whose framed
// requests share one tier.
func (q *queue) take(ctx context.Context, max int) ([]*job, msg.Tier, error) {
	for {
		q.mu.Lock()
		if len(q.jobs) > 0 {
			var out []*job
			var tier msg.Tier
			n := 0
			for len(q.jobs) > 0 {
				j := q.jobs[0]
				if len(out) > 0 && (n+j.keys() > max || j.missed || out[0].missed) {
					break // a retried unmatched request goes alone
				}
				if len(out) > 0 && j.app != out[0].app {
					break // a batch is one application's (Batch.app)
				}
				if j.tier != 0 {
					if tier != 0 && j.tier != tier {
						break
					}
					tier = j.tier
				}
				out = append(out, j)
				n += j.keys()
				q.jobs = q.jobs[1:]
			}
			q.keys -= n
			q.mu.Unlock()
			if tier == 0 {
				tier = msg.MAC
			}
			return out, tier, nil
		}
		q.mu.Unlock()
		select {
		case <-q.ready:
		case <-ctx.Done():
			return nil, 0, ctx.Err()
		}
	}
}

// pending is party 1's requests by application and id, waiting for party
// 0's order.
type pending struct {
	mu      sync.Mutex
	jobs    map[rid]*job
	wake    chan struct{} // closed and replaced when jobs arrive while a claim waits
	waiting int           // claims waiting on wake
	// unmatched: ids party 0 batched when this site had no request for
	// them, or whose request here expired unmatched, with when; a claim
	// does not wait for them again (party 0 retries them alone).
	unmatched map[rid]time.Time
	// batchAt: when the last batch came; drainedAt: when the last batch
	// taken with party 0's queue left empty came (expire).
	batchAt, drainedAt time.Time
}

// sawBatch notes a batch from party 0, which left queued requests in its
// queue.
func (p *pending) sawBatch(queued uint64) {
	now := time.Now()
	p.mu.Lock()
	defer p.mu.Unlock()
	p.batchAt = now
	if queued == 0 {
		p.drainedAt = now
	}
}

// idleDrained: a session with no batch for this long means party 0 holds
// no request either (it batches whatever it has at once).
const idleDrained = 100 * time.Millisecond

func newPending() *pending {
	return &pending{jobs: map[rid]*job{}, wake: make(chan struct{}), unmatched: map[rid]time.Time{}}
}

// maxUnmatched bounds the ids pending remembers as unmatched.
const maxUnmatched = 1 << 16

// noteUnmatched remembers app's ids as unmatched (now), so that a claim of
// them does not wait again; entries older than keep are dropped.
func (p *pending) noteUnmatched(app string, ids []uint64, keep time.Duration) {
	now := time.Now()
	p.mu.Lock()
	defer p.mu.Unlock()
	p.pruneUnmatched(now, keep)
	for _, id := range ids {
		if len(p.unmatched) >= maxUnmatched {
			break
		}
		p.unmatched[rid{app, id}] = now
	}
}

// pruneUnmatched drops unmatched ids noted more than keep before now; p.mu held.
func (p *pending) pruneUnmatched(now time.Time, keep time.Duration) {
	for id, t := range p.unmatched {
		if now.Sub(t) > keep {
			delete(p.unmatched, id)
		}
	}
}

// expire fails, as unmatched, the pending requests that have waited
// longer than timeout, counted from their arrival (or, during a session,
// the start of the peer session, since, whichever is later), and that
// party 0 cannot be holding either: no session is up (since zero: party
// 0 is unreachable or withholds its handshake, and batches nothing), or
// its queue was empty after that time (a batch said so, or no batch came
// for idleDrained). It remembers their ids (keep: how long) and returns
// how many it failed.
func (p *pending) expire(timeout time.Duration, since time.Time, keep time.Duration) int {
	var gone []*job
	now := time.Now()
	p.mu.Lock()
	drained := p.drainedAt
	if last := max(p.batchAt.UnixNano(), since.UnixNano()); since.IsZero() || now.Sub(time.Unix(0, last)) > idleDrained {
		drained = now
	}
	for id, j := range p.jobs {
		start := j.arrived
		if start.Before(since) {
			start = since
		}
		if !j.arrived.IsZero() && now.Sub(start) > timeout && drained.After(start) {
			delete(p.jobs, id)
			gone = append(gone, j)
			if len(p.unmatched) < maxUnmatched {
				p.unmatched[id] = now
			}
		}
	}
	p.pruneUnmatched(now, keep)
	p.mu.Unlock()
	for _, j := range gone {
		j.fail(ErrClassUnmatched, "no request with id %d reached party 0 within the match timeout; nothing was generated for it", j.id)
	}
	return len(gone)
}

// take removes and returns the pending jobs with the given ids, of any
// application (recover.go: recovery records name ids only).
func (p *pending) take(ids []rid) []*job {
	if len(ids) == 0 {
		return nil
	}
	want := make(map[rid]bool, len(ids))
	for _, id := range ids {
		want[id] = true
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	var out []*job
	for k, j := range p.jobs {
		if want[k] {
			delete(p.jobs, k)
			out = append(out, j)
		}
	}
	return out
}

// notify wakes waiting claims; p.mu held.
func (p *pending) notify() {
	if p.waiting > 0 {
		close(p.wake)
		p.wake = make(chan struct{})
	}
}

func (p *pending) add(j *job) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	k := rid{j.app, j.id}
	if _, ok := p.jobs[k]; ok {
		return fmt.Errorf("%w: request %d is already pending at this site", errDupID, j.id)
	}
	j.arrived = time.Now()
	p.jobs[k] = j
	p.notify()
	return nil
}

// addAll adds js as add does one at a time, under one lock; errs (nil if
// none) holds the refusals, n the pending set's size after.
func (p *pending) addAll(js []*job) (errs []error, n int) {
	now := time.Now()
	p.mu.Lock()
	defer p.mu.Unlock()
	for i, j := range js {
		k := rid{j.app, j.id}
		if _, ok := p.jobs[k]; ok {
			if errs == nil {
				errs = make([]error, len(js))
			}
			errs[i] = fmt.Errorf("%w: request %d is already pending at this site", errDupID, j.id)
			continue
		}
		j.arrived = now
		p.jobs[k] = j
	}
	p.notify()
	return errs, len(p.jobs)
}

func (p *pending) size() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.jobs)
}

// putBack returns taken jobs to the pending set; a spent job is failed
// instead (spent.go: it must never be submitted again).
func (p *pending) putBack(js []*job) {
	js = dropSpent(js)
	now := time.Now()
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, j := range js {
		if !j.putBack {
			// Its match timeout starts again, once: a peer that has it
			// claimed and refused without end must not keep it waiting.
			j.arrived, j.putBack = now, true
		}
		p.jobs[rid{j.app, j.id}] = j
	}
	p.notify()
}

// claim takes app's jobs for items, waiting up to the deadline for ids
// that have not arrived (a request of another application with the same id
// is not one of them). It returns the ids still missing and the ids whose
// request differs; on any of those it takes nothing. Each wake-up looks
// only at the ids still missing.
func (p *pending) claim(ctx context.Context, app string, items []*pb.BatchItem, tier msg.Tier, deadline time.Time) (js []*job, missing, differ []uint64) {
	var timer *time.Timer
	defer func() {
		if timer != nil {
			timer.Stop()
		}
	}()
	todo := make([]int, len(items)) // indices of items not seen yet
	for i := range todo {
		todo[i] = i
	}
	js = make([]*job, len(items))
	for waited := false; ; waited = true {
		p.mu.Lock()
		left := todo[:0]
		for _, i := range todo {
			it := items[i]
			j, ok := p.jobs[rid{app, it.Id}]
			switch {
			case !ok:
				left = append(left, i)
			case !sameShape(j.item, it) || (j.tier != 0 && j.tier != tier):
				differ = append(differ, it.Id)
			}
			js[i] = j
		}
		todo = left
		if len(differ) > 0 {
			for _, i := range todo {
				missing = append(missing, items[i].Id)
			}
			p.mu.Unlock()
			return nil, missing, differ
		}
		if len(todo) == 0 && waited {
			// A request seen before a wait may have been failed or
			// replaced since (its application went away): look again
			// before taking any.
			for i, it := range items {
				j, ok := p.jobs[rid{app, it.Id}]
				switch {
				case !ok:
					todo = append(todo, i)
				case !sameShape(j.item, it) || (j.tier != 0 && j.tier != tier):
					differ = append(differ, it.Id)
				}
				js[i] = j
			}
			if len(differ) > 0 {
				p.mu.Unlock()
				return nil, nil, differ
			}
		}
		if len(todo) == 0 {
			// Every job was looked up under this hold of the lock.
			for _, it := range items {
				delete(p.jobs, rid{app, it.Id})
				delete(p.unmatched, rid{app, it.Id})
			}
			p.mu.Unlock()
			return js, nil, nil
		}
		// Ids already found unmatched (party 0 retries them alone) are
		// not waited for again.
		known := true
		for _, i := range todo {
			if _, ok := p.unmatched[rid{app, items[i].Id}]; !ok {
				known = false
				break
			}
		}
		if known {
			p.mu.Unlock()
			for _, i := range todo {
				missing = append(missing, items[i].Id)
			}
			return nil, missing, nil
		}
		p.waiting++
		wake := p.wake
		p.mu.Unlock()
		if timer == nil {
			timer = time.NewTimer(time.Until(deadline))
		}
		var stop bool
		select {
		case <-wake:
		case <-timer.C:
			stop = true
		case <-ctx.Done():
			stop = true
		}
		p.mu.Lock()
		p.waiting--
		p.mu.Unlock()
		if stop {
			for _, i := range todo {
				missing = append(missing, items[i].Id)
			}
			return nil, missing, nil
		}
	}
}

// failSpent removes and fails the pending jobs that sr names (the peer's
// module opened frames for them); it returns how many it failed.
func (p *pending) failSpent(sr []spentRef) int {
	var gone []*job
	if len(sr) == 0 {
		return 0
	}
	// A report names run, batch, id and application: one request.
	want := make(map[spentRef]bool, len(sr))
	for _, r := range sr {
		want[r] = true
	}
	p.mu.Lock()
	for k, j := range p.jobs {
		if j.seq != 0 && want[spentRef{run: j.run, seq: j.seq, id: k.id, app: k.app}] {
			delete(p.jobs, k)
			gone = append(gone, j)
		}
	}
	p.mu.Unlock()
	for _, j := range gone {
		j.fail(ErrClassSpent, "the peer's module opened this site's frame for the request and its batch was not delivered; α spent: choose a fresh α")
	}
	return len(gone)
}

// fail removes and fails app's jobs with the given ids.
func (p *pending) fail(app string, ids []uint64, class, format string, args ...any) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, id := range ids {
		if j, ok := p.jobs[rid{app, id}]; ok {
			delete(p.jobs, rid{app, id})
			j.fail(class, format, args...)
		}
	}
}

// packedShape is the size of one request's shape in PackedRequests.
const packedShape = 6

// simplePacked reports whether a packed message is well formed and carries
// no points (consume mode), the shapes initPacked reads directly.
func simplePacked(pk *pb.PackedRequests) bool {
	n := len(pk.Ids)
	return len(pk.Shapes) == n*packedShape && len(pk.AlphaShares) == n && len(pk.BetaShares) == n && len(pk.Counts) == n &&
		len(pk.Betas) == n && len(pk.PointLens) == 0
}

// packedRequest sets r to request i of a packed message whose Shapes, Ids,
// AlphaShares, BetaShares, Counts and Betas hold at least i+1 entries
// (points, if any, are the caller's), as eachPacked hands it on.
func packedRequest(pk *pb.PackedRequests, i int, r *pb.KeyRequest) error {
	sh := pk.Shapes[i*packedShape : (i+1)*packedShape]
	*r = pb.KeyRequest{Id: pk.Ids[i], Mode: msg.Mode(sh[0]).String(), Type: fss.Type(sh[2] & 15).String(), Profile: msg.Profile(sh[2] >> 4).String(),
		InBits: uint32(sh[3]), OutBits: uint32(sh[4]), DeriveBeta: sh[5] == 1,
		AlphaShare: pk.AlphaShares[i], BetaShare: pk.BetaShares[i], Count: pk.Counts[i], Beta: pk.Betas[i]}
	if sh[1] != 0 {
		r.Tier = msg.Tier(sh[1]).String()
	}
	if sh[5] > 1 {
		return badf("request %d (packed index %d): derive_beta: shape byte %d is not 0 or 1", pk.Ids[i], i, sh[5])
	}
	return nil
}

// initPacked sets j to request i of a simplePacked message when it is a
// valid bound or derived request — exactly the job init would make of
// packedRequest's KeyRequest — without building that request. It returns
// false, leaving j to be reset, for anything else (every refusal, and
// consume mode), which then takes the long way for its error message.
func (j *job) initPacked(pk *pb.PackedRequests, i int) bool {
	sh := pk.Shapes[i*packedShape : (i+1)*packedShape]
	mode, tier, typ, prof, in, out, db := msg.Mode(sh[0]), msg.Tier(sh[1]), fss.Type(sh[2]&15), msg.Profile(sh[2]>>4), int(sh[3]), int(sh[4]), sh[5]
	if db > 1 || (typ != fss.DPF && typ != fss.DCF) || in < 1 || in > 64 || out < 1 || out > 64 ||
		(prof != msg.KordV1 && (prof != msg.Llama || typ != fss.DCF)) {
		return false
	}
	as, bs, count, beta := pk.AlphaShares[i], pk.BetaShares[i], pk.Counts[i], pk.Betas[i]
	base := msg.Share{Mode: mode, Profile: prof, Type: typ, InBits: in, OutBits: out}
	j.itemv.Count = 1
	switch mode {
	case msg.Bound:
		if tier == 0 {
			tier = DefaultTier
		}
		if (tier != msg.Keystream && tier != msg.MAC && tier != msg.BatchMAC) || count > 1 || db != 0 || beta != 0 ||
			as&^prg.Mask(in) != 0 || bs&^prg.Mask(out) != 0 {
			return false
		}
		j.tier = tier
		base.AlphaShare, base.BetaShare = as, bs
		j.one[0] = base
		j.shares = j.one[:]
	case msg.Derived:
		if tier != 0 || as != 0 || bs != 0 || count > MaxCount || (db == 1 && beta != 0) || beta&^prg.Mask(out) != 0 {
			return false
		}
		n := max(count, 1)
		base.DeriveBeta, base.Beta = db == 1, beta
		j.itemv.Count, j.itemv.DeriveBeta, j.itemv.Beta = n, db == 1, beta
		j.one[0], j.derived = base, int(n)
		j.shares = j.one[:]
	default:
		return false
	}
	j.id = pk.Ids[i]
	j.itemv.Id, j.itemv.Mode, j.itemv.Type, j.itemv.InBits, j.itemv.OutBits = j.id, uint32(mode), uint32(sh[2]), uint32(in), uint32(out)
	j.item = &j.itemv
	return true
}

// eachPacked hands fn each packed request in order, as a KeyRequest that is
// only valid during the call (newJob copies what it keeps), or, for a
// request that cannot be read, its id and an error naming the field; it
// stops when fn returns false. A malformed message yields one error per
// id it lists (the application gets a bad_request reply for each), or
// one with id 0 when it lists none.
func eachPacked(pk *pb.PackedRequests, fn func(r *pb.KeyRequest, id uint64, err error) bool) bool {
	n := len(pk.Ids)
	var r pb.KeyRequest
	if err := packedLengths(pk); err != nil {
		if n == 0 {
			return fn(nil, 0, badf("packed request: %v", err))
		}
		for i, id := range pk.Ids {
			if !fn(nil, id, badf("request %d (packed index %d): %v", id, i, err)) {
				return false
			}
		}
		return true
	}
	off := 0
	for i := 0; i < n; i++ {
		perr := packedRequest(pk, i, &r)
		if len(pk.PointLens) > 0 {
			l := int(pk.PointLens[i])
			if l > len(pk.Points)-off {
				// The points of this request and every later one are
				// out of reach.
				for k := i; k < n; k++ {
					if !fn(nil, pk.Ids[k], badf("request %d (packed index %d): point_lens: the points list ends before this request's points (%d at offset %d of %d)",
						pk.Ids[k], k, pk.PointLens[k], off, len(pk.Points))) {
						return false
					}
				}
				return true
			}
			if l > 0 {
				r.Points = pk.Points[off : off+l : off+l]
			}
			off += l
		}
		if perr != nil {
			if !fn(nil, pk.Ids[i], perr) {
				return false
			}
			continue
		}
		if !fn(&r, r.Id, nil) {
			return false
		}
	}
	return true
}

// packedLengths checks that a packed message's lists have one entry per
// id; the error names the first that does not.
func packedLengths(pk *pb.PackedRequests) error {
	n := len(pk.Ids)
	switch {
	case len(pk.Shapes) != n*packedShape:
		return fmt.Errorf("shapes: %d bytes for %d ids (want %d per request)", len(pk.Shapes), n, packedShape)
	case len(pk.AlphaShares) != n:
		return fmt.Errorf("alpha_shares: %d entries for %d ids", len(pk.AlphaShares), n)
	case len(pk.BetaShares) != n:
		return fmt.Errorf("beta_shares: %d entries for %d ids", len(pk.BetaShares), n)
	case len(pk.Counts) != n:
		return fmt.Errorf("counts: %d entries for %d ids", len(pk.Counts), n)
	case len(pk.Betas) != n:
		return fmt.Errorf("betas: %d entries for %d ids", len(pk.Betas), n)
	case len(pk.PointLens) != 0 && len(pk.PointLens) != n:
		return fmt.Errorf("point_lens: %d entries for %d ids (want none or one per id)", len(pk.PointLens), n)
	case n == 0 && (len(pk.Points) > 0 || len(pk.PointLens) > 0):
		return fmt.Errorf("ids: none, but other lists are not empty")
	}
	return nil
}
