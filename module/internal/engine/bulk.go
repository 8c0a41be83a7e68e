// Bulk requests: N keys of one shape for one counter reservation, one
// frame and one slab.

package engine

import (
	"fmt"
	"runtime"
	"slices"

	"github.com/kord-fss/kord/fss"
	"github.com/kord-fss/kord/internal/prg"
	"github.com/kord-fss/kord/module/internal/channel"
	"github.com/kord-fss/kord/module/internal/kdf"
	"github.com/kord-fss/kord/module/msg"
)

// Bulk requests (msg.SubmitBulk, msg.Bulk): N keys of one shape as one
// unit from submission to collection. One counter reservation (and, in
// derived mode, the commit of the generated count with it) and, in bound
// mode, one commit when the peer's one frame is accepted; the roots, pair
// tags and derived masks of all N keys in one pass (kdf's batch forms,
// the same bytes as one key at a time); Gen straight into the slab's key
// buffer, which is handed to the collector as it is (no copy, no per-key
// record): the collector owns it and wipes it, once. Every secret
// scratch buffer of the engine is wiped once per use.

// bulkSlot is a bound bulk submission waiting for the peer's one frame:
// this party's own shares, wiped when the frame is accepted or the slot
// abandoned.
type bulkSlot struct {
	first       uint64
	n           int
	profile     msg.Profile
	params      fss.Params
	group       int      // payload elements per key (1, or a llama vector's G)
	alpha, beta []uint64 // n and n·group own shares
	shape       [32]byte // bulkShape of the request, kept with its slab
}

func (b *bulkSlot) wipe() {
	clear(b.alpha)
	clear(b.beta)
}

func (b *bulkSlot) desc() channel.Desc {
	return channel.Desc{Mode: byte(msg.Bound), Type: msg.TypeByte(b.profile, b.params.Type), InBits: b.params.InBits, OutBits: b.params.OutBits,
		Group: vecGroup(b.group)}
}

// vecGroup is the Desc.Group of a payload of g elements: 0 for one (the
// frame of a one-element key is what it always was), g for a vector.
func vecGroup(g int) int {
	if g <= 1 {
		return 0
	}
	return g
}

// bulkScratch holds the engine's per-batch working buffers, grown as
// needed and wiped after each use.
type bulkScratch struct {
	alpha, beta, alpha0, beta0 []uint64
	r0, r1                     []prg.Block
	descs                      []channel.Desc
}

func grow[T any](s []T, n int) []T {
	if cap(s) < n {
		return make([]T, n)
	}
	return s[:n]
}

func (s *bulkScratch) size(n, g int) {
	s.alpha, s.beta = grow(s.alpha, n), grow(s.beta, n*g)
	s.alpha0, s.beta0 = grow(s.alpha0, n), grow(s.beta0, n*g)
	s.r0, s.r1 = grow(s.r0, n), grow(s.r1, n)
}

func (s *bulkScratch) wipe() {
	clear(s.alpha)
	clear(s.beta)
	clear(s.alpha0)
	clear(s.beta0)
	clear(s.r0)
	clear(s.r1)
}

// workers returns the configured BatchGen worker count.
func workers(w int) (int, error) {
	if w < 0 {
		return 0, fmt.Errorf("%w: Workers %d is negative", ErrBadRequest, w)
	}
	if w == 0 {
		w = runtime.GOMAXPROCS(0)
	}
	return w, nil
}

