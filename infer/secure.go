package infer

import (
	"errors"
	"fmt"

	"github.com/kord-fss/kord/gates"
)

// Sources are where the offline material comes from: FSS keys for the
// non-linear layers (gates.ModuleSource for kord's dealerless modules,
// gates.DealerSource for the baseline) and the linear layers'
// multiplication correlations.
type Sources struct {
	Keys gates.KeySource
	Corr CorrSource
}

// Material is one party's offline material for one evaluation of one
// model. It is single-use: a second Eval on it fails with ErrUsed before
// anything is sent.
type Material struct {
	B      int
	layers []layerMat
	used   bool
}

type layerMat struct {
	lin *LinearCorr
	// trunc at ℓ = 64: [TR, CMP] (two rounds); below, trunc (one round)
	gs    []gates.Material
	trunc *truncMat
	// relu: one batch; maxpool: one batch per tree level (relu.go)
	relus []*reluMat
}

// ErrUsed is returned by Eval on material that was already consumed.
var ErrUsed = errors.New("infer: material already used (masks are single-use)")

// Wipe zeroes the linear correlations, ReLU and truncation keys and mask
// shares the material still holds (gates-made ℓ = 64 truncation material
// has no wipe of its own).
func (m *Material) Wipe() {
	if m == nil {
		return
	}
	for _, l := range m.layers {
		l.lin.wipe()
		for _, r := range l.relus {
			r.wipe()
		}
		l.trunc.wipe()
	}
}

// poolLevels returns, for a window of n values reduced by the pairwise
// tree, the number of max operations at each level.
func poolLevels(n int) []int {
	var out []int
	for n > 1 {
		out = append(out, n/2)
		n = (n + 1) / 2
	}
	return out
}

// truncGates are the two gates of the exact arithmetic shift by s in
// Z_{2^ℓ}: a logical TR of x + 2^{ℓ−1}, then the lift of its Z_{2^{ℓ−s}}
// shares back to Z_{2^ℓ} (a public comparison of the exact sum of the two
// shares with 2^{ℓ−s}).
func truncGates(ring, s int) (gates.TR, gates.CMP) {
	m := ring - s
	return gates.TR{Bits: ring, Shift: s}, gates.CMP{Bits: m + 1, Out: ring, C: 1 << uint(m)}
}

// Session is one party's material for a run of evaluations of one model
// under one opening of its weights: its share of every linear layer's
// weight mask A and, once Open has run, the opened Ŵ = W + A. A is never
// opened again; each evaluation masks its inputs afresh.
type Session struct {
	B      int
	a      [][]uint64 // per layer (nil for non-linear layers)
	what   [][]uint64 // opened Ŵ per layer, after Open
	opened bool
	failed bool
}

// Wipe zeroes the session's shares and opened weights.
func (s *Session) Wipe() {
	if s == nil {
		return
	}
	for i := range s.a {
		clear(s.a[i])
		clear(s.what[i])
	}
}

// WeightMaskWords is the number of weight-mask words this party holds.
func (s *Session) WeightMaskWords() int {
	n := 0
	for _, a := range s.a {
		n += len(a)
	}
	return n
}

// Supply is the offline driver of a session for both parties (in a
// deployment each party drives its own module; here one object drives
// both through Sources): it holds the sources and the handles of the
// session's weight masks.
type Supply struct {
	arch    *Model
	shapes  []Shape
	src     Sources
	weights []*WeightMask
}

