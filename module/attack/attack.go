// Package attack attacks a freshly paired pair of software modules on the
// mac tier, class by class, through nothing but the public Device
// interface — the position of a malicious network or host — and reports,
// per class, how many forged frames were tried, accepted, moved a counter
// or reached the Gen engine. A sound module shows zeros in the last three.
//
// It backs `kord selftest` and the module's tests.
package attack

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/binary"
	"fmt"
	mrand "math/rand/v2"

	"github.com/kord-fss/kord/fss"
	"github.com/kord-fss/kord/internal/prg"
	"github.com/kord-fss/kord/module"
	"github.com/kord-fss/kord/module/internal/channel"
	"github.com/kord-fss/kord/module/internal/kdf"
	"github.com/kord-fss/kord/module/msg"
)

// Classes are the attack classes, in the order they run.
var Classes = []string{
	"tampered_tag", "tampered_ciphertext", "wrong_channel_key", "replay", "reflection",
	"cross_substitution", "reordering", "truncation", "extension",
}

// Result is the tally of one class.
type Result struct {
	Tried        int `json:"tried"`
	Accepted     int `json:"accepted"`
	CounterMoved int `json:"counter_moved"`
	Dispatched   int `json:"dispatched"`
}

// Clean reports whether no forged frame got anywhere.
func (r Result) Clean() bool { return r.Accepted == 0 && r.CounterMoved == 0 && r.Dispatched == 0 }

// Report is the outcome of Run.
type Report struct {
	Attacks map[string]Result
	// HonestAfter reports that honest keys of both types, generated after
	// all attacks, evaluate correctly.
	HonestAfter bool
}

// Clean reports whether every class came out clean and the pair still works.
func (r *Report) Clean() bool {
	for _, c := range r.Attacks {
		if !c.Clean() {
			return false
		}
	}
	return r.HonestAfter
}

type harness struct {
	ctx  context.Context
	dev  [2]module.Device
	rng  *mrand.Rand
	last [2][]byte // the frame most recently accepted by each module
}

// NewPair returns two freshly paired software modules.
func NewPair(ctx context.Context) ([2]module.Device, error) {
	var d [2]module.Device
	secret := make([]byte, 32)
	if _, err := rand.Read(secret); err != nil {
		return d, err
	}
	for b := 0; b < 2; b++ {
		dev, err := module.NewSoftware(module.Config{Party: b, Secret: secret})
		if err != nil {
			return d, err
		}
		d[b] = dev
	}
	return d, module.Pair(ctx, d[0], d[1])
}

// Run attacks a fresh pair with tries forged frames per class, from a
// deterministic seed.
func Run(ctx context.Context, tries int, seed uint64) (*Report, error) {
	dev, err := NewPair(ctx)
	if err != nil {
		return nil, fmt.Errorf("attack: pairing: %w", err)
	}
	h := &harness{ctx: ctx, dev: dev, rng: mrand.New(mrand.NewPCG(seed, seed^0x6b6f7264))}
	rep := &Report{Attacks: map[string]Result{}}
	// Warm up so replay has accepted frames to replay.
	for i := 0; i < 2; i++ {
		if err := h.honest(h.randomShape()); err != nil {
			return nil, err
		}
	}
	for _, class := range Classes {
		var res Result
		for i := 0; i < tries; i++ {
			if err := h.try(class, &res); err != nil {
				return nil, fmt.Errorf("attack: %s try %d: %w", class, i, err)
			}
		}
		rep.Attacks[class] = res
	}
	rep.HonestAfter = true
	for _, typ := range []fss.Type{fss.DPF, fss.DCF} {
		s := shape{typ: typ, l: 16, n: 16}
		if err := h.honest(s); err != nil {
			rep.HonestAfter = false
		}
	}
	return rep, nil
}

type shape struct {
	typ  fss.Type
	l, n int
}

func (h *harness) randomShape() shape {
	ws := []int{8, 16, 32, 64}
	l := ws[h.rng.IntN(len(ws))]
	typ := fss.DPF
	if h.rng.IntN(2) == 1 {
		typ = fss.DCF
	}
	return shape{typ: typ, l: l, n: l}
}

type job struct {
	s           shape
	alpha, beta uint64
	sh          [2]msg.Share
}

