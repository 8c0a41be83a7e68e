package service

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"google.golang.org/grpc/codes"

	"github.com/kord-fss/kord/module/msg"
	"github.com/kord-fss/kord/module/socket"
	pb "github.com/kord-fss/kord/proto/kordpb"
	"github.com/kord-fss/kord/proto/modulepb"
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