// NewSupply draws a fresh weight mask for every linear layer of arch
// (weights are not needed) and returns the driver with both parties'
// sessions.
func NewSupply(arch *Model, src Sources) (*Supply, [2]*Session, error) {
	var ss [2]*Session
	shapes, err := arch.Shapes()
	if err != nil {
		return nil, ss, err
	}
	if src.Keys == nil || src.Corr == nil {
		return nil, ss, errors.New("infer: a supply needs a key source and a correlation source")
	}
	sp := &Supply{arch: arch, shapes: shapes, src: src, weights: make([]*WeightMask, len(arch.Layers))}
	for b := 0; b < 2; b++ {
		ss[b] = &Session{B: b, a: make([][]uint64, len(arch.Layers)), what: make([][]uint64, len(arch.Layers))}
	}
	for i := range arch.Layers {
		ly := &arch.Layers[i]
		if !ly.Linear() {
			continue
		}
		w, err := src.Corr.Weights(ly, shapes[i], arch.Ring)
		if err == nil && (len(w.A[0]) != ly.weightLen() || len(w.A[1]) != ly.weightLen()) {
			err = errors.New("weight mask of the wrong size")
		}
		if err != nil {
			ss[0].Wipe()
			ss[1].Wipe()
			return nil, [2]*Session{}, fmt.Errorf("infer: offline, layer %d (%v) weight mask: %w", i, ly.Kind, err)
		}
		sp.weights[i] = w
		ss[0].a[i], ss[1].a[i] = w.A[0], w.A[1]
	}
	return sp, ss, nil
}

// Gen produces both parties' material for one evaluation: every key and
// every input mask is fresh. Not safe for concurrent use: the two modules
// of a pair must see the same sequence of requests, so one Gen (and no
// other request on the same pair) runs at a time.
func (sp *Supply) Gen() ([2]*Material, error) {
	var out [2]*Material
	arch, shapes, src := sp.arch, sp.shapes, sp.src
	out[0], out[1] = &Material{B: 0}, &Material{B: 1}
	fail := func(i int, err error) ([2]*Material, error) {
		out[0].Wipe()
		out[1].Wipe()
		return [2]*Material{}, fmt.Errorf("infer: offline, layer %d (%v): %w", i, arch.Layers[i].Kind, err)
	}
	for i := range arch.Layers {
		ly := &arch.Layers[i]
		in, o := shapes[i], shapes[i+1]
		var lm [2]layerMat
		switch ly.Kind {
		case FC, Conv:
			c, err := src.Corr.Input(sp.weights[i], ly, in, arch.Ring)
			if err == nil && (len(c[0].R) != in.Len() || len(c[1].R) != in.Len() || len(c[0].Z) != o.Len() || len(c[1].Z) != o.Len()) {
				err = errors.New("input correlation of the wrong size")
			}
			if err != nil {
				return fail(i, err)
			}
			lm[0].lin, lm[1].lin = c[0], c[1]
		case Trunc:
			if arch.Ring <= 63 {
				m, err := truncGen(src.Keys, arch.Ring, ly.S, in.Len())
				if err != nil {
					return fail(i, err)
				}
				lm[0].trunc, lm[1].trunc = m[0], m[1]
				break
			}
			tr, ext := truncGates(arch.Ring, ly.S)
			for _, g := range []gates.Gate{tr, ext} {
				m, err := g.Gen(src.Keys, nil, in.Len())
				if err != nil {
					return fail(i, err)
				}
				lm[0].gs, lm[1].gs = append(lm[0].gs, m[0]), append(lm[1].gs, m[1])
			}
		case ReLU:
			m, err := reluGen(src.Keys, arch.Ring, in.Len())
			if err != nil {
				return fail(i, err)
			}
			lm[0].relus, lm[1].relus = []*reluMat{m[0]}, []*reluMat{m[1]}
		case MaxPool:
			windows := o.Len()
			for _, n := range poolLevels(ly.K * ly.K) {
				m, err := reluGen(src.Keys, arch.Ring, windows*n)
				if err != nil {
					return fail(i, err)
				}
				lm[0].relus, lm[1].relus = append(lm[0].relus, m[0]), append(lm[1].relus, m[1])
			}
		case Flatten:
		default:
			return fail(i, errors.New("this layer kind runs only in the streamed evaluation (RunStream)"))
		}
		out[0].layers = append(out[0].layers, lm[0])
		out[1].layers = append(out[1].layers, lm[1])
	}
	return out, nil
}

