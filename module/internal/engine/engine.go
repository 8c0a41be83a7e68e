// Package engine is the software module: the one place in kord where (α, β),
// root seeds and channel keys exist. It runs pairing, seals the own frame,
// opens the peer frame, reconstructs (α, β), derives both roots from kr,
// the counter, the key's shape and (α, β), runs the ordinary dealer Gen,
// keeps only its own party's key share, commits counters and wipes
// everything else.
//
// Nothing here logs or returns a secret: logs and errors carry counters,
// reasons and field names only.
package engine

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"strconv"
	"sync"

	"github.com/kord-fss/kord/fss"
	"github.com/kord-fss/kord/internal/prg"
	"github.com/kord-fss/kord/module/internal/channel"
	"github.com/kord-fss/kord/module/internal/kdf"
	"github.com/kord-fss/kord/module/internal/pairing"
	"github.com/kord-fss/kord/module/msg"
	"github.com/kord-fss/kord/module/store"
)

// Limits on one request.
const (
	MaxBatch  = msg.MaxShares
	MaxPoints = 1 << 16
)

// MaxPendingShares bounds the own shares a module holds waiting for the
// peer's frames: 64 full batches, 256 times what a party with the default
// --batch (256) and --in-flight (4) keeps outstanding. A submission that
// would pass it is refused and moves nothing.
const MaxPendingShares = 64 * MaxBatch

// MaxReady bounds what a module holds for its host: own shares waiting for
// peer frames plus outputs not yet collected (derived outputs included),
// four times MaxPendingShares. Each output holds its key once generated
// (about 1.2 KiB for a 64-bit DCF), so this caps a module that its host
// never collects from at about a gigabyte. A submission that would pass it
// is refused (ErrBadRequest, naming the numbers) before any counter moves;
// collecting or abandoning makes room.
const MaxReady = 4 * MaxPendingShares

// ErrBadRequest marks a request that names a field wrongly; nothing moved.
var ErrBadRequest = errors.New("module: bad request")

// ErrNotPaired is returned for key requests before pairing.
var ErrNotPaired = errors.New("module: not paired")

// Reject reasons for peer frames (public; counted in Poll).
const (
	RejectNotPaired  = "not_paired"
	RejectNoPending  = "no_pending"
	RejectLength     = "length"
	RejectReplay     = "replay"
	RejectOrder      = "out_of_order"
	RejectAuth       = "authentication"
	RejectRange      = "range"
	RejectPairingMsg = "pairing"
	// RejectNoSession: a module restored from its state file has no frame
	// keys until the witness exchange starts a session.
	RejectNoSession = "no_session"
	// RejectPairMismatch counts abandons whose host reported that the two
	// modules' pair tags disagreed (SubmitRequest.Mismatch): frames altered
	// in transit, or requests that differed between the sites.
	RejectPairMismatch = "pair_mismatch"
)

// errNoSession is returned for framed shares while the module has no
// frame keys (restored from its state file, before Reconcile).
var errNoSession = fmt.Errorf("%w: no frame keys until the witness exchange starts a session (a restored module seals nothing under old keys)", ErrLocked)

// Config configures a software module.
type Config struct {
	Party  int          // 0 or 1
	Secret []byte       // provisioning secret shared with the peer module
	KEM    string       // post-quantum half of the pairing ("" = mlkem768)
	Rand   io.Reader    // nil = crypto/rand
	Store  store.Store  // nil = in memory
	Logger *slog.Logger // nil = discard
	// Workers is the goroutines each batch Gen runs on (0 = GOMAXPROCS).
	Workers int
	// NoRecollect (Durable only): keep no re-collect window; see
	// module.Config.NoRecollect.
	NoRecollect bool
}

type record struct {
	counter uint64
	share   msg.Share // own shares: secret until wiped
}

func (r *record) wipe() { r.share.AlphaShare, r.share.BetaShare, r.share.Beta = 0, 0, 0 }

// slot is one expected peer frame: one record, a batch under BatchMAC, or
// a bound bulk submission (bulk set, recs nil).
type slot struct {
	tier msg.Tier
	recs []*record
	bulk *bulkSlot
}

func (s *slot) first() uint64 {
	if s.bulk != nil {
		return s.bulk.first
	}
	return s.recs[0].counter
}

func (s *slot) last() uint64 {
	if s.bulk != nil {
		return s.bulk.first + uint64(s.bulk.n) - 1
	}
	return s.recs[len(s.recs)-1].counter
}

// size is the number of own shares the slot holds.
func (s *slot) size() int {
	if s.bulk != nil {
		return s.bulk.n
	}
	return len(s.recs)
}

// wipe clears the slot's own shares.
func (s *slot) wipe() {
	if s.bulk != nil {
		s.bulk.wipe()
	}
	for _, r := range s.recs {
		r.wipe()
	}
}