func (h *harness) newJob(s shape) job {
	j := job{s: s, alpha: h.rng.Uint64() & prg.Mask(s.l), beta: h.rng.Uint64() & prg.Mask(s.n)}
	a0, b0 := h.rng.Uint64()&prg.Mask(s.l), h.rng.Uint64()&prg.Mask(s.n)
	for b := 0; b < 2; b++ {
		j.sh[b] = msg.Share{Mode: msg.Bound, Type: s.typ, InBits: s.l, OutBits: s.n, AlphaShare: a0, BetaShare: b0}
		a0, b0 = (j.alpha-a0)&prg.Mask(s.l), (j.beta-b0)&prg.Mask(s.n)
	}
	return j
}

// submit hands one share to module b on the mac tier and returns its frame.
func (h *harness) submit(b int, s msg.Share) ([]byte, uint64, error) {
	r, err := h.dev[b].Submit(h.ctx, &msg.SubmitRequest{Kind: msg.SubmitShares, Tier: msg.MAC, Shares: []msg.Share{s}})
	if err != nil {
		return nil, 0, err
	}
	if len(r.Frames) != 1 {
		return nil, 0, fmt.Errorf("module %d returned %d frames", b, len(r.Frames))
	}
	return r.Frames[0], r.FirstCounter, nil
}

// deliver hands frame to module b and requires acceptance.
func (h *harness) deliver(b int, f []byte) error {
	r, err := h.dev[b].Submit(h.ctx, &msg.SubmitRequest{Kind: msg.SubmitPeerFrame, Frame: f})
	if err != nil {
		return err
	}
	if !r.Accepted {
		return fmt.Errorf("module %d rejected an honest frame (%s)", b, r.Reject)
	}
	h.last[b] = f
	return nil
}

// finish delivers both honest frames, collects both keys and checks them.
func (h *harness) finish(j job, f [2][]byte, c uint64) error {
	if err := h.deliver(1, f[0]); err != nil {
		return err
	}
	if err := h.deliver(0, f[1]); err != nil {
		return err
	}
	var k [2]*fss.Key
	for b := 0; b < 2; b++ {
		r, err := h.dev[b].Collect(h.ctx, &msg.CollectRequest{Counter: c})
		if err != nil {
			return err
		}
		if k[b], err = fss.ParseKey(r.Key); err != nil {
			return err
		}
	}
	m := prg.Mask(k[0].Params().InBits)
	if fss.CheckPair(k[0], k[1], j.alpha, j.beta, j.alpha, (j.alpha+1)&m, (j.alpha-1)&m) != nil {
		return fmt.Errorf("honest key at counter %d does not evaluate correctly", c)
	}
	return nil
}

func (h *harness) honest(s shape) error {
	j := h.newJob(s)
	var f [2][]byte
	var c uint64
	for b := 0; b < 2; b++ {
		var err error
		if f[b], c, err = h.submit(b, j.sh[b]); err != nil {
			return err
		}
	}
	return h.finish(j, f, c)
}

type snapshot struct {
	next, floor, gen uint64
	pending, ready   int
	dispatches       uint64
}

func (h *harness) snap(b int) (snapshot, error) {
	p, err := h.dev[b].Poll(h.ctx, &msg.PollRequest{})
	if err != nil {
		return snapshot{}, err
	}
	return snapshot{p.NextCounter, p.PeerFloor, p.Generated, p.Pending, p.Ready, p.Dispatches}, nil
}

// inject hands a forged frame to module t and records what it moved.
func (h *harness) inject(t int, forged []byte, res *Result) error {
	before, err := h.snap(t)
	if err != nil {
		return err
	}
	r, err := h.dev[t].Submit(h.ctx, &msg.SubmitRequest{Kind: msg.SubmitPeerFrame, Frame: forged})
	if err != nil {
		return err
	}
	after, err := h.snap(t)
	if err != nil {
		return err
	}
	res.Tried++
	if r.Accepted {
		res.Accepted++
	}
	if after.next != before.next || after.floor != before.floor || after.gen != before.gen ||
		after.pending != before.pending || after.ready != before.ready {
		res.CounterMoved++
	}
	if after.dispatches != before.dispatches {
		res.Dispatched++
	}
	return nil
}

func (h *harness) flip(f []byte, lo, hi int) []byte {
	g := append([]byte(nil), f...)
	for bytes.Equal(g, f) { // two flips of one bit would cancel
		flips := 1 + h.rng.IntN(3)
		for i := 0; i < flips; i++ {
			g[lo+h.rng.IntN(hi-lo)] ^= 1 << h.rng.IntN(8)
		}
	}
	return g
}