// Eval is party p's online phase of one evaluation. Party 0 (the model
// owner) passes the model with its weights and a nil image; party 1 (the
// client) passes the architecture (m.Arch(), no weights) and its quantized
// image. Both parties' inputs enter as trivial shares (the owner holds the
// value, the other 0) and are only ever opened under a fresh mask: the
// weights once per session (sess.Open, run here on first use), the image
// under this evaluation's R. Party 1 receives the output wire (the
// logits, signed); party 0 receives nil.
//
// On any error (bad input, a peer that disconnects or sends a malformed
// frame) Eval returns at once, naming the layer; the material is consumed
// and wiped either way and nothing further is requested.
func Eval(p *gates.Party, m *Model, sess *Session, mat *Material, image []int64) ([]int64, error) {
	if p == nil || p.Conn == nil || (p.B != 0 && p.B != 1) {
		return nil, errors.New("infer: party must be 0 or 1 with a connection")
	}
	if mat == nil || mat.B != p.B || len(mat.layers) != len(m.Layers) || sess == nil || sess.B != p.B || len(sess.a) != len(m.Layers) {
		return nil, errors.New("infer: session or material does not belong to this party and model")
	}
	if mat.used {
		return nil, ErrUsed
	}
	mat.used = true
	defer mat.Wipe()
	shapes, err := m.Shapes()
	if err != nil {
		return nil, err
	}
	if err := m.Validate(p.B == 0); err != nil {
		return nil, err
	}
	if p.B == 1 && len(image) != m.Input.Len() {
		return nil, fmt.Errorf("%w: image has %d values, the model takes %v = %d", ErrInput, len(image), m.Input, m.Input.Len())
	}
	if !sess.opened {
		if err := sess.Open(p, m); err != nil {
			return nil, err
		}
	}
	ring := m.Ring
	mk := mask(ring)
	cur := make([]uint64, m.Input.Len())
	if p.B == 1 {
		for i, v := range image {
			cur[i] = uint64(v) & mk
		}
	}
	for i := range m.Layers {
		ly := &m.Layers[i]
		lm := &mat.layers[i]
		in, o := shapes[i], shapes[i+1]
		var err error
		switch ly.Kind {
		case FC, Conv:
			cur, err = linearOnline(p, ly, in, o, ring, sess.a[i], sess.what[i], lm.lin, cur)
		case Trunc:
			if lm.trunc != nil {
				cur, err = truncEval(p, ring, ly.S, lm.trunc, cur)
			} else {
				cur, err = truncOnline(p, ring, ly.S, lm.gs, cur)
			}
		case ReLU:
			if len(lm.relus) != 1 {
				err = errors.New("ReLU material missing")
				break
			}
			cur, err = reluEval(p, ring, lm.relus[0], cur)
		case MaxPool:
			cur, err = poolOnline(p, ring, ly.K, in, o, lm.relus, cur)
		case Flatten:
		default:
			err = errors.New("this layer kind runs only in the streamed evaluation (RunStream)")
		}
		if err != nil {
			return nil, fmt.Errorf("infer: party %d, layer %d (%v): %w", p.B, i, ly.Kind, err)
		}
	}
	return output(p, cur, ring)
}

// output is the output to the client (one round): party 0 sends its
// shares of the last wire cur, party 1 nothing; the client (party 1)
// returns the signed values, the owner nil.
func output(p *gates.Party, cur []uint64, ring int) ([]int64, error) {
	var msg []byte
	if p.B == 0 {
		msg = pack(cur, ring)
	}
	in, err := p.Conn.Exchange(msg)
	if err != nil {
		return nil, fmt.Errorf("infer: party %d, output: %w", p.B, err)
	}
	if p.B == 0 {
		if len(in) != 0 {
			return nil, fmt.Errorf("infer: party 0, output: peer sent %d bytes, want 0", len(in))
		}
		return nil, nil
	}
	peer, err := unpack(in, len(cur), ring)
	if err != nil {
		return nil, fmt.Errorf("infer: party 1, output: %w", err)
	}
	out := make([]int64, len(cur))
	for i := range cur {
		out[i] = signed(cur[i]+peer[i], ring)
	}
	return out, nil
}

