// The engine over its counter store: counters committed before any output
// leaves, restore after a restart, and re-collection of remembered outputs
// only for the request they were generated for.

package engine

import (
	"context"
	"crypto/hkdf"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"slices"
	"sync"

	"github.com/kord-fss/kord/module/internal/channel"
	"github.com/kord-fss/kord/module/internal/kdf"
	"github.com/kord-fss/kord/module/internal/pairing"
	"github.com/kord-fss/kord/module/msg"
	"github.com/kord-fss/kord/module/store"
)

// ErrLocked is returned for key requests while a restarted module waits
// for its peer's counter witness.
var ErrLocked = errors.New("module: locked until the peer's counter witness has been checked (resync)")

// ErrWitness marks a witness that failed parsing or authentication.
var ErrWitness = errors.New("module: counter witness rejected")

// LabelWitness is the HKDF label of the per-direction witness keys.
const LabelWitness = "kord/v1/witness/dir"

// Witness layout: magic ‖ protocol version ‖ party ‖ peer's challenge ‖
// own challenge ‖ next(8, LE) ‖ peer floor(8, LE) ‖ generated(8, LE) ‖
// accepted(8, LE) ‖ HMAC-SHA256. Before the version byte (module
// protocol 1): 112 bytes; before accepted: 104. Both modules of a pair run
// the same protocol version; a module refuses another, saying which.
const (
	challengeSize  = kdf.SessionChallengeSize
	witnessBody    = len(witnessMagic) + 2 + 2*challengeSize + 32
	witnessSize    = witnessBody + sha256.Size // 113
	witnessSizeV1  = witnessSize - 1
	witnessSizeOld = witnessSizeV1 - 8
	witnessMagic   = "kord/v1/witness"
	collectCache   = 8192
)

// ProtocolVersion is the module protocol version a Durable states in its
// witness (the modules' handshake). 2: the version is stated (issue 33).
const ProtocolVersion = 2

// Durable is a software module for the module daemon: its store keeps the
// pairing and counters, it restarts paired, and it stays locked — no key
// request accepted — until a fresh authenticated counter witness from the
// peer module has been reconciled (the rollback witness). It remembers the
// outputs it handed out recently, so a repeated Collect of a committed
// counter returns the same bytes.
//
// The witness exchange also starts a session: each witness carries its
// sender's own challenge next to the peer's, so at Reconcile each module
// holds both challenges, authenticated, and installs the session's
// direction keys (kdf.DeriveSession over c0 ‖ c1). A freshly paired module
// seals under the pairing's keys until its first session; a restored one
// has no frame keys at all until then.
type Durable struct {
	*Engine
	wkey   [2][32]byte
	sbase  [32]byte // K_sess (kdf.SessionBase)
	locked bool
	// challenge is this module's outstanding challenge, which one
	// Reconcile consumes; own is the same, kept for the Witness that
	// party 0 sends after its Reconcile.
	challenge []byte
	own       []byte
	// ring remembers the outputs handed out, the one at counter c in slot
	// c mod collectCache (counters are handed out in order, so: the last
	// collectCache of them), with no index to maintain.
	ring []cached
	// slabs remembers the bulk slabs handed out, oldest first, without a
	// copy (see keepCollected).
	slabs    []*msg.Slab
	slabReqs []slabReq // the request of each of slabs, index for index
	slabKeys int
	// pins counts, per slab, the holders of CollectSlabPinned that have
	// not released it yet (a socket writing it out after the lock); a
	// pinned slab that falls out of slabs is recycled — wiped — by its
	// last release instead (unpinned marks those).
	pins     map[*msg.Slab]int
	unpinned map[*msg.Slab]bool
	// noRing (Config.NoRecollect): no re-collect window; each output is
	// handed out once, as by Engine (a slab is the caller's, not a copy).
	noRing bool
	// slabFD: the memfds of the remembered slabs handed out as one
	// (CollectSlabFD), closed by fds as they leave the window; fdFailed:
	// a memfd failed once (logged once).
	slabFD   map[*msg.Slab]int
	fds      SlabFDs
	fdFailed bool
}

// minSlabs is the fewest collected slabs a Durable remembers.
const minSlabs = 4

