package client

import (
	"errors"
	"fmt"
	"sync/atomic"

	"github.com/kord-fss/kord/fss"
	"github.com/kord-fss/kord/module/msg"
	"github.com/kord-fss/kord/module/socket"
	pb "github.com/kord-fss/kord/proto/kordpb"
)

// Batch is the replies of one message of a Stream, read in place: its key
// shares are fss.KeyViews over the received buffer and its counters and
// additive shares are the received lists, so receiving a batch allocates
// nothing per key. Release wipes the batch's memory (key bytes, shares,
// counters, the views' copies of control bits) and gives it back to the
// stream, which reads a later message into it; until then the memory is
// the batch's alone, so live batches never share memory.
//
// A Batch is a handle: after Release, this handle and every copy of it are
// refused — Len and Replies are 0, Key gives the zero view (whose
// evaluations fail with fss.ErrStaleView), Counter, AlphaShare and
// BetaShare give 0, Evals nil — even once the memory serves a new batch.
// KeyViews and Evals slices taken from a batch share its memory and must
// not be used after Release: until the memory is reused their bytes read
// zero (views are refused), afterwards they would read another batch's.
// Release may be called from another goroutine than the stream's, but not
// while the same batch is being read. (A batch holding the rest of a
// message from which RecvRaw has handed out replies is the exception to
// the wipe: those replies are slices of the message, so Release leaves it
// to the garbage collector, as RecvRaw says.)
type Batch struct {
	m      *batchMem
	gen    uint64
	r0, k0 int // the batch's first reply and key in m
}

// BatchReply is one reply of a batch: its keys are Key(First) …
// Key(First+N-1). Err is a *ReplyError when the party refused the
// request (N is then 0), or an error naming the counter of a key share
// that is not a valid kord-v1 key (the reply's views are then zero).
type BatchReply struct {
	ID       uint64
	First, N int
	Err      error
}

// batchMem is the reusable memory behind Batch handles.
type batchMem struct {
	gen  atomic.Uint64
	free chan *batchMem // the stream's free list
	msg  pb.PooledKeyReplies
	// raw: RecvRaw handed out slices of msg, so Release leaves it to the
	// garbage collector instead of wiping and reusing it.
	raw  bool
	reps []BatchReply
	// per key; counters, alphas, betas are msg's lists for a packed
	// message and own (the o* lists) for one reply per message.
	views                   []fss.KeyView
	counters, alphas, betas []uint64
	evals                   [][]uint64
	koff                    []int // packed: key i's offset in Keys
	oc, oa, ob              []uint64
	// raws: key i's bytes when its request's profile is not kord-v1
	// (nil entries otherwise; empty when no key of the message is one).
	raws [][]byte
	// corrs: per key, its correlation shares (nil: none; shorter than
	// views when the last keys have none); slices of msg.
	corrs []*msg.CorrShares
	// bvecs: per key, its shares of a drawn payload vector (nil: none;
	// shorter than views when the last keys have none); slices of msg.
	bvecs [][]uint64
}

// live returns b's memory, nil once b has been released.
func (b Batch) live() *batchMem {
	if b.m == nil || b.m.gen.Load() != b.gen {
		return nil
	}
	return b.m
}

// key returns the index in m of b's key i; ok is false for a released
// batch or i outside [0, Len()).
func (b Batch) key(i int) (m *batchMem, k int, ok bool) {
	m = b.live()
	if m == nil || i < 0 || i >= len(m.views)-b.k0 {
		return nil, 0, false
	}
	return m, b.k0 + i, true
}

// Len returns the number of key shares in the batch, over all its
// replies; 0 once released.
func (b Batch) Len() int {
	if m := b.live(); m != nil {
		return len(m.views) - b.k0
	}
	return 0
}

// Replies returns the number of replies in the batch; 0 once released.
func (b Batch) Replies() int {
	if m := b.live(); m != nil {
		return len(m.reps) - b.r0
	}
	return 0
}

// Reply returns reply r, 0 ≤ r < Replies() (the zero BatchReply otherwise).
func (b Batch) Reply(r int) BatchReply {
	m := b.live()
	if m == nil || r < 0 || r >= len(m.reps)-b.r0 {
		return BatchReply{}
	}
	rep := m.reps[b.r0+r]
	rep.First -= b.k0
	return rep
}