// descs returns the frame shapes of the slot's records, in one (a
// single-record slot's) when it has room.
func (s *slot) descs(one *[1]channel.Desc) []channel.Desc {
	ds := one[:]
	if len(s.recs) > 1 {
		ds = make([]channel.Desc, len(s.recs))
	}
	for i, r := range s.recs {
		ds[i] = desc(r.share)
	}
	return ds
}

func desc(s msg.Share) channel.Desc {
	return channel.Desc{Mode: byte(s.Mode), Type: msg.TypeByte(s.Profile, s.Type), InBits: s.InBits, OutBits: s.OutBits}
}

// output is one accepted key of this party. Its key is generated lazily:
// until a Collect needs it, the output holds its shape, counter and the
// reconstructed (α, β), and the first Collect that finds such an output
// generates every pending one, a batch per shape through the cross-key
// batch generator (the keys are the same bytes as one-at-a-time Gen).
type output struct {
	mode       msg.Mode
	profile    msg.Profile
	raw        []byte // this party's serialized key share; nil while pending
	alphaShare uint64
	betaShare  uint64

	params      fss.Params
	counter     uint64
	alpha, beta uint64
	tag         [kdf.TagSize]byte // the pair tag (kdf.PRF.PairTag)
	// req: this party's request the output was generated for (own
	// shares, shape, payload), for a Durable's re-collect check.
	req   msg.Share
	wiped bool      // dropped: no key is made for it
	chunk *keyChunk // the buffer raw is a slice of
}

// keyChunk is the buffer one generate call writes its keys into; each
// output holds a slice of it. When the last of them is wiped, the buffer
// (wiped with them) goes back to its pool for the next call.
type keyChunk struct {
	buf  []byte
	live int
	pool *chunkPool
}

// chunkPool keeps a few wiped key buffers; it is used under the engine's
// lock.
type chunkPool struct{ free [][]byte }

// maxFreeChunks bounds the buffers a pool keeps.
const maxFreeChunks = 8

func (p *chunkPool) get(n int) []byte {
	for i, b := range p.free {
		if cap(b) >= n {
			last := len(p.free) - 1
			p.free[i], p.free[last] = p.free[last], nil
			p.free = p.free[:last]
			return b[:n]
		}
	}
	return make([]byte, n)
}

// release notes that an output let go of its slice of c. Every byte of
// c.buf belongs to exactly one output's slice, which that output wiped:
// the buffer is not wiped a second time.
func (c *keyChunk) release() {
	if c.live--; c.live == 0 && len(c.pool.free) < maxFreeChunks {
		c.pool.free = append(c.pool.free, c.buf)
	}
}

// setTag computes the output's pair tag from its (α, β); call it before
// generate consumes them.
func (o *output) setTag(prf *kdf.PRF) {
	p := o.params
	prf.PairTag(o.counter, byte(o.mode), msg.TypeByte(o.profile, p.Type), byte(p.InBits), byte(p.OutBits), o.alpha, o.beta, &o.tag)
}

// wipe clears the output's secrets and lets go of its key buffer (an
// output lives on in its slab until the slab's last one is dropped).
func (o *output) wipe() {
	if o.wiped {
		return
	}
	clear(o.raw)
	o.raw, o.wiped = nil, true
	if o.chunk != nil {
		o.chunk.release()
		o.chunk = nil
	}
	o.alphaShare, o.betaShare, o.alpha, o.beta = 0, 0, 0, 0
	o.req = msg.Share{}
}

// Engine is one software module. It is safe for concurrent use; requests
// are served one at a time.
type Engine struct {
	mu     sync.Mutex
	party  int
	secret []byte
	kem    pairing.KEM
	rand   io.Reader
	store  store.Store
	log    *slog.Logger

	pair   *pairing.State
	paired bool
	// ch seals and opens frames: the pairing's keys until the first
	// session, then the session's (Durable.Reconcile). Nil in a module
	// restored from its state file until its first session, so that it
	// can seal nothing under keys it may have used before.
	ch  *channel.Channel
	prf *kdf.PRF
	// maxReady is MaxReady (a test may lower it).
	maxReady int

	ctr        store.Counters
	slots      []*slot
	ready      map[uint64]*output
	pending    int // outputs in ready whose key is not generated yet
	dispatches uint64
	rejects    map[string]uint64

	gens    map[fss.Params]*fss.BatchGen // batch generators, by shape
	workers int                          // each generator's goroutines

	bulk      bulkScratch // a bulk's working buffers, wiped after each use
	slabs     []*msg.Slab // generated bulk outputs not collected yet, in order
	slabKeys  int         // keys in slabs
	freeSlabs []*msg.Slab // recycled slabs (wiped), for the next bulks

	corrs   map[uint64]*msg.CorrShares // derived correlations not collected yet (corr.go)
	weights map[uint64]msg.Correlation // kept weight masks, by first counter (corr.go)

	plain []byte    // a frame's plaintext shares while sealed or opened; cleared after
	arena []output  // outputs are carved from slabs: fewer allocations per key
	queue []*output // accepted outputs whose keys are not made yet, in order
	keys  chunkPool // buffers for generated keys
}