// Reconciled reports a witness check.
type Reconciled struct {
	// RolledBack: the peer has accepted frames of ours at counters this
	// module does not remember assigning — its state was restored from an
	// older copy. The evidence is the peer's Accepted mark (raised by
	// accepted frames only, a lower bound after the peer's restarts), which
	// a module that only crashed never resumes below: it committed every
	// counter it sealed a frame at.
	RolledBack bool
	// From and Next are this module's next counter before and after.
	From, Next uint64
	// Dropped counts pending requests and outputs dropped.
	Dropped int
}

// OpenDurable returns a module over a PairingStore: paired and locked if
// the store holds a pairing for c.Party, unpaired otherwise.
func OpenDurable(c Config) (*Durable, error) {
	ps, ok := c.Store.(store.PairingStore)
	if !ok {
		return nil, fmt.Errorf("%w: Store does not keep a pairing", ErrBadRequest)
	}
	p, err := ps.LoadPairing()
	if err != nil {
		return nil, err
	}
	if p != nil && len(c.Secret) < pairing.MinSecret {
		c.Secret = make([]byte, pairing.MinSecret) // already paired: not used
	}
	e, err := New(c)
	if err != nil {
		return nil, err
	}
	d := &Durable{Engine: e, noRing: c.NoRecollect}
	if p == nil {
		return d, nil
	}
	defer clear(p.Secret)
	if p.Party != c.Party {
		return nil, fmt.Errorf("%w: the state file belongs to party %d, not %d", ErrBadRequest, p.Party, c.Party)
	}
	if p.KEM != e.kem.Name() {
		return nil, fmt.Errorf("%w: the state file was paired with KEM %s, not %s", ErrBadRequest, p.KEM, e.kem.Name())
	}
	keys, err := kdf.Derive(p.Secret)
	if err != nil {
		return nil, err
	}
	defer keys.Wipe()
	prf, err := kdf.NewPRF(&keys.Root)
	if err != nil {
		return nil, err
	}
	ctr, err := c.Store.Load()
	if err != nil {
		return nil, err
	}
	if err := d.deriveWitness(p.Secret); err != nil {
		return nil, err
	}
	// No channel: the pairing's frame keys may have sealed frames at the
	// counters this (possibly older) state file resumes from, so nothing
	// is sealed until Reconcile installs a session's keys.
	e.ch, e.prf, e.ctr, e.paired = nil, prf, ctr, true
	clear(e.secret)
	d.locked = true
	e.log.Info("module restored from state file", "party", e.party, "next", ctr.Next, "peer_floor", ctr.PeerFloor, "accepted", ctr.Accepted)
	return d, nil
}

// deriveWitness derives the witness keys and K_sess from K_ch.
func (d *Durable) deriveWitness(kch []byte) error {
	if err := kdf.SessionBase(kch, &d.sbase); err != nil {
		return err
	}
	for dir := 0; dir < 2; dir++ {
		k, err := hkdf.Expand(sha256.New, kch, LabelWitness+string([]byte{byte('0' + dir)}), 32)
		if err != nil {
			return err
		}
		copy(d.wkey[dir][:], k)
		clear(k)
	}
	return nil
}

// Provision pairs as Engine.Provision and, on completion, derives the
// witness keys and K_sess from the saved pairing.
func (d *Durable) Provision(ctx context.Context, req *msg.ProvisionRequest) (*msg.ProvisionResponse, error) {
	r, err := d.Engine.Provision(ctx, req)
	if err != nil || !r.Paired {
		return r, err
	}
	p, err := d.store.(store.PairingStore).LoadPairing()
	if err != nil || p == nil {
		return nil, fmt.Errorf("module: reading back the pairing: %v", err)
	}
	defer clear(p.Secret)
	d.mu.Lock()
	defer d.mu.Unlock()
	return r, d.deriveWitness(p.Secret)
}

// Locked reports whether the module waits for a witness.
func (d *Durable) Locked() bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.locked
}

// Poll reports status.
func (d *Durable) Poll(ctx context.Context, req *msg.PollRequest) (*msg.PollResponse, error) {
	return d.Engine.Poll(ctx, req)
}