// ValidateBulk checks a bulk request; the error names the field.
func ValidateBulk(b *msg.Bulk) error {
	if b == nil {
		return bad("Bulk: missing in a bulk submission")
	}
	if b.Mode != msg.Bound && b.Mode != msg.Derived {
		return bad("Bulk.Mode: mode %d cannot be bulk (want bound or derived)", b.Mode)
	}
	if b.Type != fss.DPF && b.Type != fss.DCF {
		return bad("Bulk.Type: unknown key type %d (want dpf or dcf)", b.Type)
	}
	if err := checkProfile("Bulk", b.Profile, b.Type); err != nil {
		return err
	}
	if b.InBits < 1 || b.InBits > 64 {
		return bad("Bulk.InBits: %d is outside 1..64", b.InBits)
	}
	if b.OutBits < 1 || b.OutBits > 64 {
		return bad("Bulk.OutBits: %d is outside 1..64", b.OutBits)
	}
	if b.N < 1 || b.N > msg.MaxBulk {
		return bad("Bulk.N: %d keys, want 1..%d", b.N, msg.MaxBulk)
	}
	if b.Group < 0 || b.Group > msg.MaxGroup {
		return bad("Bulk.Group: payload group %d is outside 1..%d", b.Group, msg.MaxGroup)
	}
	if b.Group > 1 && b.Profile != msg.Llama {
		return bad("Bulk.Group: a payload vector (group %d) needs the llama profile, not %v", b.Group, b.Profile)
	}
	g := b.G()
	if ks := msg.KeySizeG(b.Profile, b.Params(), g); b.N > msg.MaxSlabBytes/ks {
		return bad("Bulk.N: %d keys of %d bytes (group %d) pass the bulk limit of %d key bytes; ask for at most %d",
			b.N, ks, g, msg.MaxSlabBytes, msg.MaxSlabBytes/ks)
	}
	ma, mb := prg.Mask(b.InBits), prg.Mask(b.OutBits)
	if b.Mode == msg.Derived {
		if len(b.AlphaShares) != 0 || len(b.BetaShares) != 0 {
			return bad("Bulk.AlphaShares/BetaShares: must be empty in derived mode (the modules draw them)")
		}
		if b.DeriveBeta && (b.Beta != 0 || len(b.Betas) != 0) {
			return bad("Bulk.Beta/Betas: must be empty when DeriveBeta is set")
		}
		if b.Beta&^mb != 0 {
			return bad("Bulk.Beta: does not fit in %d output bits", b.OutBits)
		}
		if g == 1 {
			if len(b.Betas) != 0 {
				return bad("Bulk.Betas: %d elements for a one-element payload (use Beta, or set Group)", len(b.Betas))
			}
			return nil
		}
		if b.DeriveBeta {
			return nil
		}
		if b.Beta != 0 {
			return bad("Bulk.Beta: must be zero with a payload vector (group %d); the public payload is Betas", g)
		}
		if len(b.Betas) != g {
			return bad("Bulk.Betas: %d elements, want Group = %d", len(b.Betas), g)
		}
		for j, v := range b.Betas {
			if v&^mb != 0 {
				return bad("Bulk.Betas[%d]: does not fit in %d output bits", j, b.OutBits)
			}
		}
		return nil
	}
	if b.DeriveBeta || b.Beta != 0 || len(b.Betas) != 0 {
		return bad("Bulk.DeriveBeta/Beta/Betas: only for derived mode")
	}
	if len(b.AlphaShares) != b.N {
		return bad("Bulk.AlphaShares: %d shares, want N = %d", len(b.AlphaShares), b.N)
	}
	if len(b.BetaShares) != b.N*g {
		if g > 1 {
			return bad("Bulk.BetaShares: %d shares, want N·Group = %d·%d = %d", len(b.BetaShares), b.N, g, b.N*g)
		}
		return bad("Bulk.BetaShares: %d shares, want N = %d", len(b.BetaShares), b.N)
	}
	var ora, orb uint64
	for i := range b.N {
		ora |= b.AlphaShares[i]
	}
	for _, v := range b.BetaShares {
		orb |= v
	}
	if ora&^ma != 0 || orb&^mb != 0 {
		for i := range b.N {
			if b.AlphaShares[i]&^ma != 0 {
				return bad("Bulk.AlphaShares[%d]: does not fit in %d input bits", i, b.InBits)
			}
		}
		for i, v := range b.BetaShares {
			if v&^mb != 0 {
				if g > 1 {
					return bad("Bulk.BetaShares[%d] (key %d, element %d): does not fit in %d output bits", i, i/g, i%g, b.OutBits)
				}
				return bad("Bulk.BetaShares[%d]: does not fit in %d output bits", i, b.OutBits)
			}
		}
	}
	return nil
}