// outputSlab is how many outputs one slab holds.
const outputSlab = 256

// newOutput returns a zero output from the current slab (a slab stays
// alive until its last output is dropped).
func (e *Engine) newOutput() *output {
	if len(e.arena) == 0 {
		e.arena = make([]output, outputSlab)
	}
	o := &e.arena[0]
	e.arena = e.arena[1:]
	return o
}

// New returns an unpaired software module.
func New(c Config) (*Engine, error) {
	if c.Party != 0 && c.Party != 1 {
		return nil, fmt.Errorf("%w: Party %d is not 0 or 1", ErrBadRequest, c.Party)
	}
	if len(c.Secret) < pairing.MinSecret {
		return nil, fmt.Errorf("%w: Secret (provisioning secret) is shorter than %d bytes", ErrBadRequest, pairing.MinSecret)
	}
	name := c.KEM
	if name == "" {
		name = pairing.DefaultKEM
	}
	kem, err := pairing.Lookup(name)
	if err != nil {
		return nil, fmt.Errorf("%w: KEM: %v", ErrBadRequest, err)
	}
	e := &Engine{
		party:    c.Party,
		secret:   append([]byte(nil), c.Secret...),
		kem:      kem,
		rand:     c.Rand,
		store:    c.Store,
		log:      c.Logger,
		ready:    map[uint64]*output{},
		rejects:  map[string]uint64{},
		maxReady: MaxReady,
	}
	if e.workers, err = workers(c.Workers); err != nil {
		return nil, err
	}
	if e.rand == nil {
		e.rand = rand.Reader
	}
	if e.store == nil {
		e.store = &store.Mem{}
	}
	if e.log == nil {
		e.log = slog.New(slog.DiscardHandler)
	}
	return e, nil
}

// KEMs lists the pairing KEMs this build supports.
func KEMs() []string { return pairing.Names() }

// Provision runs one step of pairing.
func (e *Engine) Provision(_ context.Context, req *msg.ProvisionRequest) (*msg.ProvisionResponse, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.paired {
		return nil, fmt.Errorf("%w: module is already paired; pair a fresh module instead", ErrBadRequest)
	}
	if e.party == 0 && len(req.Message) == 0 {
		st, err := pairing.New(e.party, e.secret, e.kem, e.rand)
		if err != nil {
			return nil, err
		}
		if e.pair != nil {
			e.pair.Wipe()
		}
		e.pair = st
		out, err := st.Start()
		if err != nil {
			return nil, err
		}
		return &msg.ProvisionResponse{Message: out}, nil
	}
	if e.pair == nil {
		if e.party == 0 {
			e.rejects[RejectPairingMsg]++
			return nil, fmt.Errorf("%w: Message: party 0 must start pairing with an empty message", ErrBadRequest)
		}
		st, err := pairing.New(e.party, e.secret, e.kem, e.rand)
		if err != nil {
			return nil, err
		}
		e.pair = st
	}
	out, err := e.pair.Step(req.Message)
	if err != nil {
		e.rejects[RejectPairingMsg]++
		e.pair = nil
		e.log.Warn("pairing message rejected", "party", e.party)
		return nil, err
	}
	resp := &msg.ProvisionResponse{Message: out}
	if e.pair.Done() {
		if err := e.finishPairing(); err != nil {
			return nil, err
		}
		resp.Paired = true
	}
	return resp, nil
}

func (e *Engine) finishPairing() error {
	kch, err := e.pair.Secret()
	e.pair.Wipe()
	e.pair = nil
	if err != nil {
		return err
	}
	defer clear(kch)
	keys, err := kdf.Derive(kch)
	if err != nil {
		return err
	}
	defer keys.Wipe()
	ch, err := channel.New(keys, e.party)
	if err != nil {
		return err
	}
	prf, err := kdf.NewPRF(&keys.Root)
	if err != nil {
		return err
	}
	// A store that persists the pairing (the module daemon's) keeps K_ch
	// so the module restarts paired; see durable.go.
	if ps, ok := e.store.(store.PairingStore); ok {
		if err := ps.SavePairing(store.Pairing{Party: e.party, KEM: e.kem.Name(), Secret: kch}); err != nil {
			return fmt.Errorf("module: saving pairing: %w", err)
		}
	}
	if err := e.store.Save(store.Counters{}); err != nil {
		return fmt.Errorf("module: saving counters: %w", err)
	}
	e.ch, e.prf, e.ctr, e.paired = ch, prf, store.Counters{}, true
	clear(e.secret)
	e.log.Info("module paired", "party", e.party, "kem", e.kem.Name())
	return nil
}