// Submit refuses own shares and derived correlations while locked (a
// restored module's counters may be behind what its peer has seen, so
// nothing is drawn before the witness moved them forward); frames and
// abandons pass.
func (d *Durable) Submit(ctx context.Context, req *msg.SubmitRequest) (*msg.SubmitResponse, error) {
	if req.Kind == msg.SubmitShares || req.Kind == msg.SubmitBulk || req.Kind == msg.SubmitCorrelation {
		d.mu.Lock()
		locked := d.locked
		d.mu.Unlock()
		if locked {
			return nil, ErrLocked
		}
	}
	return d.Engine.Submit(ctx, req)
}

// Collect hands out the output at a counter; a repeat of a recent Collect
// returns the same bytes (consume mode: only for the same points). A
// derived correlation (req.Corr) is handed out once and not remembered:
// its shares are the caller's to wipe, and a repeat is refused.
func (d *Durable) Collect(ctx context.Context, req *msg.CollectRequest) (*msg.CollectResponse, error) {
	if req.Corr || d.noRing {
		return d.Engine.Collect(ctx, req)
	}
	if req.Count != 0 {
		var out *msg.CollectResponse
		err := d.CollectSlab(req.Counter, req.Count, req.Points, req.Expect, req.ExpectAt, func(s *msg.Slab) {
			out = &msg.CollectResponse{Counter: s.First, Mode: s.Mode, Slab: cloneSlab(s)}
		})
		return out, err
	}
	d.mu.Lock()
	if c := d.cached(req.Counter, req.Points); c != nil {
		r := cloneCollect(&c.resp)
		d.mu.Unlock()
		return r, nil
	}
	var rq msg.Share
	if o := d.ready[req.Counter]; o != nil {
		rq = o.req
	}
	d.mu.Unlock()
	r, err := d.Engine.Collect(ctx, req)
	if err != nil {
		return nil, err
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	c := d.slot(req.Counter)
	c.req = rq
	key, evals := append(c.resp.Key[:0], r.Key...), append(c.resp.Evals[:0], r.Evals...)
	c.resp = *r
	c.resp.Key, c.resp.Evals = key, evals
	c.points = append(c.points[:0], req.Points...)
	c.used = true
	return r, nil
}

// cached returns the remembered output at counter for these points, or nil.
func (d *Durable) cached(counter uint64, points []uint64) *cached {
	if d.ring == nil {
		return nil
	}
	c := &d.ring[counter%collectCache]
	if !c.used || c.resp.Counter != counter || !slices.Equal(c.points, points) {
		return nil
	}
	return c
}

// slot empties and returns the cache slot of counter; its buffers are
// reused: wiped, then overwritten.
func (d *Durable) slot(counter uint64) *cached {
	if d.ring == nil {
		d.ring = make([]cached, collectCache)
	}
	c := &d.ring[counter%collectCache]
	c.used = false
	clear(c.resp.Key)
	clear(c.resp.Evals)
	c.req = msg.Share{}
	if o := d.ready[counter]; o != nil {
		c.req = o.req // the output about to be collected into the slot
	}
	return c
}

// CollectRange hands emit the outputs at counters first … first+count-1 in
// order, under one lock, as Collect would (repeats of recent counters
// return the same bytes); points is nil or one list per counter. Each
// output is written straight into its cache slot and is valid only during
// emit. It stops at the first error.
func (d *Durable) CollectRange(first uint64, count int, points [][]uint64, emit func(*msg.CollectResponse)) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	var buf []byte
	for i := 0; i < count; i++ {
		counter := first + uint64(i)
		var pts []uint64
		if points != nil {
			pts = points[i]
		}
		if d.noRing {
			// Handed out once: the key is written to one scratch buffer
			// (valid only during emit) and wiped after.
			r, err := d.Engine.collectLocked(counter, pts, buf[:0])
			if err != nil {
				return err
			}
			emit(&r)
			clear(r.Key)
			clear(r.Evals)
			buf = r.Key
			continue
		}
		if c := d.cached(counter, pts); c != nil {
			emit(&c.resp)
			continue
		}
		c := d.slot(counter)
		r, err := d.Engine.collectLocked(counter, pts, c.resp.Key[:0])
		if err != nil {
			return err
		}
		c.resp = r
		c.points = append(c.points[:0], pts...)
		c.used = true
		emit(&c.resp)
	}
	return nil
}