// Open is the session's one weight opening (one round): for every linear
// layer both parties learn Ŵ = W + A (the owner sends W + A_0, the client
// A_1). Eval runs it on first use; a session whose opening failed is
// unusable.
func (s *Session) Open(p *gates.Party, m *Model) error {
	if s.opened || s.failed {
		return errors.New("infer: session already opened (or its opening failed)")
	}
	if p == nil || p.Conn == nil || p.B != s.B || len(s.a) != len(m.Layers) {
		return errors.New("infer: session does not belong to this party and model")
	}
	if err := m.Validate(p.B == 0); err != nil { // the owner's weights must all be there
		return err
	}
	s.failed = true
	var send []uint64
	for i := range m.Layers {
		ly := &m.Layers[i]
		if !ly.Linear() {
			continue
		}
		if len(s.a[i]) != ly.weightLen() {
			return fmt.Errorf("infer: layer %d: session has no weight mask", i)
		}
		for j, v := range s.a[i] {
			if p.B == 0 {
				v += uint64(ly.W[j])
			}
			send = append(send, v&mask(m.Ring))
		}
	}
	got, err := exchange(p, send, m.Ring)
	if err != nil {
		return fmt.Errorf("infer: party %d, opening the weights: %w", p.B, err)
	}
	at := 0
	for i := range m.Layers {
		if !m.Layers[i].Linear() {
			continue
		}
		n := len(s.a[i])
		s.what[i] = make([]uint64, n)
		for j := 0; j < n; j++ {
			s.what[i][j] = (send[at+j] + got[at+j]) & mask(m.Ring)
		}
		at += n
	}
	clear(send)
	s.opened, s.failed = true, false
	return nil
}

// linearOnline evaluates a linear layer on shares x with one opening
// round, x̂ = x + R, against the session's opened Ŵ and weight-mask share
// A_b: y_b = L(Ŵ, [b=0]·x̂ − R_b) − L(A_b, x̂) + Z_b + [b=0]·bias, since
// L(Ŵ−A, x̂−R) = L(Ŵ,x̂) − L(Ŵ,R) − L(A,x̂) + L(A,R).
func linearOnline(p *gates.Party, ly *Layer, in, o Shape, ring int, a, wh []uint64, c *LinearCorr, x []uint64) ([]uint64, error) {
	mk := mask(ring)
	if c == nil || c.used || len(c.R) != in.Len() || len(c.Z) != o.Len() || len(a) != ly.weightLen() || len(wh) != len(a) {
		return nil, errors.New("linear correlation or weight mask missing, used or of the wrong shape")
	}
	c.used = true
	nx := len(c.R)
	send := make([]uint64, nx)
	for i := range x {
		send[i] = (x[i] + c.R[i]) & mk
	}
	got, err := exchange(p, send, ring)
	if err != nil {
		return nil, err
	}
	xh := send
	for i := range xh {
		xh[i] = (xh[i] + got[i]) & mk
	}
	y := make([]uint64, o.Len())
	per := o.Len() / ly.Out
	for j := range y {
		y[j] = c.Z[j]
		if p.B == 0 {
			y[j] += uint64(ly.B[j/per])
		}
	}
	t := make([]uint64, nx)
	for i := range t {
		t[i] = -c.R[i]
		if p.B == 0 {
			t[i] += xh[i]
		}
	}
	applyFast(ly, in, wh, t, y, ring)
	negA := make([]uint64, len(a))
	for i, v := range a {
		negA[i] = -v
	}
	applyFast(ly, in, negA, xh, y, ring)
	for j := range y {
		y[j] &= mk
	}
	clear(t)
	clear(negA)
	c.wipe()
	return y, nil
}

// truncOnline is the exact arithmetic shift by s at ℓ = 64, where the
// one-round form (trunc.go) would need a 65-bit comparison (two rounds): TR gives
// shares mod 2^{ℓ−s} of v = ⌊(x + 2^{ℓ−1})/2^s⌋ ∈ [0, 2^{ℓ−s}); with
// V = v_0 + v_1 exact in Z_{2^{ℓ−s+1}}, v = V − 2^{ℓ−s}·1{V ≥ 2^{ℓ−s}},
// and x >> s = v − 2^{ℓ−s−1}, all mod 2^ℓ.
func truncOnline(p *gates.Party, ring, s int, gs []gates.Material, x []uint64) ([]uint64, error) {
	if len(gs) != 2 {
		return nil, errors.New("truncation material missing")
	}
	tr, ext := truncGates(ring, s)
	m := ring - s
	half := uint64(1) << uint(ring-1)
	in := make([][]uint64, len(x))
	for i, v := range x {
		if p.B == 0 {
			v += half
		}
		in[i] = []uint64{v & mask(ring)}
	}
	v, err := tr.Eval(p, gs[0], in)
	if err != nil {
		return nil, err
	}
	c, err := ext.Eval(p, gs[1], v) // v_b < 2^m: exact shares in Z_{2^{m+1}}
	if err != nil {
		return nil, err
	}
	out := make([]uint64, len(x))
	for i := range x {
		y := v[i][0] + c[i][0]<<uint(m)
		if p.B == 0 {
			y -= 1<<uint(m) + 1<<uint(m-1)
		}
		out[i] = y & mask(ring)
	}
	return out, nil
}