// Poll reports status.
func (e *Engine) Poll(context.Context, *msg.PollRequest) (*msg.PollResponse, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	r := &msg.PollResponse{
		Party: e.party, Paired: e.paired, KEM: e.kem.Name(),
		NextCounter: e.ctr.Next, PeerFloor: e.ctr.PeerFloor, Generated: e.ctr.Generated,
		Dispatches: e.dispatches, Ready: e.readyCount(), Rejects: map[string]uint64{},
	}
	r.Pending = e.pendingShares()
	for k, v := range e.rejects {
		r.Rejects[k] = v
	}
	return r, nil
}

// Submit handles own shares, a peer frame or an abandon.
func (e *Engine) Submit(_ context.Context, req *msg.SubmitRequest) (*msg.SubmitResponse, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	switch req.Kind {
	case msg.SubmitShares:
		return e.submitShares(req)
	case msg.SubmitPeerFrame:
		return e.submitFrame(req.Frame)
	case msg.SubmitAbandon:
		return e.abandon(req.Counter, req.Mismatch)
	case msg.SubmitBulk:
		return e.submitBulk(req)
	case msg.SubmitCorrelation:
		return e.submitCorr(req)
	}
	return nil, fmt.Errorf("%w: Kind: unknown submit kind %d", ErrBadRequest, req.Kind)
}

func bad(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrBadRequest, fmt.Sprintf(format, args...))
}

// checkTier refuses a tier the channel does not have, for submissions
// that carry frames (per-key shares and bound bulks alike).
func checkTier(t msg.Tier) error {
	switch t {
	case msg.Keystream, msg.MAC, msg.BatchMAC:
		return nil
	}
	return bad("Tier: unknown tier %d (want otp, mac or batchmac)", t)
}

// Validate checks one share request; the error names the field.
func Validate(i int, s msg.Share) error {
	if validShare(s) {
		return nil
	}
	return invalidShare(i, s)
}

// validShare is Validate's accepting path, without building the field name
// (a string per share) that only an error needs.
func validShare(s msg.Share) bool {
	if !validProfile(s.Profile, s.Type) {
		return false
	}
	switch s.Mode {
	case msg.Bound, msg.Consume:
		return (s.Type == fss.DPF || s.Type == fss.DCF) && s.InBits >= 1 && s.InBits <= 64 && s.OutBits >= 1 && s.OutBits <= 64 &&
			!s.DeriveBeta && s.Beta == 0 && s.AlphaShare&^prg.Mask(s.InBits) == 0 && s.BetaShare&^prg.Mask(s.OutBits) == 0
	case msg.Derived:
		return (s.Type == fss.DPF || s.Type == fss.DCF) && s.InBits >= 1 && s.InBits <= 64 && s.OutBits >= 1 && s.OutBits <= 64 &&
			s.AlphaShare == 0 && s.BetaShare == 0 && !(s.DeriveBeta && s.Beta != 0) && s.Beta&^prg.Mask(s.OutBits) == 0
	}
	return false
}

// validProfile reports whether profile pr makes keys of type t: kord-v1
// every type, llama only DCFs.
func validProfile(pr msg.Profile, t fss.Type) bool {
	return pr == msg.KordV1 || pr == msg.Llama && t == fss.DCF
}

// checkProfile says what is wrong with the profile of request field f.
func checkProfile(f string, pr msg.Profile, t fss.Type) error {
	switch {
	case pr != msg.KordV1 && pr != msg.Llama:
		return bad("%s.Profile: unknown key profile %d (want kord-v1 or llama)", f, pr)
	case pr == msg.Llama && t != fss.DCF:
		return bad("%s.Type: the llama profile has only DCF keys (LLAMA's FSS has no DPF), got %v", f, t)
	}
	return nil
}

// invalidShare says what is wrong with share i.
func invalidShare(i int, s msg.Share) error {
	f := "Shares[" + strconv.Itoa(i) + "]"
	switch s.Mode {
	case msg.Bound, msg.Derived, msg.Consume:
	default:
		return bad("%s.Mode: unknown mode %d (want bound, derived or consume)", f, s.Mode)
	}
	if s.Type != fss.DPF && s.Type != fss.DCF {
		return bad("%s.Type: unknown key type %d (want dpf or dcf)", f, s.Type)
	}
	if err := checkProfile(f, s.Profile, s.Type); err != nil {
		return err
	}
	if s.InBits < 1 || s.InBits > 64 {
		return bad("%s.InBits: %d is outside 1..64", f, s.InBits)
	}
	if s.OutBits < 1 || s.OutBits > 64 {
		return bad("%s.OutBits: %d is outside 1..64", f, s.OutBits)
	}
	if s.Mode == msg.Derived {
		if s.AlphaShare != 0 || s.BetaShare != 0 {
			return bad("%s.AlphaShare/BetaShare: must be zero in derived mode (the modules draw them)", f)
		}
		if s.DeriveBeta && s.Beta != 0 {
			return bad("%s.Beta: must be zero when DeriveBeta is set", f)
		}
		if s.Beta&^prg.Mask(s.OutBits) != 0 {
			return bad("%s.Beta: does not fit in %d output bits", f, s.OutBits)
		}
		return nil
	}
	if s.DeriveBeta || s.Beta != 0 {
		return bad("%s.DeriveBeta/Beta: only for derived mode", f)
	}
	if s.AlphaShare&^prg.Mask(s.InBits) != 0 {
		return bad("%s.AlphaShare: does not fit in %d input bits", f, s.InBits)
	}
	if s.BetaShare&^prg.Mask(s.OutBits) != 0 {
		return bad("%s.BetaShare: does not fit in %d output bits", f, s.OutBits)
	}
	return nil
}