// RecollectRange hands emit the outputs handed out before at counters
// first … first+count-1, each only if it was generated for expect[i]
// (same own shares, shape and payload as submitted) and, in consume mode,
// for the same points. It checks every counter before it emits any and
// refuses the call otherwise: nothing is generated or handed out for a
// request other than the one an output was made for.
func (d *Durable) RecollectRange(first uint64, count int, points [][]uint64, expect []msg.Share, emit func(*msg.CollectResponse)) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if len(expect) != count {
		return bad("Expect: %d requests for %d counters", len(expect), count)
	}
	cs := make([]*cached, count)
	for i := range count {
		counter := first + uint64(i)
		var pts []uint64
		if points != nil {
			pts = points[i]
		}
		c := d.cached(counter, pts)
		if c == nil {
			return bad("Counter: no output handed out at counter %d is remembered (a re-collect hands out only those)", counter)
		}
		if c.req != expect[i] {
			d.rejects[RejectRecollect]++
			d.log.Warn("re-collect refused: the output was generated for another request", "party", d.party, "counter", counter)
			return bad("Expect[%d]: the output at counter %d was generated for another request; refused", i, counter)
		}
		cs[i] = c
	}
	for _, c := range cs {
		emit(&c.resp)
	}
	return nil
}

// RejectRecollect counts re-collects refused because the output was
// generated for another request (Poll: Rejects).
const RejectRecollect = "recollect_mismatch"

// CollectSlab hands emit the slab of the bulk at first (Count keys), as
// Collect would: a repeat of a recent one gives the same bytes. The slab
// is the module's remembered copy, valid only during emit (the caller
// copies what it keeps, e.g. into its answer on the socket). expect (nil:
// none) and at: the bulk request the caller answers
// (msg.CollectRequest.Expect, ExpectAt).
func (d *Durable) CollectSlab(first uint64, count int, points []uint64, expect *msg.Bulk, at int, emit func(*msg.Slab)) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if s, err := d.recentSlab(first, count, expect, at); err != nil || s != nil {
		if err == nil && d.slabHandedAsFD(s) {
			err = bad("the bulk at counter %d was handed out as a memfd: collect it as one (slab fds)", first)
		}
		if err == nil {
			emit(s)
		}
		return err
	}
	s, req, err := d.Engine.collectSlab(first, count, points, expect, at)
	if err != nil {
		return err
	}
	if d.noRing {
		req.wipe()
		emit(s)
		d.recycleLocked(s)
		return nil
	}
	d.keepCollected(s, req)
	emit(s)
	return nil
}

// CollectSlabPinned is CollectSlab with the slab kept valid after the
// call, until release: emit may keep a view of the slab's keys (a socket
// writes them out after the module's lock is released, with no copy). The
// slab stays the module's: release (call it exactly once, whatever emit
// did) wipes it if it fell out of the re-collect window meanwhile.
func (d *Durable) CollectSlabPinned(first uint64, count int, emit func(*msg.Slab)) (release func(), err error) {
	var got *msg.Slab
	err = d.CollectSlab(first, count, nil, nil, 0, func(s *msg.Slab) {
		// Under d.mu: pinned before anyone can recycle it.
		if d.pins == nil {
			d.pins, d.unpinned = map[*msg.Slab]int{}, map[*msg.Slab]bool{}
		}
		d.pins[s]++
		got = s
		emit(s)
	})
	if got == nil {
		return func() {}, err
	}
	var once sync.Once
	return func() { once.Do(func() { d.unpin(got) }) }, err
}

// unpin drops one pin of s, recycling it if it was dropped while pinned.
func (d *Durable) unpin(s *msg.Slab) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.pins[s]--; d.pins[s] > 0 {
		return
	}
	delete(d.pins, s)
	if d.unpinned[s] {
		delete(d.unpinned, s)
		d.Engine.recycleLocked(s)
	}
}

// recycleLocked recycles a slab the module no longer remembers, or, while
// it is pinned, leaves that to its last release; d.mu held.
func (d *Durable) recycleLocked(s *msg.Slab) {
	d.closeSlabFD(s)
	if d.pins[s] > 0 {
		d.unpinned[s] = true
		return
	}
	d.Engine.recycleLocked(s)
}