// submitBulk handles a bulk submission: nothing moves unless it is valid
// and fits the limits.
func (e *Engine) submitBulk(req *msg.SubmitRequest) (*msg.SubmitResponse, error) {
	b := req.Bulk
	if err := ValidateBulk(b); err != nil {
		return nil, err
	}
	if len(req.Shares) != 0 || len(req.Frame) != 0 {
		return nil, bad("Shares/Frame: must be empty in a bulk submission")
	}
	if b.Mode == msg.Bound {
		if err := checkTier(req.Tier); err != nil {
			return nil, err
		}
	}
	if !e.paired {
		return nil, ErrNotPaired
	}
	if b.Mode == msg.Bound && e.ch == nil {
		return nil, errNoSession
	}
	p, ready := e.pendingShares(), e.readyCount()
	if b.Mode == msg.Bound && b.N > MaxPendingShares-p {
		return nil, bad("Bulk.N: %d shares already wait for peer frames; %d more would pass the limit of %d pending shares",
			p, b.N, MaxPendingShares)
	}
	if b.N > e.maxReady-p-ready {
		return nil, bad("Bulk.N: %d shares wait for peer frames and %d outputs wait to be collected; %d more would pass the limit of %d (collect or abandon first)",
			p, ready, b.N, e.maxReady)
	}
	params := b.Params()
	if b.Profile == msg.KordV1 {
		if _, err := e.gen(params); err != nil {
			return nil, err
		}
	}
	// Commit the counters before any frame or key that depends on them
	// leaves; derived keys are generated by this call, so their count is
	// committed with the reservation.
	first := e.ctr.Next
	next := e.ctr
	next.Next += uint64(b.N)
	if b.Mode == msg.Derived {
		next.Generated += uint64(b.N)
	}
	if err := e.store.Save(next); err != nil {
		return nil, fmt.Errorf("module: saving counters: %w", err)
	}
	e.ctr = next
	resp := &msg.SubmitResponse{FirstCounter: first, Count: b.N}
	if b.Mode == msg.Derived {
		if err := e.deriveSlab(first, b); err != nil {
			return nil, err
		}
		return resp, nil
	}
	bs := &bulkSlot{first: first, n: b.N, profile: b.Profile, params: params, group: b.G(),
		alpha: append([]uint64(nil), b.AlphaShares...), beta: append([]uint64(nil), b.BetaShares...), shape: bulkShape(b)}
	sl := &slot{tier: req.Tier, bulk: bs}
	f, err := e.sealBulk(sl)
	if err != nil {
		bs.wipe()
		return nil, err
	}
	resp.Frames = [][]byte{f}
	e.slots = append(e.slots, sl)
	return resp, nil
}

// deriveSlab draws the (α, β) of a derived bulk at counters first… and
// generates its slab.
func (e *Engine) deriveSlab(first uint64, b *msg.Bulk) error {
	n, params, g := b.N, b.Params(), b.G()
	s := &e.bulk
	s.size(n, g)
	defer s.wipe()
	ds := &kdf.DerivedShape{Mode: byte(msg.Derived), Type: msg.TypeByte(b.Profile, params.Type),
		InBits: byte(params.InBits), OutBits: byte(params.OutBits), G: g, DeriveBeta: b.DeriveBeta}
	e.prf.DerivedBatch(first, ds, s.alpha, s.alpha0, s.beta[:n], s.beta0[:n])
	if g > 1 {
		// Element 0 of key i is the one-element β: spread the n words to
		// i·g (backwards, so no word is overwritten before it moves), then
		// draw the other elements.
		for i := n - 1; i > 0; i-- {
			s.beta[i*g], s.beta0[i*g] = s.beta[i], s.beta0[i]
		}
		e.prf.DerivedBetas(first, ds, s.beta, s.beta0)
	}
	public := b.Betas
	if g == 1 {
		public = []uint64{b.Beta}
	}
	ma, mb := prg.Mask(params.InBits), prg.Mask(params.OutBits)
	var as, bs []uint64
	for i := range n {
		s.alpha[i] &= ma
	}
	for k := range n * g {
		s.beta[k] &= mb
		if !b.DeriveBeta {
			s.beta[k] = public[k%g]
		}
	}
	sl, err := e.makeSlab(first, msg.Derived, b.Profile, params, g, n)
	if err != nil {
		return err
	}
	as, bs = grow(sl.AlphaShares, n), grow(sl.BetaShares, n*g)
	for i := range n {
		a, a0 := s.alpha[i], s.alpha0[i]&ma
		if e.party == 0 {
			as[i] = a0
		} else {
			as[i] = (a - a0) & ma
		}
	}
	for k := range n * g {
		be, b0 := s.beta[k], s.beta0[k]&mb
		if !b.DeriveBeta {
			b0 = public[k%g]
		}
		if e.party == 0 {
			bs[k] = b0
		} else {
			bs[k] = (be - b0) & mb
		}
	}
	sl.AlphaShares, sl.BetaShares = as, bs
	e.keepSlab(sl, slabReq{shape: bulkShape(b)})
	return nil
}