func (e *Engine) submitShares(req *msg.SubmitRequest) (*msg.SubmitResponse, error) {
	n := len(req.Shares)
	if n == 0 || n > MaxBatch {
		return nil, bad("Shares: %d requests, want 1..%d", n, MaxBatch)
	}
	framed := 0
	for i, s := range req.Shares {
		if err := Validate(i, s); err != nil {
			return nil, err
		}
		if s.Mode != msg.Derived {
			framed++
		}
	}
	if framed > 0 {
		if err := checkTier(req.Tier); err != nil {
			return nil, err
		}
	}
	if !e.paired {
		return nil, ErrNotPaired
	}
	if framed > 0 && e.ch == nil {
		return nil, errNoSession
	}
	p, ready := e.pendingShares(), e.readyCount()
	if framed > MaxPendingShares-p {
		return nil, bad("Shares: %d shares already wait for peer frames; %d more would pass the limit of %d pending shares",
			p, framed, MaxPendingShares)
	}
	if n > e.maxReady-p-ready {
		return nil, bad("Shares: %d shares wait for peer frames and %d outputs wait to be collected; %d more would pass the limit of %d (collect or abandon first)",
			p, ready, n, e.maxReady)
	}
	// Commit the counters before any frame that depends on them leaves.
	first := e.ctr.Next
	next := e.ctr
	next.Next += uint64(n)
	if err := e.store.Save(next); err != nil {
		return nil, fmt.Errorf("module: saving counters: %w", err)
	}
	e.ctr = next

	resp := &msg.SubmitResponse{FirstCounter: first, Count: n}
	// One allocation each for the records, the one-record slots and the
	// frames (sub-slices of one buffer), however many keys.
	slab, recs := make([]record, n), make([]*record, n)
	for i := range slab {
		slab[i] = record{counter: first + uint64(i), share: req.Shares[i]}
		recs[i] = &slab[i]
	}
	var batch, derived []*record
	var single []slot
	frameBytes := 0
	for _, r := range recs {
		switch {
		case r.share.Mode == msg.Derived:
			derived = append(derived, r)
		case req.Tier == msg.BatchMAC:
			batch = append(batch, r)
		default:
			frameBytes += desc(r.share).Size()
			if req.Tier == msg.MAC {
				frameBytes += channel.Overhead
			}
		}
	}
	if len(batch) > 0 {
		frameBytes += channel.Overhead
		for _, r := range batch {
			frameBytes += desc(r.share).Size()
		}
	}
	if framed > len(batch) {
		single = make([]slot, 0, framed-len(batch))
	}
	frames := make([]byte, 0, frameBytes)
	for i, r := range recs {
		if r.share.Mode == msg.Derived || req.Tier == msg.BatchMAC {
			continue
		}
		single = append(single, slot{tier: req.Tier, recs: recs[i : i+1 : i+1]})
		sl := &single[len(single)-1]
		f, err := e.seal(frames[len(frames):len(frames):cap(frames)], sl)
		if err != nil {
			return nil, err
		}
		frames = frames[:len(frames)+len(f)]
		resp.Frames = append(resp.Frames, f[:len(f):len(f)])
		e.slots = append(e.slots, sl)
	}
	if len(batch) > 0 {
		sl := &slot{tier: msg.BatchMAC, recs: batch}
		f, err := e.seal(frames[len(frames):len(frames):cap(frames)], sl)
		if err != nil {
			return nil, err
		}
		resp.Frames = append(resp.Frames, f[:len(f):len(f)])
		e.slots = append(e.slots, sl)
	}
	for _, r := range derived {
		if err := e.acceptDerived(r); err != nil {
			return nil, err
		}
	}
	return resp, nil
}

// pendingShares counts the own shares waiting for a peer frame; e.mu held.
func (e *Engine) pendingShares() int {
	n := 0
	for _, s := range e.slots {
		n += s.size()
	}
	return n
}