// cloneSlab copies s: the caller owns (and wipes) the copy.
func cloneSlab(s *msg.Slab) *msg.Slab {
	c := *s
	c.Keys = slices.Clone(s.Keys)
	c.PairTags = slices.Clone(s.PairTags)
	c.AlphaShares = slices.Clone(s.AlphaShares)
	c.BetaShares = slices.Clone(s.BetaShares)
	return &c
}

type cached struct {
	resp   msg.CollectResponse
	points []uint64
	// req: the request the output was generated for (RecollectRange).
	req  msg.Share
	used bool
}

// cloneCollect copies r; empty keys and evaluations come back nil.
func cloneCollect(r *msg.CollectResponse) *msg.CollectResponse {
	c := *r
	c.Key, c.Evals = nil, nil
	if len(r.Key) > 0 {
		c.Key = slices.Clone(r.Key)
	}
	if len(r.Evals) > 0 {
		c.Evals = slices.Clone(r.Evals)
	}
	return &c
}

// Challenge draws a fresh nonce for the peer's witness; it is also this
// module's contribution to the next session's keys.
func (d *Durable) Challenge() ([]byte, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if !d.paired {
		return nil, ErrNotPaired
	}
	c := make([]byte, challengeSize)
	if _, err := io.ReadFull(d.rand, c); err != nil {
		return nil, fmt.Errorf("module: drawing a challenge: %w", err)
	}
	d.challenge, d.own = c, slices.Clone(c)
	return slices.Clone(c), nil
}

// Witness authenticates this module's counters against the peer's
// challenge and carries this module's own (latest) challenge: magic ‖
// party ‖ peer's challenge ‖ own challenge ‖ next ‖ peer floor ‖
// generated ‖ accepted ‖ HMAC-SHA256 under this direction's witness key.
// Challenge must have been called first.
func (d *Durable) Witness(peerChallenge []byte) ([]byte, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if !d.paired {
		return nil, ErrNotPaired
	}
	if len(peerChallenge) != challengeSize {
		return nil, fmt.Errorf("%w: challenge is %d bytes, want %d", ErrBadRequest, len(peerChallenge), challengeSize)
	}
	if d.own == nil {
		return nil, fmt.Errorf("%w: no challenge of this module to carry: call Challenge before Witness", ErrBadRequest)
	}
	w := make([]byte, 0, witnessSize)
	w = append(w, witnessMagic...)
	w = append(w, ProtocolVersion, byte(d.party))
	w = append(w, peerChallenge...)
	w = append(w, d.own...)
	w = binary.LittleEndian.AppendUint64(w, d.ctr.Next)
	w = binary.LittleEndian.AppendUint64(w, d.ctr.PeerFloor)
	w = binary.LittleEndian.AppendUint64(w, d.ctr.Generated)
	w = binary.LittleEndian.AppendUint64(w, d.ctr.Accepted)
	m := hmac.New(sha256.New, d.wkey[d.party][:])
	m.Write(w)
	return m.Sum(w), nil
}

