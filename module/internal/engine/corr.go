// Derived multiplication correlations, each drawn under its full
// description (kdf.CorrWords) and tagged by it.

package engine

import (
	"fmt"

	"github.com/kord-fss/kord/internal/prg"
	"github.com/kord-fss/kord/module/internal/kdf"
	"github.com/kord-fss/kord/module/msg"
)

// Derived multiplication correlations (msg.SubmitCorrelation). Both
// modules of a pair draw the same words under the correlation's whole
// description (kdf.CorrDesc: kind, ring, every dimension, part, the
// weight it refers to, first counter and block count), word position i
// under its own AES input: A, party 0's share of A, R, party 0's share of
// R and party 0's share of Z, in that order. An input correlation's A and
// its share are the words its weight correlation drew, under the weight's
// description. Each module computes Z = map(A, R) itself and keeps only
// its own party's shares (party 0: the drawn shares; party 1: A − A0,
// R − R0, Z − Z0). A module asked for another description at the same
// counters draws under another key, so none of its words is a word of the
// honest draw. The counters are committed before the shares exist; A, R,
// Z and the drawn words are wiped once the shares are made; the shares
// are handed out once (Collect with Corr) and then owned and wiped by the
// caller, or wiped by an abandon.

// MaxCorrs bounds the correlations waiting to be collected, and
// MaxCorrWordsHeld the words they hold (64 MiB), so a host cannot make the
// module hold unbounded memory.
const (
	MaxCorrs         = 64
	MaxCorrWordsHeld = 1 << 23
)

// corrTagMode is the pair-tag mode byte of a LLAMA gates request (its tag
// is the key pair-tag MAC over its shape, gates.go); it differs from every
// msg.Mode, so such a tag never equals a key's. Multiplication
// correlations' tags are kdf.CorrTag.
const corrTagMode = 0xC0

// corrDesc is the description c's words are drawn under at counters
// first… (blocks of them). Sizes has checked every dimension fits 32 bits.
func corrDesc(c *msg.Correlation, first uint64, blocks int) kdf.CorrDesc {
	return kdf.CorrDesc{Counter: first, Blocks: uint64(blocks), Kind: uint8(c.Kind), Ring: uint8(c.Ring), Part: uint8(c.Part),
		In: uint32(c.In), Out: uint32(c.Out), K: uint32(c.K), H: uint32(c.H), W: uint32(c.W), WeightFrom: c.WeightFrom}
}

func (e *Engine) submitCorr(req *msg.SubmitRequest) (*msg.SubmitResponse, error) {
	c := req.Corr
	if c != nil && c.Kind == msg.CorrLlamaGates {
		return e.submitGates(req) // gates.go
	}
	na, nr, nz, err := c.Sizes()
	if err != nil {
		return nil, bad("%v", err)
	}
	if err := e.corrRoom(req, na+nr+nz); err != nil {
		return nil, err
	}
	switch c.Part {
	case msg.CorrInput:
		w, ok := e.weights[c.WeightFrom]
		if !ok || !sameShape(&w, c) {
			return nil, bad("Corr.WeightFrom: no weight mask of this shape is kept at counter %d", c.WeightFrom)
		}
	}
	blocks, err := c.Blocks()
	if err != nil {
		return nil, bad("%v", err)
	}
	words := 2*na + 2*nr + nz // CorrFull
	switch c.Part {
	case msg.CorrWeight:
		words = 2 * na
	case msg.CorrInput:
		words = 2*nr + nz
	}
	// Commit before the shares exist.
	first := e.ctr.Next
	next := e.ctr
	next.Next += uint64(blocks)
	if err := e.store.Save(next); err != nil {
		return nil, fmt.Errorf("module: saving counters: %w", err)
	}
	e.ctr = next

	if c.Kind.Tuple() {
		sh, err := e.tupleShares(c, first, blocks)
		if err != nil {
			return nil, err
		}
		if e.corrs == nil {
			e.corrs = map[uint64]*msg.CorrShares{}
		}
		e.corrs[first] = sh
		return &msg.SubmitResponse{FirstCounter: first, Count: 1}, nil
	}

	m := prg.Mask(c.Ring)
	draw := func(d *kdf.CorrDesc, n int) []uint64 {
		b := make([]uint64, n)
		e.prf.CorrWords(d, b)
		for i := range b {
			b[i] &= m
		}
		return b
	}
	desc := corrDesc(c, first, blocks)
	buf := draw(&desc, words)
	defer clear(buf)
	var a, a0, r, r0, z0 []uint64
	switch c.Part {
	case msg.CorrFull:
		a, a0 = buf[:na], buf[na:2*na]
		r, r0 = buf[2*na:2*na+nr], buf[2*na+nr:2*na+2*nr]
		z0 = buf[2*na+2*nr:]
	case msg.CorrWeight:
		a, a0 = buf[:na], buf[na:2*na]
	case msg.CorrInput:
		// The kept weight mask: the same words its CorrWeight drew.
		w := *c
		w.Part, w.WeightFrom = msg.CorrWeight, 0
		wblocks, _ := w.Blocks()
		wd := corrDesc(&w, c.WeightFrom, wblocks)
		wb := draw(&wd, 2*na)
		defer clear(wb)
		a, a0 = wb[:na], wb[na:]
		r, r0, z0 = buf[:nr], buf[nr:2*nr], buf[2*nr:]
	}
	split := func(v, v0 []uint64) []uint64 { return e.ownShare(v, v0, m) }
	sh := &msg.CorrShares{Counter: first, Blocks: blocks, Corr: *c}
	if c.Part != msg.CorrInput {
		sh.A = split(a, a0)
	}
	if c.Part != msg.CorrWeight {
		z := make([]uint64, nz)
		defer clear(z)
		corrApply(c, a, r, z)
		sh.R, sh.Z = split(r, r0), split(z, z0)
	}
	var tag [msg.PairTagSize]byte
	e.prf.CorrTag(&desc, (*[kdf.TagSize]byte)(tag[:]))
	sh.PairTag = tag
	if e.corrs == nil {
		e.corrs = map[uint64]*msg.CorrShares{}
	}
	e.corrs[first] = sh
	if c.Part == msg.CorrWeight {
		if e.weights == nil {
			e.weights = map[uint64]msg.Correlation{}
		}
		if len(e.weights) >= MaxWeights {
			// The oldest goes: both modules see the same requests, so
			// both forget the same one.
			oldest := ^uint64(0)
			for c := range e.weights {
				oldest = min(oldest, c)
			}
			delete(e.weights, oldest)
		}
		e.weights[first] = *c
	}
	return &msg.SubmitResponse{FirstCounter: first, Count: 1}, nil
}