// maxFreeSlabs bounds the recycled slabs a module keeps.
const maxFreeSlabs = 8

// newSlab returns a recycled slab whose key buffer holds keyBytes, or a
// fresh one; its buffers were wiped when it was recycled.
func (e *Engine) newSlab(keyBytes int) *msg.Slab {
	for i, s := range e.freeSlabs {
		if cap(s.Keys) >= keyBytes {
			last := len(e.freeSlabs) - 1
			e.freeSlabs[i], e.freeSlabs[last] = e.freeSlabs[last], nil
			e.freeSlabs = e.freeSlabs[:last]
			return s
		}
	}
	return &msg.Slab{}
}

// Recycle takes back a slab this module handed out, once its holder is
// done with it: the slab is wiped (the one wipe its buffers get) and its
// buffers serve a later bulk. The caller must not use it after.
func (e *Engine) Recycle(s *msg.Slab) {
	if s == nil {
		return
	}
	// The wipe needs no lock (the caller owns s): a holder releasing a
	// slab does not wait for it behind a bulk the module is generating.
	s.Wipe()
	e.mu.Lock()
	defer e.mu.Unlock()
	if len(e.freeSlabs) < maxFreeSlabs {
		e.freeSlabs = append(e.freeSlabs, s)
	}
}

// recycleLocked is Recycle under e.mu.
func (e *Engine) recycleLocked(s *msg.Slab) {
	s.Wipe()
	if len(e.freeSlabs) < maxFreeSlabs {
		e.freeSlabs = append(e.freeSlabs, s)
	}
}

// makeSlab generates this party's keys of a bulk from the (α, β) in
// e.bulk.alpha/beta (which the caller wipes): pair tags and roots in one
// pass each, then Gen straight into the slab's key buffer.
func (e *Engine) makeSlab(first uint64, mode msg.Mode, pr msg.Profile, p fss.Params, g, n int) (*msg.Slab, error) {
	s := &e.bulk
	alpha, beta := s.alpha[:n], s.beta[:n*g]
	ks := msg.KeySizeG(pr, p, g)
	sl := e.newSlab(n * ks)
	*sl = msg.Slab{First: first, N: n, Mode: mode, Profile: pr, Params: p, Group: vecGroup(g), Stride: ks,
		Keys: grow(sl.Keys, n*ks), PairTags: grow(sl.PairTags, n*msg.PairTagSize),
		AlphaShares: sl.AlphaShares[:0], BetaShares: sl.BetaShares[:0]}
	m, t, l, o := byte(mode), msg.TypeByte(pr, p.Type), byte(p.InBits), byte(p.OutBits)
	e.prf.PairTagsG(first, m, t, l, o, g, alpha, beta, sl.PairTags)
	e.prf.RootsBatchG(first, m, t, l, o, g, alpha, beta, s.r0[:n], s.r1[:n])
	if err := e.genParty(pr, p, g, alpha, beta, s.r0[:n], s.r1[:n], sl.Keys); err != nil {
		clear(sl.Keys)
		// fss names the offending α or β in its errors: never pass them on.
		return nil, fmt.Errorf("module: batch Gen at counter %d failed (parameters withheld)", first)
	}
	e.dispatches += uint64(n)
	return sl, nil
}

// keepSlab queues a generated slab for collection.
func (e *Engine) keepSlab(sl *msg.Slab, req slabReq) {
	e.slabs = append(e.slabs, sl)
	e.slabReqs = append(e.slabReqs, req)
	e.slabKeys += sl.N
}

// readyCount counts outputs waiting to be collected; e.mu held.
func (e *Engine) readyCount() int { return len(e.ready) + e.slabKeys }

// gen returns the batch generator for shape p.
func (e *Engine) gen(p fss.Params) (*fss.BatchGen, error) {
	if g := e.gens[p]; g != nil {
		return g, nil
	}
	g, err := fss.NewBatchGen(p, fss.BatchOptions{Workers: e.workers})
	if err != nil {
		return nil, fmt.Errorf("module: batch Gen for %v: %w", p, err)
	}
	if e.gens == nil || len(e.gens) >= maxGens {
		// Shapes a host may ask for are many (ℓ, n, type: 8192); keep
		// the generators of the last few only.
		e.gens = map[fss.Params]*fss.BatchGen{}
	}
	e.gens[p] = g
	return g, nil
}