// Reconcile checks the peer's witness over this module's last challenge
// (once) and resynchronises forward: both modules move to the largest
// counter either has assigned or accepted, drop everything pending, and
// this module unlocks. Counters skipped this way are never used. It starts
// a session: the direction keys become kdf.DeriveSession(K_sess, c0, c1),
// c_b being party b's challenge (this module's own, and the one the peer's
// witness carries), so frames sealed before — under any earlier session's
// keys or the pairing's — never open again, and no key seals twice at one
// counter even if the state file was restored.
func (d *Durable) Reconcile(w []byte) (*Reconciled, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if !d.paired {
		return nil, ErrNotPaired
	}
	chal := d.challenge
	d.challenge = nil
	if chal == nil {
		return nil, fmt.Errorf("%w: no challenge outstanding", ErrWitness)
	}
	if len(w) == witnessSizeOld && string(w[:len(witnessMagic)]) == witnessMagic {
		return nil, fmt.Errorf("%w: a %d-byte witness, of a version before the accepted mark (want %d bytes): run the same kord version on both modules of a pair", ErrWitness, len(w), witnessSize)
	}
	if len(w) == witnessSizeV1 && string(w[:len(witnessMagic)]) == witnessMagic {
		return nil, fmt.Errorf("%w: the peer module speaks module protocol 1 (before versions were stated), this module %d: upgrade both modules of a pair together (docs/operations.md, \"Upgrading a pair\")", ErrWitness, ProtocolVersion)
	}
	if len(w) != witnessSize || string(w[:len(witnessMagic)]) != witnessMagic {
		return nil, fmt.Errorf("%w: malformed", ErrWitness)
	}
	if v := w[len(witnessMagic)]; v != ProtocolVersion {
		return nil, fmt.Errorf("%w: the peer module speaks module protocol %d, this module %d: upgrade both modules of a pair together (docs/operations.md, \"Upgrading a pair\")", ErrWitness, v, ProtocolVersion)
	}
	body, tag := w[:witnessBody], w[witnessBody:]
	m := hmac.New(sha256.New, d.wkey[1-d.party][:])
	m.Write(body)
	if !hmac.Equal(m.Sum(nil), tag) {
		return nil, fmt.Errorf("%w: authentication", ErrWitness)
	}
	o := len(witnessMagic) + 1
	if int(body[o]) != 1-d.party || !hmac.Equal(body[o+1:o+1+challengeSize], chal) {
		return nil, fmt.Errorf("%w: not a fresh witness of the peer", ErrWitness)
	}
	peerOwn := body[o+1+challengeSize : o+1+2*challengeSize]
	o += 1 + 2*challengeSize
	pNext := binary.LittleEndian.Uint64(body[o:])
	pFloor := binary.LittleEndian.Uint64(body[o+8:])
	pAccepted := binary.LittleEndian.Uint64(body[o+24:])
	c0, c1 := chal, peerOwn
	if d.party == 1 {
		c0, c1 = peerOwn, chal
	}
	keys, err := kdf.DeriveSession(&d.sbase, c0, c1)
	if err != nil {
		return nil, err
	}
	ch, err := channel.New(keys, d.party)
	keys.Wipe()
	if err != nil {
		return nil, err
	}
	// Only a module that resumed from its state file (still locked) can have
	// been rolled back, and the evidence is the peer's Accepted mark alone:
	// the peer accepted frames of ours below it, and this module committed
	// (reserved) every counter before it sealed a frame at it, so it
	// resumes at or above the mark unless its file was set back. The
	// peer's floor and next counter are no evidence: they are raised by
	// resyncs (the peer's witness may be sent after its own Reconcile,
	// carrying the common target, which includes the peer's own counters)
	// and by the peer's restarts (it resumes at its reserved marks, a
	// window ahead); comparing with them raised false rollback alarms
	// after plain crashes.
	res := &Reconciled{From: d.ctr.Next, RolledBack: d.locked && pAccepted > d.ctr.Next}
	target := max(d.ctr.Next, d.ctr.PeerFloor, pNext, pFloor)
	res.Dropped = d.dropAll()
	next := d.ctr
	next.Next, next.PeerFloor = target, target
	if err := d.store.Save(next); err != nil {
		return nil, fmt.Errorf("module: saving counters: %w", err)
	}
	d.ctr = next
	d.ch = ch
	d.locked = false
	res.Next = target
	if res.RolledBack {
		d.log.Warn("rollback detected: the peer accepted counters this module does not remember; resynchronised forward",
			"party", d.party, "from", res.From, "to", target, "peer_accepted", pAccepted)
	} else if target != res.From {
		d.log.Info("resynchronised forward", "party", d.party, "from", res.From, "to", target, "dropped", res.Dropped)
	}
	return res, nil
}

// dropAll wipes every pending request and uncollected output.
func (d *Durable) dropAll() int {
	n := 0
	for _, s := range d.slots {
		s.wipe()
		n += s.size()
	}
	d.slots = nil
	for c, o := range d.ready {
		o.wipe()
		delete(d.ready, c)
		n++
	}
	clear(d.queue)
	d.queue, d.pending = d.queue[:0], 0
	n += d.dropSlabs(^uint64(0))
	// Uncollected correlations go too; weight masks already handed out
	// stay kept (dropCorrs).
	n += d.dropCorrs(^uint64(0))
	return n
}