// MaxWeights bounds the weight masks a module keeps for CorrInput; a new
// one beyond it makes the module forget the oldest (its session's input
// correlations are then refused).
const MaxWeights = 256

// sameShape reports whether an input correlation fits a kept weight mask.
func sameShape(w, c *msg.Correlation) bool {
	return w.Kind == c.Kind && w.Ring == c.Ring && w.In == c.In && w.Out == c.Out && w.K == c.K && w.H == c.H && w.W == c.W
}

// corrApply adds map(a, r) into z (mod 2^64; the caller masks).
func corrApply(c *msg.Correlation, a, r, z []uint64) {
	switch c.Kind {
	case msg.CorrMatVec:
		for o := 0; o < c.Out; o++ {
			var acc uint64
			for i, v := range a[o*c.In : (o+1)*c.In] {
				acc += v * r[i]
			}
			z[o] += acc
		}
	case msg.CorrConv2D:
		oh, ow, k := c.H-c.K+1, c.W-c.K+1, c.K
		for co := 0; co < c.Out; co++ {
			out := z[co*oh*ow : (co+1)*oh*ow]
			for ci := 0; ci < c.In; ci++ {
				plane := r[ci*c.H*c.W : (ci+1)*c.H*c.W]
				ker := a[(co*c.In+ci)*k*k : (co*c.In+ci+1)*k*k]
				for ky := 0; ky < k; ky++ {
					for kx := 0; kx < k; kx++ {
						wv := ker[ky*k+kx]
						for y := 0; y < oh; y++ {
							src := plane[(y+ky)*c.W+kx : (y+ky)*c.W+kx+ow]
							dst := out[y*ow : y*ow+ow]
							for x := range dst {
								dst[x] += wv * src[x]
							}
						}
					}
				}
			}
		}
	}
	m := prg.Mask(c.Ring)
	for i := range z {
		z[i] &= m
	}
}

// collectCorr hands out the correlation submitted at counter, once.
func (e *Engine) collectCorr(req *msg.CollectRequest) (*msg.CollectResponse, error) {
	if len(req.Points) != 0 || req.Count != 0 {
		return nil, bad("Points/Count: must be empty in a correlation collect")
	}
	sh, ok := e.corrs[req.Counter]
	if !ok {
		return nil, bad("Counter: no correlation ready at counter %d", req.Counter)
	}
	delete(e.corrs, req.Counter)
	return &msg.CollectResponse{Counter: req.Counter, Corr: sh}, nil
}

// dropCorrs wipes and drops the uncollected correlations whose first
// counter is at most counter, and forgets the weight masks among them
// (never handed out, so no session uses them); it returns how many
// outputs. A weight mask whose shares were collected stays kept: the
// session holding them goes on across abandons of later batches and
// across a resynchronisation of the hosts (a module that restarts forgets
// its weight masks, and input correlations against them are refused).
func (e *Engine) dropCorrs(counter uint64) int {
	for c, sh := range e.corrs {
		if c <= counter && sh.Corr.Part == msg.CorrWeight {
			delete(e.weights, c)
		}
	}
	n := 0
	for c, sh := range e.corrs {
		if c <= counter {
			sh.Wipe()
			delete(e.corrs, c)
			n++
		}
	}
	return n
}

// corrRoom checks that a correlation submission (of any kind) carries no
// shares, frame or bulk, that the module is paired, and that it has room
// for one more correlation of words words; it moves nothing.
func (e *Engine) corrRoom(req *msg.SubmitRequest, words int) error {
	if len(req.Shares) != 0 || len(req.Frame) != 0 || req.Bulk != nil {
		return bad("Shares/Frame/Bulk: must be empty in a correlation submission")
	}
	if !e.paired {
		return ErrNotPaired
	}
	if len(e.corrs) >= MaxCorrs {
		return bad("Corr: %d correlations wait to be collected (collect or abandon first)", len(e.corrs))
	}
	held := 0
	for _, sh := range e.corrs {
		held += len(sh.A) + len(sh.R) + len(sh.Z) + len(sh.Packs)/8
	}
	if held+words > MaxCorrWordsHeld {
		return bad("Corr: %d words wait to be collected; %d more would pass the limit of %d (collect or abandon first)", held, words, MaxCorrWordsHeld)
	}
	return nil
}

// ownShare returns this party's additive share (mod m+1) of each value of
// v, given party 0's drawn shares v0: v0 itself at party 0, v − v0 at
// party 1.
func (e *Engine) ownShare(v, v0 []uint64, m uint64) []uint64 {
	dst := make([]uint64, len(v))
	for i := range dst {
		if e.party == 0 {
			dst[i] = v0[i]
		} else {
			dst[i] = (v[i] - v0[i]) & m
		}
	}
	return dst
}