// bulkDescs returns n copies of d in the engine's scratch.
func (e *Engine) bulkDescs(d channel.Desc, n int) []channel.Desc {
	ds := grow(e.bulk.descs, n)
	for i := range ds {
		ds[i] = d
	}
	e.bulk.descs = ds
	return ds
}

// sealBulk returns this party's one frame for a bound bulk slot (see
// msg.Bulk): the bytes of the frames the one-key path sends for the same
// batch, concatenated — per key on otp and mac, one envelope on batchmac.
func (e *Engine) sealBulk(sl *slot) ([]byte, error) {
	bs := sl.bulk
	d := bs.desc()
	if sl.tier == msg.Keystream {
		return e.ch.SealKeystreamBulk(make([]byte, 0, bs.n*d.Size()), bs.first, d, bs.alpha, bs.beta), nil
	}
	if sl.tier == msg.MAC {
		one := []channel.Desc{d}
		es := channel.EnvelopeSize(one)
		f := make([]byte, 0, bs.n*es)
		g := bs.group
		for i := range bs.n {
			plain := channel.PackVec(e.plain[:0], d, bs.alpha[i], bs.beta[i*g:(i+1)*g])
			e.plain = plain
			var err error
			f, err = e.ch.SealTo(f, channel.TierMAC, bs.first+uint64(i), one, plain)
			clear(plain)
			if err != nil {
				return nil, err
			}
		}
		return f, nil
	}
	ds := e.bulkDescs(d, bs.n)
	plain := e.plain[:0]
	for i, g := 0, bs.group; i < bs.n; i++ {
		plain = channel.PackVec(plain, d, bs.alpha[i], bs.beta[i*g:(i+1)*g])
	}
	e.plain = plain
	defer clear(plain)
	return e.ch.SealTo(make([]byte, 0, channel.EnvelopeSize(ds)), channel.TierBatchMAC, bs.first, ds, plain)
}

// submitBulkFrame opens the peer's one frame of the oldest pending slot, a
// bulk one. Any failure rejects it as a whole before any (α, β) is
// reconstructed, with no counter movement; on acceptance the counters are
// committed and the slab generated before the answer leaves.
func (e *Engine) submitBulkFrame(sl *slot, frame []byte) (*msg.SubmitResponse, error) {
	bs := sl.bulk
	n, d, g := bs.n, bs.desc(), bs.group
	s := &e.bulk
	s.size(n, g)
	defer s.wipe()
	peerA, peerB := s.alpha0[:n], s.beta0[:n*g]
	if sl.tier == msg.Keystream {
		if len(frame) != n*d.Size() {
			return e.reject(RejectLength, bs.first)
		}
		if err := e.ch.OpenKeystreamBulk(bs.first, d, frame, peerA, peerB); err != nil {
			return e.reject(RejectRange, bs.first)
		}
	} else if sl.tier == msg.MAC {
		if rej, ok := e.openBulkMAC(bs, frame, peerA, peerB); !ok {
			return e.reject(rej, bs.first)
		}
	} else {
		ds := e.bulkDescs(d, n)
		got, err := channel.EnvelopeCounter(frame, ds)
		if err != nil {
			return e.reject(RejectLength, bs.first)
		}
		if got < e.ctr.PeerFloor {
			return e.reject(RejectReplay, bs.first)
		}
		if got != bs.first {
			return e.reject(RejectOrder, bs.first)
		}
		plain, err := e.ch.OpenTo(e.plain[:0], channel.TierBatchMAC, got, ds, frame)
		if err != nil {
			return e.reject(RejectAuth, bs.first)
		}
		e.plain = plain
		sz := d.Size()
		for i := range n {
			a, err := channel.UnpackVec(plain[i*sz:(i+1)*sz], d, peerB[i*g:(i+1)*g])
			if err != nil {
				clear(plain)
				return e.reject(RejectRange, bs.first)
			}
			peerA[i] = a
		}
		clear(plain)
	}
	// Authentic and fresh: reconstruct, commit, generate.
	ma, mb := prg.Mask(bs.params.InBits), prg.Mask(bs.params.OutBits)
	for i := range n {
		s.alpha[i] = (bs.alpha[i] + peerA[i]) & ma
	}
	for k := range n * g {
		s.beta[k] = (bs.beta[k] + peerB[k]) & mb
	}
	// The own shares stay with the slab (its request, for re-collects).
	rq := slabReq{shape: bs.shape, alpha: bs.alpha, beta: bs.beta}
	bs.alpha, bs.beta = nil, nil
	e.slots = e.slots[1:]
	next := e.ctr
	next.PeerFloor = bs.first + uint64(n)
	next.Accepted = next.PeerFloor
	next.Generated += uint64(n)
	if err := e.store.Save(next); err != nil {
		rq.wipe()
		return nil, fmt.Errorf("module: saving counters: %w", err)
	}
	e.ctr = next
	slab, err := e.makeSlab(bs.first, msg.Bound, bs.profile, bs.params, g, n)
	if err != nil {
		rq.wipe()
		return nil, err
	}
	e.keepSlab(slab, rq)
	return &msg.SubmitResponse{Accepted: true, FirstCounter: bs.first, Count: n}, nil
}