// seal appends this party's frame for a slot to dst (which has room for
// it) and returns the frame. The mac tiers' nonce is the slot's first
// counter (channel.Nonce): counters only grow within a session, and each
// session has keys of its own.
func (e *Engine) seal(dst []byte, sl *slot) ([]byte, error) {
	if sl.tier == msg.Keystream {
		r := sl.recs[0]
		return e.ch.SealKeystreamTo(dst, r.counter, desc(r.share), r.share.AlphaShare, r.share.BetaShare), nil
	}
	var one [1]channel.Desc
	ds := sl.descs(&one)
	plain := e.plain[:0]
	for _, r := range sl.recs {
		plain = channel.Pack(plain, desc(r.share), r.share.AlphaShare, r.share.BetaShare)
	}
	e.plain = plain
	defer clear(plain)
	tier := channel.TierMAC
	if sl.tier == msg.BatchMAC {
		tier = channel.TierBatchMAC
	}
	return e.ch.SealTo(dst, tier, sl.first(), ds, plain)
}

func (e *Engine) reject(reason string, counter uint64) (*msg.SubmitResponse, error) {
	e.rejects[reason]++
	e.log.Warn("peer frame rejected", "party", e.party, "reason", reason, "expected_counter", counter)
	return &msg.SubmitResponse{Reject: reason}, nil
}

// submitFrame opens the peer frame for the oldest pending slot. Any failure
// rejects it before decryption completes, with no engine dispatch and no
// counter movement.
func (e *Engine) submitFrame(frame []byte) (*msg.SubmitResponse, error) {
	if !e.paired {
		return e.reject(RejectNotPaired, 0)
	}
	if e.ch == nil {
		return e.reject(RejectNoSession, e.ctr.PeerFloor)
	}
	if len(e.slots) == 0 {
		return e.reject(RejectNoPending, e.ctr.PeerFloor)
	}
	sl := e.slots[0]
	if sl.bulk != nil {
		return e.submitBulkFrame(sl, frame)
	}
	var one [1]channel.Desc
	ds := sl.descs(&one)
	var onePeer [1][2]uint64
	peer := onePeer[:]
	if len(sl.recs) > 1 {
		peer = make([][2]uint64, len(sl.recs))
	}
	defer clear(peer)
	if sl.tier == msg.Keystream {
		if len(frame) != ds[0].Size() {
			return e.reject(RejectLength, sl.first())
		}
		a, b, err := e.ch.OpenKeystream(sl.first(), ds[0], frame)
		if err != nil {
			return e.reject(RejectRange, sl.first())
		}
		peer[0] = [2]uint64{a, b}
	} else {
		got, err := channel.EnvelopeCounter(frame, ds)
		if err != nil {
			return e.reject(RejectLength, sl.first())
		}
		if got < e.ctr.PeerFloor {
			return e.reject(RejectReplay, sl.first())
		}
		if got != sl.first() {
			return e.reject(RejectOrder, sl.first())
		}
		tier := channel.TierMAC
		if sl.tier == msg.BatchMAC {
			tier = channel.TierBatchMAC
		}
		plain, err := e.ch.OpenTo(e.plain[:0], tier, got, ds, frame)
		if err != nil {
			return e.reject(RejectAuth, sl.first())
		}
		e.plain = plain
		off := 0
		for i, d := range ds {
			a, b, err := channel.Unpack(plain[off:off+d.Size()], d)
			if err != nil {
				clear(plain)
				return e.reject(RejectRange, sl.first())
			}
			peer[i] = [2]uint64{a, b}
			off += d.Size()
		}
		clear(plain)
	}
	// Authentic and fresh: reconstruct, commit, queue for generation.
	var oneOut [1]*output
	outs := oneOut[:]
	if len(sl.recs) > 1 {
		outs = make([]*output, len(sl.recs))
	}
	e.acceptSlot(sl, peer, outs)
	next := e.ctr
	next.PeerFloor = sl.last() + 1
	next.Accepted = next.PeerFloor
	next.Generated += uint64(len(outs))
	if err := e.store.Save(next); err != nil {
		for _, o := range outs {
			o.wipe()
		}
		return nil, fmt.Errorf("module: saving counters: %w", err)
	}
	e.ctr = next
	var resp *msg.SubmitResponse
	if len(sl.recs) == 1 {
		// The response and its one counter in one allocation.
		one := new(struct {
			r msg.SubmitResponse
			c [1]uint64
		})
		resp, one.r.Counters = &one.r, one.c[:0]
	} else {
		resp = &msg.SubmitResponse{Counters: make([]uint64, 0, len(sl.recs))}
	}
	resp.Accepted = true
	for i, r := range sl.recs {
		e.ready[r.counter] = outs[i]
		e.queue = append(e.queue, outs[i])
		resp.Counters = append(resp.Counters, r.counter)
		r.wipe()
	}
	e.pending += len(outs)
	e.slots = e.slots[1:]
	return resp, nil
}