// Key returns a view of key share i, 0 ≤ i < Len(): the zero view when
// the reply has no key share (consume mode) or was refused, when its key
// is of another profile than kord-v1 (see Raw), when i is out of range,
// and once the batch has been released.
func (b Batch) Key(i int) fss.KeyView {
	if m, k, ok := b.key(i); ok {
		return m.views[k]
	}
	return fss.KeyView{}
}

// ReplyViews returns the views of reply r's keys, Key(First) …
// Key(First+N-1), as one slice of the batch's memory (nil once released),
// for fss.BatchEval.EvalViews: a reply's keys all have its request's shape.
func (b Batch) ReplyViews(r int) []fss.KeyView {
	m := b.live()
	if m == nil || r < 0 || r >= len(m.reps)-b.r0 {
		return nil
	}
	rep := m.reps[b.r0+r]
	return m.views[rep.First : rep.First+rep.N : rep.First+rep.N]
}

// ReplyKeys returns reply r's key shares as the one slice of the batch's
// memory they lie in, stride bytes each (fss.ParseKeys reads them so, with
// no copy first), when the message packed them at one stride; nil
// otherwise and once released. The slice must not be used after Release.
func (b Batch) ReplyKeys(r int) (keys []byte, stride int) {
	m := b.live()
	if m == nil || r < 0 || r >= len(m.reps)-b.r0 {
		return nil, 0
	}
	rep := m.reps[b.r0+r]
	pk := m.msg.M.GetPacked()
	if pk == nil || pk.KeyStride == 0 || rep.Err != nil || rep.N == 0 || rep.First >= len(m.koff) || rep.First < len(m.raws) && m.raws[rep.First] != nil {
		return nil, 0
	}
	st := int(pk.KeyStride)
	lo := m.koff[rep.First]
	return pk.Keys[lo : lo+rep.N*st : lo+rep.N*st], st
}

// Raw returns key share i's bytes when its request asked for another
// profile than kord-v1 (client.WithProfile; for msg.Llama, LLAMA's key
// layout), nil otherwise, once released, or when i is out of range. The
// slice is the batch's memory: copy it to keep it past Release.
func (b Batch) Raw(i int) []byte {
	if m, k, ok := b.key(i); ok && k < len(m.raws) {
		return m.raws[k]
	}
	return nil
}

// Counter returns key i's counter.
func (b Batch) Counter(i int) uint64 {
	if m, k, ok := b.key(i); ok {
		return m.counters[k]
	}
	return 0
}

// AlphaShare returns this site's share of key i's α (derived mode).
func (b Batch) AlphaShare(i int) uint64 {
	if m, k, ok := b.key(i); ok && k < len(m.alphas) {
		return m.alphas[k]
	}
	return 0
}

// BetaShare returns this site's share of key i's β (derived mode).
func (b Batch) BetaShare(i int) uint64 {
	if m, k, ok := b.key(i); ok && k < len(m.betas) {
		return m.betas[k]
	}
	return 0
}

// Corr returns this site's correlation shares at index i (a
// correlation request's one output), nil for a key; they are the batch's
// memory, wiped by Release: copy what is kept.
func (b Batch) Corr(i int) *msg.CorrShares {
	if m, k, ok := b.key(i); ok && k < len(m.corrs) {
		return m.corrs[k]
	}
	return nil
}

// BetaShares returns this site's shares of each element of key i's drawn
// payload vector (a derived llama request with derive_beta and a group;
// nil otherwise), a slice of the batch's memory.
func (b Batch) BetaShares(i int) []uint64 {
	if m, k, ok := b.key(i); ok && k < len(m.bvecs) {
		return m.bvecs[k]
	}
	return nil
}

// Evals returns this site's evaluation shares for key i (consume mode),
// a slice of the batch's memory.
func (b Batch) Evals(i int) []uint64 {
	if m, k, ok := b.key(i); ok && k < len(m.evals) {
		return m.evals[k]
	}
	return nil
}

// Released reports whether the batch has been released (true for the
// zero Batch).
func (b Batch) Released() bool { return b.live() == nil }

// Release wipes the batch's memory and returns it to the stream for a
// later message. It is safe to call more than once and on any copy.
func (b Batch) Release() {
	m := b.live()
	if m == nil || !m.gen.CompareAndSwap(b.gen, b.gen+1) {
		return
	}
	m.wipe()
	if m.free != nil {
		select {
		case m.free <- m:
		default: // enough spare memory already: leave this to the GC, wiped
		}
	}
}