// poolOnline is K×K max-pooling (stride K) as a tree of
// max(a, b) = b + ReLU(a − b), one batched ReLU round per tree level.
func poolOnline(p *gates.Party, ring, k int, in, o Shape, gs []*reluMat, x []uint64) ([]uint64, error) {
	levels := poolLevels(k * k)
	if len(gs) != len(levels) {
		return nil, errors.New("max-pool material missing")
	}
	mk := mask(ring)
	windows := o.Len()
	win := make([][]uint64, windows)
	for c := 0; c < o.C; c++ {
		for oy := 0; oy < o.H; oy++ {
			for ox := 0; ox < o.W; ox++ {
				w := make([]uint64, 0, k*k)
				for ky := 0; ky < k; ky++ {
					for kx := 0; kx < k; kx++ {
						w = append(w, x[(c*in.H+oy*k+ky)*in.W+ox*k+kx])
					}
				}
				win[(c*o.H+oy)*o.W+ox] = w
			}
		}
	}
	for lv, n := range levels {
		diffs := make([]uint64, 0, windows*n)
		for _, w := range win {
			for j := 0; j+1 < len(w); j += 2 {
				diffs = append(diffs, (w[j]-w[j+1])&mk)
			}
		}
		r, err := reluEval(p, ring, gs[lv], diffs)
		if err != nil {
			return nil, err
		}
		at := 0
		for wi, w := range win {
			nw := make([]uint64, 0, (len(w)+1)/2)
			for j := 0; j+1 < len(w); j += 2 {
				nw = append(nw, (w[j+1]+r[at])&mk)
				at++
			}
			if len(w)%2 == 1 {
				nw = append(nw, w[len(w)-1])
			}
			win[wi] = nw
		}
	}
	out := make([]uint64, windows)
	for i, w := range win {
		out[i] = w[0]
	}
	return out, nil
}

// exchange sends this party's words (ring bits each) and returns the
// peer's, in one round.
func exchange(p *gates.Party, v []uint64, ring int) ([]uint64, error) {
	in, err := p.Conn.Exchange(pack(v, ring))
	if err != nil {
		return nil, err
	}
	return unpack(in, len(v), ring)
}

// pack writes each word's low bits bits, little-endian bit order.
func pack(v []uint64, bits int) []byte {
	out := make([]byte, (len(v)*bits+7)/8)
	pos := 0
	for _, x := range v {
		x &= mask(bits)
		for i := 0; i < bits; {
			byteIdx, off := pos/8, pos%8
			take := min(8-off, bits-i)
			out[byteIdx] |= byte((x >> uint(i)) & mask(take) << uint(off))
			i += take
			pos += take
		}
	}
	return out
}

// unpack reads n words of bits bits; the frame must have exactly the
// packed length.
func unpack(buf []byte, n, bits int) ([]uint64, error) {
	if len(buf) != (n*bits+7)/8 {
		return nil, fmt.Errorf("malformed frame from peer: %d bytes, want %d", len(buf), (n*bits+7)/8)
	}
	out := make([]uint64, n)
	pos := 0
	for j := range out {
		var x uint64
		for i := 0; i < bits; {
			byteIdx, off := pos/8, pos%8
			take := min(8-off, bits-i)
			x |= uint64(buf[byteIdx]>>uint(off)) & mask(take) << uint(i)
			i += take
			pos += take
		}
		out[j] = x
	}
	return out, nil
}