// acceptSlot turns an authenticated slot into pending outputs, in outs
// (one per record): (α, β) reconstructed from both parties' shares; the
// keys are generated when first collected (materialize).
func (e *Engine) acceptSlot(sl *slot, peer [][2]uint64, outs []*output) {
	for i, r := range sl.recs {
		s := r.share
		p := s.Params()
		o := e.newOutput()
		*o = output{mode: s.Mode, profile: s.Profile, params: p, counter: r.counter,
			alpha: (s.AlphaShare + peer[i][0]) & prg.Mask(p.InBits),
			beta:  (s.BetaShare + peer[i][1]) & prg.Mask(p.OutBits), req: s}
		o.setTag(e.prf)
		outs[i] = o
	}
	e.dispatches += uint64(len(outs))
}

// acceptDerived draws (α, β) from kr and the counter and queues this
// party's key share (generated when first collected) with its additive
// shares of them.
func (e *Engine) acceptDerived(r *record) error {
	s := r.share
	p := s.Params()
	ma, mb := prg.Mask(p.InBits), prg.Mask(p.OutBits)
	alpha, alpha0, beta, beta0 := e.prf.Derived(r.counter, &kdf.DerivedShape{Mode: byte(msg.Derived),
		Type: msg.TypeByte(s.Profile, p.Type), InBits: byte(p.InBits), OutBits: byte(p.OutBits), G: 1, DeriveBeta: s.DeriveBeta})
	alpha, alpha0 = alpha&ma, alpha0&ma
	if s.DeriveBeta {
		beta, beta0 = beta&mb, beta0&mb
	} else {
		beta, beta0 = s.Beta, s.Beta
	}
	o := e.newOutput()
	*o = output{mode: msg.Derived, profile: s.Profile, params: p, counter: r.counter, alpha: alpha, beta: beta, req: s}
	o.setTag(e.prf)
	e.dispatches++
	if e.party == 0 {
		o.alphaShare, o.betaShare = alpha0, beta0
	} else {
		o.alphaShare, o.betaShare = (alpha-alpha0)&ma, (beta-beta0)&mb
	}
	alpha, alpha0, beta, beta0 = 0, 0, 0, 0
	_, _, _, _ = alpha, alpha0, beta, beta0
	next := e.ctr
	next.Generated++
	if err := e.store.Save(next); err != nil {
		o.wipe()
		return fmt.Errorf("module: saving counters: %w", err)
	}
	e.ctr = next
	e.ready[r.counter] = o
	e.queue = append(e.queue, o)
	e.pending++
	r.wipe()
	return nil
}

// materialize generates the keys of every pending output: by shape, in
// the order they were accepted, through a one-worker batch generator (each
// key's roots derived from kr, its counter, shape, α and β), keeping
// this party's share. On failure the pending outputs are wiped and
// dropped.
func (e *Engine) materialize() error {
	q := e.queue
	defer func() {
		clear(q)
		e.queue = q[:0]
	}()
	if e.pending == 0 {
		return nil
	}
	e.pending = 0
	// A batch is nearly always of one shape: a short list, not a map.
	type group struct {
		pr msg.Profile
		p  fss.Params
		os []*output
	}
	var groups []group
	for _, o := range q {
		if o.wiped || o.raw != nil { // dropped since, or already made
			continue
		}
		i := slices.IndexFunc(groups, func(g group) bool { return g.pr == o.profile && g.p == o.params })
		if i < 0 {
			groups = append(groups, group{pr: o.profile, p: o.params})
			i = len(groups) - 1
		}
		groups[i].os = append(groups[i].os, o)
	}
	for _, g := range groups {
		var err error
		for lo := 0; lo < len(g.os) && err == nil; lo += genChunk {
			err = e.generate(g.pr, g.p, g.os[lo:min(len(g.os), lo+genChunk)])
		}
		if err != nil {
			for _, g := range groups {
				for _, o := range g.os {
					if o.raw == nil {
						o.wipe()
						delete(e.ready, o.counter)
					}
				}
			}
			return err
		}
	}
	return nil
}

// maxGens bounds the batch generators a module keeps (each holds one
// group's scratch, up to about 100 KiB).
const maxGens = 16

// genChunk bounds the keys of one batch generator call, and so the scratch
// it needs: at most genChunk key pairs of the largest shape (about 3.4 MB).
const genChunk = 1024