// wipe clears everything m holds of a message and readies it for reuse.
func (m *batchMem) wipe() {
	clear(m.views)
	clear(m.oc)
	clear(m.oa)
	clear(m.ob)
	clear(m.evals)
	clear(m.koff)
	clear(m.reps)
	clear(m.raws)
	m.raws = m.raws[:0]
	m.views, m.oc, m.oa, m.ob, m.evals, m.koff, m.reps = m.views[:0], m.oc[:0], m.oa[:0], m.ob[:0], m.evals[:0], m.koff[:0], m.reps[:0]
	m.counters, m.alphas, m.betas = nil, nil, nil
	if !m.raw {
		for _, c := range m.corrs {
			c.Wipe()
		}
	}
	clear(m.corrs)
	m.corrs = m.corrs[:0]
	if !m.raw {
		for _, v := range m.bvecs {
			clear(v)
		}
	}
	clear(m.bvecs)
	m.bvecs = m.bvecs[:0]
	if m.raw {
		// RecvRaw's replies still refer to the message: not ours to wipe
		// (their keys are copies where the message's came as a memfd).
		m.msg.ReleaseOwnKeys()
		m.msg = pb.PooledKeyReplies{}
		m.raw = false
		return
	}
	m.msg.Recycle()
}

// freeBatches is how many released batches' memory a stream keeps for
// later messages (each up to some hundred KiB of index for a 4096-key
// message; the message buffers themselves return to the codec's pool).
const freeBatches = 4

// RecvBatch returns the replies of the next message, in request order, as
// a Batch read in place. The application releases it when done with its
// keys; until then its memory is not reused. Replies that Recv or RecvRaw
// has not yet returned from a message they started come first, as a batch
// of their own.
func (s *Stream) RecvBatch() (Batch, error) {
	if b := s.cur; b.live() != nil && b.Replies() > 0 {
		s.cur = Batch{}
		return b, nil
	}
	s.cur.Release()
	s.cur = Batch{}
	var m *batchMem
	select {
	case m = <-s.free:
	default:
		m = &batchMem{free: s.free}
	}
	for {
		if err := s.s.RecvMsg(&m.msg); err != nil {
			m.msg.Recycle()
			s.putBack(m)
			return Batch{}, err
		}
		if err := s.readHandedKeys(&m.msg); err != nil {
			m.msg.Recycle()
			s.putBack(m)
			return Batch{}, err
		}
		if err := m.build(s.takeRaw); err != nil {
			m.wipe()
			s.putBack(m)
			return Batch{}, err
		}
		if len(m.reps) > 0 {
			return Batch{m: m, gen: m.gen.Load()}, nil
		}
		m.wipe() // an empty message: read the next
	}
}

// putBack returns memory that no handle refers to to the free list.
func (s *Stream) putBack(m *batchMem) {
	select {
	case s.free <- m:
	default:
	}
}

// setRaw records key i's bytes as a raw (non-kord-v1) key share.
func (m *batchMem) setRaw(i int, key []byte) {
	for len(m.raws) <= i {
		m.raws = append(m.raws, nil)
	}
	m.raws[i] = key
}