// collectSlab hands out the slab of the bulk whose first counter is
// first, once, with its request's digest; the caller owns it (and wipes
// it, and the request's record). expect (nil: none; its shares those of
// keys at…): the request the caller answers, which the slab must have
// been generated for (checkSlabReq).
func (e *Engine) collectSlab(first uint64, count int, points []uint64, expect *msg.Bulk, at int) (*msg.Slab, slabReq, error) {
	if len(points) != 0 {
		return nil, slabReq{}, bad("Points: only for consume mode, which has no range collect")
	}
	for i, sl := range e.slabs {
		if sl.First != first {
			continue
		}
		if sl.N != count {
			return nil, slabReq{}, bad("Count: the bulk at counter %d has %d keys, not %d (collect a bulk whole)", first, sl.N, count)
		}
		req := e.slabReqs[i]
		if err := e.checkSlabReq(first, &req, expect, at); err != nil {
			return nil, slabReq{}, err
		}
		e.slabs = slices.Delete(e.slabs, i, i+1)
		e.slabReqs = slices.Delete(e.slabReqs, i, i+1)
		e.slabKeys -= sl.N
		return sl, req, nil
	}
	return nil, slabReq{}, bad("Counter: no bulk output ready at counter %d", first)
}

// dropSlabs wipes and drops the uncollected slabs whose first counter is
// at most counter (all with counter ^0); it returns the keys dropped.
func (e *Engine) dropSlabs(counter uint64) int {
	keep, reqs, n := e.slabs[:0], e.slabReqs[:0], 0
	for i, sl := range e.slabs {
		if sl.First <= counter {
			sl.Wipe()
			e.slabReqs[i].wipe()
			n += sl.N
			continue
		}
		keep, reqs = append(keep, sl), append(reqs, e.slabReqs[i])
	}
	clear(e.slabs[len(keep):])
	e.slabs, e.slabReqs = keep, reqs
	e.slabKeys -= n
	return n
}

// openBulkMAC opens a mac-tier bulk frame: n one-key envelopes at the
// counters first… in order, each checked (length, replay, order,
// authentication, range) before the next; the first failure names the
// reject reason, and the peer shares opened so far are left for the
// caller's wipe.
func (e *Engine) openBulkMAC(bs *bulkSlot, frame []byte, peerA, peerB []uint64) (string, bool) {
	d := bs.desc()
	one := []channel.Desc{d}
	es := channel.EnvelopeSize(one)
	if len(frame) != bs.n*es {
		return RejectLength, false
	}
	for i := range bs.n {
		env := frame[i*es : (i+1)*es]
		got, err := channel.EnvelopeCounter(env, one)
		if err != nil {
			return RejectLength, false
		}
		if got < e.ctr.PeerFloor {
			return RejectReplay, false
		}
		if got != bs.first+uint64(i) {
			return RejectOrder, false
		}
		plain, err := e.ch.OpenTo(e.plain[:0], channel.TierMAC, got, one, env)
		if err != nil {
			return RejectAuth, false
		}
		e.plain = plain
		g := bs.group
		a, err := channel.UnpackVec(plain, d, peerB[i*g:(i+1)*g])
		clear(plain)
		if err != nil {
			return RejectRange, false
		}
		peerA[i] = a
	}
	return "", true
}