// generate makes the keys of pending outputs of one shape.
func (e *Engine) generate(pr msg.Profile, p fss.Params, os []*output) error {
	k, ks := len(os), msg.KeySize(pr, p)
	alpha, beta := make([]uint64, k), make([]uint64, k)
	r0, r1 := make([]prg.Block, k), make([]prg.Block, k)
	defer func() {
		clear(alpha)
		clear(beta)
		clear(r0)
		clear(r1)
	}()
	for i, o := range os {
		alpha[i], beta[i] = o.alpha, o.beta
		o.alpha, o.beta = 0, 0
		r0[i], r1[i] = e.prf.Roots(o.counter, byte(o.mode), msg.TypeByte(pr, p.Type), byte(p.InBits), byte(p.OutBits), alpha[i], beta[i])
	}
	// Only this party's keys are written; each output keeps its slice of
	// the chunk's buffer and wipes it when collected.
	buf := e.keys.get(k * ks)
	if err := e.genParty(pr, p, 1, alpha, beta, r0, r1, buf); err != nil {
		clear(buf)
		// fss names the offending α or β in its errors: never pass them on.
		return fmt.Errorf("module: batch Gen at counter %d failed (parameters withheld)", os[0].counter)
	}
	c := &keyChunk{buf: buf, live: k, pool: &e.keys}
	for i, o := range os {
		o.raw, o.chunk = buf[i*ks:(i+1)*ks:(i+1)*ks], c
	}
	return nil
}

// abandon drops pending slots and uncollected outputs up to counter and
// wipes their shares and keys. mismatch (the host saw the pair tags
// disagree) is counted under RejectPairMismatch and logged.
func (e *Engine) abandon(counter uint64, mismatch bool) (*msg.SubmitResponse, error) {
	if mismatch {
		e.rejects[RejectPairMismatch]++
		e.log.Warn("pair tags disagreed: outputs abandoned, their shares spent", "party", e.party, "through_counter", counter,
			"pair_mismatches", e.rejects[RejectPairMismatch])
	}
	keep := e.slots[:0]
	dropped := 0
	for _, s := range e.slots {
		if s.first() <= counter {
			s.wipe()
			dropped += s.size()
			continue
		}
		keep = append(keep, s)
	}
	clear(e.slots[len(keep):])
	e.slots = keep
	for c, o := range e.ready {
		if c <= counter {
			if o.raw == nil {
				e.pending--
			}
			o.wipe()
			delete(e.ready, c)
			dropped++
		}
	}
	if e.pending == 0 { // the queue holds only dropped outputs
		clear(e.queue)
		e.queue = e.queue[:0]
	}
	dropped += e.dropSlabs(counter)
	dropped += e.dropCorrs(counter)
	return &msg.SubmitResponse{Count: dropped}, nil
}

// Collect hands out this party's output at a counter, once, and wipes it;
// a range collect (Count > 0) hands out a bulk's slab, which the caller
// then owns.
func (e *Engine) Collect(_ context.Context, req *msg.CollectRequest) (*msg.CollectResponse, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if req.Corr {
		return e.collectCorr(req)
	}
	if req.Count != 0 {
		if req.Count < 0 {
			return nil, bad("Count: %d is negative", req.Count)
		}
		sl, err := e.collectSlab(req.Counter, req.Count, req.Points)
		if err != nil {
			return nil, err
		}
		return &msg.CollectResponse{Counter: sl.First, Mode: sl.Mode, Slab: sl}, nil
	}
	resp, err := e.collectLocked(req.Counter, req.Points, nil)
	if err != nil {
		return nil, err
	}
	return &resp, nil
}

// collectLocked is Collect under e.mu; the key is appended to keyBuf.
func (e *Engine) collectLocked(counter uint64, points []uint64, keyBuf []byte) (msg.CollectResponse, error) {
	o, ok := e.ready[counter]
	if !ok {
		return msg.CollectResponse{}, bad("Counter: no output ready at counter %d", counter)
	}
	if o.raw == nil {
		if err := e.materialize(); err != nil {
			return msg.CollectResponse{}, err
		}
	}
	resp := msg.CollectResponse{Counter: counter, Mode: o.mode, PairTag: o.tag}
	if o.mode == msg.Consume {
		if len(points) == 0 || len(points) > MaxPoints {
			return msg.CollectResponse{}, bad("Points: %d points, want 1..%d in consume mode", len(points), MaxPoints)
		}
		mask := prg.Mask(o.params.InBits)
		for i, x := range points {
			if x&^mask != 0 {
				return msg.CollectResponse{}, bad("Points[%d]: does not fit in %d input bits", i, o.params.InBits)
			}
		}
		evals, err := e.evalKey(o, points)
		if err != nil {
			return msg.CollectResponse{}, fmt.Errorf("module: counter %d: %w", counter, err)
		}
		resp.Evals = evals
	} else {
		if len(points) != 0 {
			return msg.CollectResponse{}, bad("Points: only for consume mode (counter %d is %v)", counter, o.mode)
		}
		resp.Key = append(keyBuf, o.raw...)
		resp.AlphaShare, resp.BetaShare = o.alphaShare, o.betaShare
	}
	o.wipe()
	delete(e.ready, counter)
	return resp, nil
}