func (h *harness) try(class string, res *Result) error {
	t := h.rng.IntN(2) // the attacked module
	s := 1 - t         // the honest sender whose frame is forged
	j := h.newJob(h.randomShape())
	var f [2][]byte
	var c uint64
	shS := j.sh[s]
	if class == "cross_substitution" && h.rng.IntN(2) == 0 {
		// The sender's genuine frame is for another type or width.
		if h.rng.IntN(2) == 0 {
			shS.Type ^= 3 // DPF <-> DCF
		} else if h.rng.IntN(2) == 0 {
			shS.OutBits = 1 + (shS.OutBits+h.rng.IntN(63))%64
			shS.BetaShare &= prg.Mask(shS.OutBits)
		} else {
			shS.InBits = 1 + (shS.InBits+h.rng.IntN(63))%64
			shS.AlphaShare &= prg.Mask(shS.InBits)
		}
		var err error
		if f[s], c, err = h.submit(s, shS); err != nil {
			return err
		}
		if f[t], _, err = h.submit(t, j.sh[t]); err != nil {
			return err
		}
		if err := h.inject(t, f[s], res); err != nil {
			return err
		}
		for b := 0; b < 2; b++ {
			if _, err := h.dev[b].Submit(h.ctx, &msg.SubmitRequest{Kind: msg.SubmitAbandon, Counter: c}); err != nil {
				return err
			}
		}
		return nil
	}
	for b := 0; b < 2; b++ {
		var err error
		if f[b], c, err = h.submit(b, j.sh[b]); err != nil {
			return err
		}
	}
	fs := f[s]
	var forged []byte
	switch class {
	case "tampered_tag":
		forged = h.flip(fs, len(fs)-channel.TagSize, len(fs))
	case "tampered_ciphertext":
		forged = h.flip(fs, channel.HeaderSize, len(fs)-channel.TagSize)
	case "wrong_channel_key":
		var ks kdf.Keys
		for d := 0; d < 2; d++ {
			fillRand(h.rng, ks.MAC[d][:])
			fillRand(h.rng, ks.Batch[d][:])
			fillRand(h.rng, ks.OTP[d][:])
		}
		ch, err := channel.New(&ks, s)
		if err != nil {
			return err
		}
		d := channel.Desc{Mode: byte(msg.Bound), Type: byte(j.s.typ), InBits: j.s.l, OutBits: j.s.n}
		plain := channel.Pack(nil, d, h.rng.Uint64()&prg.Mask(j.s.l), h.rng.Uint64()&prg.Mask(j.s.n))
		if forged, err = ch.Seal(channel.TierMAC, c, []channel.Desc{d}, plain); err != nil {
			return err
		}
	case "replay":
		forged = h.last[t]
	case "reflection":
		forged = f[t]
	case "cross_substitution":
		// A genuine earlier frame with its counter field rewritten.
		forged = append([]byte(nil), h.last[t]...)
		binary.LittleEndian.PutUint64(forged[channel.NonceSize:], c)
	case "reordering":
		// The sender runs ahead: its next frame arrives before this one.
		j2 := h.newJob(j.s)
		g, c2, err := h.submit(s, j2.sh[s])
		if err != nil {
			return err
		}
		gt, _, err := h.submit(t, j2.sh[t])
		if err != nil {
			return err
		}
		if err := h.inject(t, g, res); err != nil {
			return err
		}
		if err := h.finish(j, f, c); err != nil {
			return err
		}
		var f2 [2][]byte
		f2[s], f2[t] = g, gt
		return h.finish(j2, f2, c2)
	case "truncation":
		k := h.rng.IntN(len(fs))
		if h.rng.IntN(2) == 0 {
			forged = append([]byte(nil), fs[:k]...)
		} else {
			forged = append([]byte(nil), fs[len(fs)-k:]...)
		}
	case "extension":
		extra := make([]byte, 1+h.rng.IntN(64))
		fillRand(h.rng, extra)
		if h.rng.IntN(2) == 0 {
			forged = append(append([]byte(nil), fs...), extra...)
		} else {
			forged = append(extra, fs...)
		}
	default:
		return fmt.Errorf("unknown class %q", class)
	}
	if err := h.inject(t, forged, res); err != nil {
		return err
	}
	return h.finish(j, f, c)
}

func fillRand(r *mrand.Rand, b []byte) {
	for i := range b {
		b[i] = byte(r.Uint32())
	}
}