// build indexes the message in m.msg (read, not yet indexed); isRaw
// reports (once per reply) whether a reply's keys are raw bytes of
// another profile than kord-v1, which are not viewed as kord-v1 keys.
func (m *batchMem) build(isRaw func(id uint64) bool) error {
	msg := m.msg.M
	pk := msg.GetPacked()
	if pk != nil && len(pk.Ids) == 0 {
		pk = nil
	}
	if pk != nil && len(msg.Replies) > 0 {
		return errors.New("client: a reply message is both packed and not")
	}
	if pk != nil {
		return m.buildPacked(pk, isRaw)
	}
	for _, r := range msg.Replies {
		rep := BatchReply{ID: r.Id, First: len(m.views)}
		raw := isRaw(r.Id)
		if r.Error != "" {
			rep.Err = &ReplyError{Class: r.ErrorClass, Msg: r.Error}
			m.reps = append(m.reps, rep)
			continue
		}
		rep.N = len(r.Keys)
		for _, k := range r.Keys {
			var v fss.KeyView
			if len(k.GetKey()) > 0 && raw {
				m.setRaw(len(m.views), k.Key)
			} else if len(k.GetKey()) > 0 && rep.Err == nil {
				var err error
				if v, err = fss.ViewKey(k.Key); err != nil {
					rep.Err = fmt.Errorf("client: key at counter %d: %w", k.GetCounter(), err)
				}
			}
			if c := k.GetCorr(); c != nil && rep.Err == nil {
				sh, err := socket.CorrSharesFromPB(c)
				if err != nil {
					rep.Err = fmt.Errorf("client: correlation at counter %d: %w", k.GetCounter(), err)
				} else {
					for len(m.corrs) < len(m.views) {
						m.corrs = append(m.corrs, nil)
					}
					m.corrs = append(m.corrs, sh)
				}
			}
			if bs := k.GetBetaShares(); len(bs) > 0 {
				for len(m.bvecs) < len(m.views) {
					m.bvecs = append(m.bvecs, nil)
				}
				m.bvecs = append(m.bvecs, bs)
			}
			m.views = append(m.views, v)
			m.oc = append(m.oc, k.GetCounter())
			m.oa = append(m.oa, k.GetAlphaShare())
			m.ob = append(m.ob, k.GetBetaShare())
			m.evals = append(m.evals, k.GetEvals())
		}
		if rep.Err != nil {
			clear(m.views[rep.First:])
		}
		m.reps = append(m.reps, rep)
	}
	m.counters, m.alphas, m.betas = m.oc, m.oa, m.ob
	return nil
}

func (m *batchMem) buildPacked(pk *pb.PackedReplies, isRaw func(id uint64) bool) error {
	if err := checkPacked(pk); err != nil {
		return err
	}
	n := len(pk.Counters)
	m.counters, m.alphas, m.betas = pk.Counters, pk.AlphaShares, pk.BetaShares
	m.views = append(m.views[:0], make([]fss.KeyView, n)...)
	m.koff = append(m.koff[:0], make([]int, n)...)
	if len(pk.EvalLens) > 0 {
		m.evals = append(m.evals[:0], make([][]uint64, n)...)
	}
	k, ko, eo := 0, 0, 0
	// setEval points key i's evaluations into pk.Evals (consume mode).
	setEval := func(i int) {
		if len(pk.EvalLens) == 0 {
			return
		}
		if l := int(pk.EvalLens[i]); l > 0 {
			m.evals[i] = pk.Evals[eo : eo+l : eo+l]
		}
		eo += int(pk.EvalLens[i])
	}
	for r, id := range pk.Ids {
		rep := BatchReply{ID: id, First: k, N: int(pk.Counts[r])}
		raw := isRaw(id)
		if st := int(pk.KeyStride); st != 0 && !raw && rep.N > 0 {
			// Keys of one stride: validated in one pass (fss.ViewKeys),
			// with ViewKey's checks and errors.
			if bad, err := fss.ViewKeys(m.views[k:k+rep.N], pk.Keys[ko:ko+rep.N*st:ko+rep.N*st], st); err != nil {
				rep.Err = fmt.Errorf("client: key at counter %d: %w", pk.Counters[k+bad], err)
			}
			for i := k; i < k+rep.N; i++ {
				m.koff[i] = ko
				ko += st
			}
			for i := k; i < k+rep.N; i++ {
				setEval(i)
			}
			if rep.Err != nil {
				clear(m.views[k : k+rep.N])
			}
			k += rep.N
			m.reps = append(m.reps, rep)
			continue
		}
		for i := k; i < k+rep.N; i++ {
			m.koff[i] = ko
			l := keyLen(pk, i)
			if l > 0 && raw {
				m.setRaw(i, pk.Keys[ko:ko+l:ko+l])
			} else if l > 0 && rep.Err == nil {
				v, err := fss.ViewKey(pk.Keys[ko : ko+l : ko+l])
				if err != nil {
					rep.Err = fmt.Errorf("client: key at counter %d: %w", pk.Counters[i], err)
				}
				m.views[i] = v
			}
			ko += l
			setEval(i)
		}
		if rep.Err != nil {
			clear(m.views[k : k+rep.N])
		}
		k += rep.N
		m.reps = append(m.reps, rep)
	}
	return nil
}
