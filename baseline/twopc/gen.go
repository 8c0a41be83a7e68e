package twopc

import (
	"context"
	"encoding/binary"
	"fmt"
	"io"
	mrand "math/rand/v2"

	"github.com/kord-fss/kord/baseline/ot"
	"github.com/kord-fss/kord/fss"
	"github.com/kord-fss/kord/internal/prg"
)

// layout is where a receiver's OTs of one key sit in its batch. Party 0
// alone receives the bit-decomposition's g OTs (x0_i ∧ x1_i).
type layout struct {
	g, x, a, m int // offsets: g-OTs, carry cross terms, α MUX, sign MUX
	nG, nX, nM int
	total      int
}

func newLayout(p fss.Params, receiver int) layout {
	l := p.InBits
	var lo layout
	if l >= 2 {
		if receiver == 0 {
			lo.nG = l - 1
		}
		lo.nX = l - 2
	}
	lo.nM = 1
	if p.Type == fss.DCF {
		lo.nM += l
	}
	lo.x = lo.nG
	lo.a = lo.x + lo.nX
	lo.m = lo.a + l
	lo.total = lo.m + lo.nM
	return lo
}

// alphaLen is the size of one α-MUX OT message: the seed term, and for a
// DCF the two value terms (α·Z and α·β).
func alphaLen(p fss.Params) int {
	if p.Type == fss.DCF {
		return 32
	}
	return 16
}

// ExchangesPerKey is the number of exchanges Gen takes for shape p: the
// carry chain of the bit decomposition (ℓ for ℓ ≥ 2), one for the α
// choices, two per level, three for the last word.
func ExchangesPerKey(p fss.Params) int {
	l := p.InBits
	n := 1 + 2*l + 3 + 1 // E1, T0, levels, final three
	if l >= 2 {
		n += 1 + (l - 2) // g-OT answers, carry steps
	}
	return n
}

// run is one party's state while generating one key.
type run struct {
	xch      func(context.Context, []byte) ([]byte, error)
	rcv      *ot.Receiver
	snd      *ot.Sender
	tb       *treeBufs
	p        fss.Params
	b        int
	me, peer layout
	rb       *ot.RecvBatch
	sb       *ot.SendBatch
	e        []bool // my random receiver choices
	peerD    []bool // the peer's derandomization bits, by its OT index
	rng      *mrand.Rand
	mask     uint64
	sign     uint64 // s_b: −1 for party 0, +1 for party 1 (mod 2^64)
	ctx      context.Context
	step     string
}

func packBits(bs []bool) []byte {
	out := make([]byte, (len(bs)+7)/8)
	for i, v := range bs {
		if v {
			out[i/8] |= 1 << (i % 8)
		}
	}
	return out
}

func unpackBits(b []byte, n int) []bool {
	out := make([]bool, n)
	for i := range out {
		out[i] = b[i/8]>>(i%8)&1 == 1
	}
	return out
}

func b2u(v bool) uint64 {
	if v {
		return 1
	}
	return 0
}

// exchange sends out and returns a reader over the peer's frame.
func (r *run) exchange(step string, out []byte) (*frameReader, error) {
	in, err := r.xch(r.ctx, out)
	if err != nil {
		return nil, fmt.Errorf("twopc: %v, %s: %w", r.p, step, err)
	}
	return &frameReader{b: in, step: fmt.Sprintf("%v, %s", r.p, step)}, nil
}

// derand sends d = choice ⊕ e for my OTs first..first+len(choices)−1.
func (r *run) derand(first int, choices []bool) []byte {
	d := make([]bool, len(choices))
	for i, c := range choices {
		d[i] = c != r.e[first+i]
	}
	return packBits(d)
}

// send masks message pairs for the peer's OTs first.. (choice-indexed
// messages m[v]), swapping each pair where the peer's d bit is set.
func (r *run) send(first, msgLen int, m0, m1 []byte) ([]byte, error) {
	a, b := make([]byte, len(m0)), make([]byte, len(m1))
	for k := 0; k < len(m0)/msgLen; k++ {
		x, y := m0[k*msgLen:(k+1)*msgLen], m1[k*msgLen:(k+1)*msgLen]
		if r.peerD[first+k] {
			x, y = y, x
		}
		copy(a[k*msgLen:], x)
		copy(b[k*msgLen:], y)
	}
	return r.sb.Send(first, msgLen, a, b)
}

// Gen generates this party's share of a kord-v1 key of shape p for the
// point α = alphaShare + peer's share (mod 2^ℓ) and payload β =
// betaShare + peer's share (mod 2^n), jointly with the peer, which must
// call Gen with the same shape at the same time. It returns the key and
// what the key cost this party on the wire. Input errors are returned
// before anything is sent; after any other error the two parties' frames
// are out of step and the session must be closed.
func (s *Session) Gen(ctx context.Context, p fss.Params, alphaShare, betaShare uint64) (*fss.Key, Counters, error) {
	if err := checkInputs(p, alphaShare, betaShare); err != nil {
		return nil, Counters{}, err
	}
	r, err := s.newRun(ctx, p, s.conn.Exchange, s.rcv, s.snd, &s.tree)
	if err != nil {
		return nil, Counters{}, err
	}
	before := s.conn.Counters()
	key, err := r.gen(alphaShare, betaShare)
	return key, s.conn.Counters().Sub(before), err
}

func checkInputs(p fss.Params, alphaShare, betaShare uint64) error {
	if err := p.Validate(); err != nil {
		return fmt.Errorf("twopc: %w", err)
	}
	if alphaShare&^prg.Mask(p.InBits) != 0 {
		return fmt.Errorf("twopc: the α share has bits set above ℓ = %d", p.InBits) // the value is secret
	}
	if betaShare&^prg.Mask(p.OutBits) != 0 {
		return fmt.Errorf("twopc: the β share has bits set above n = %d", p.OutBits) // the value is secret
	}
	return nil
}

func (s *Session) newRun(ctx context.Context, p fss.Params, xch func(context.Context, []byte) ([]byte, error),
	rcv *ot.Receiver, snd *ot.Sender, tb *treeBufs) (*run, error) {
	var seed [32]byte
	if _, err := io.ReadFull(s.rnd, seed[:]); err != nil {
		return nil, fmt.Errorf("twopc: randomness: %w", err)
	}
	r := &run{xch: xch, rcv: rcv, snd: snd, tb: tb, p: p, b: s.party, me: newLayout(p, s.party), peer: newLayout(p, 1-s.party),
		rng: mrand.New(mrand.NewChaCha8(seed)), mask: prg.Mask(p.OutBits), sign: 1, ctx: ctx}
	if r.b == 0 {
		r.sign = ^uint64(0)
	}
	return r, nil
}

func (r *run) gen(alphaShare, betaShare uint64) (*fss.Key, error) {
	p, l, b := r.p, r.p.InBits, r.b
	x := make([]bool, l) // my share's bits, LSB first
	for i := range x {
		x[i] = alphaShare>>i&1 == 1
	}
	// E1: my batch's columns (random choices) and d for the carry chain.
	r.e = make([]bool, r.me.total)
	for i := range r.e {
		r.e[i] = r.rng.IntN(2) == 1
	}
	cols, rb, err := r.rcv.Choose(r.e)
	if err != nil {
		return nil, err
	}
	r.rb = rb
	var bitdec []bool // my choices for g-OTs then cross OTs
	if r.me.nG > 0 {
		bitdec = append(bitdec, x[:l-1]...)
	}
	if r.me.nX > 0 {
		bitdec = append(bitdec, x[1:l-1]...)
	}
	out := append(cols, r.derand(0, bitdec)...)
	in, err := r.exchange("columns", out)
	if err != nil {
		return nil, err
	}
	peerCols := in.take(ot.ColumnsSize(r.peer.total), "OT columns")
	peerDec := in.take((r.peer.nG+r.peer.nX+7)/8, "carry-chain choice bits")
	if err := in.done(); err != nil {
		return nil, err
	}
	if r.sb, err = r.snd.Accept(peerCols, r.peer.total); err != nil {
		return nil, fmt.Errorf("twopc: %v: %w", p, err)
	}
	r.peerD = make([]bool, r.peer.total)
	copy(r.peerD, unpackBits(peerDec, r.peer.nG+r.peer.nX))

	// The carry chain of α = x0 + x1: c_{i+1} = x0_i x1_i ⊕ (x0_i ⊕ x1_i) c_i.
	c := make([]bool, l) // my XOR shares of the carries, c[0] = 0
	if l >= 2 {
		g := make([]bool, l-1) // my shares of x0_i ∧ x1_i
		var frame []byte
		if b == 1 { // party 1 answers party 0's g-OTs
			m0, m1 := make([]byte, l-1), make([]byte, l-1)
			for i := range l - 1 {
				rm := r.rng.IntN(2) == 1
				g[i] = rm
				m0[i], m1[i] = byte(b2u(rm)), byte(b2u(rm != x[i]))
			}
			if frame, err = r.send(r.peer.g, 1, m0, m1); err != nil {
				return nil, err
			}
		}
		in, err := r.exchange("carry ANDs", frame)
		if err != nil {
			return nil, err
		}
		if b == 0 {
			y := in.take(ot.MessagesSize(l-1, 1), "carry AND messages")
			if err := in.done(); err != nil {
				return nil, err
			}
			got, err := r.rb.Receive(r.me.g, l-1, 1, y)
			if err != nil {
				return nil, fmt.Errorf("twopc: %v: %w", p, err)
			}
			for i := range g {
				g[i] = got[i]&1 == 1
			}
		} else if err := in.done(); err != nil {
			return nil, err
		}
		c[1] = g[0]
		for i := 1; i <= l-2; i++ {
			rm := r.rng.IntN(2) == 1
			y, err := r.send(r.peer.x+i-1, 1, []byte{byte(b2u(rm))}, []byte{byte(b2u(rm != c[i]))})
			if err != nil {
				return nil, err
			}
			in, err := r.exchange(fmt.Sprintf("carry %d", i+1), y)
			if err != nil {
				return nil, err
			}
			peerY := in.take(ot.MessagesSize(1, 1), "carry message")
			if err := in.done(); err != nil {
				return nil, err
			}
			got, err := r.rb.Receive(r.me.x+i-1, 1, 1, peerY)
			if err != nil {
				return nil, fmt.Errorf("twopc: %v: %w", p, err)
			}
			c[i+1] = g[i] != (x[i] && c[i]) != (got[0]&1 == 1) != rm
		}
	}
	// My XOR shares of α's bits, MSB first: level j reads bit ℓ−j.
	a := make([]bool, l)
	for j := 1; j <= l; j++ {
		a[j-1] = x[l-j] != c[l-j]
	}
	// T0: d for the α MUX of every level.
	in, err = r.exchange("α choices", r.derand(r.me.a, a))
	if err != nil {
		return nil, err
	}
	peerA := in.take((l+7)/8, "α choice bits")
	if err := in.done(); err != nil {
		return nil, err
	}
	copy(r.peerD[r.peer.a:], unpackBits(peerA, l))
	return r.tree(a, betaShare)
}

// tree runs the levels over this party's full tree and the last word.
func (r *run) tree(a []bool, betaShare uint64) (*fss.Key, error) {
	p, l, b, n := r.p, r.p.InBits, r.b, r.p.OutBits
	dcf := p.Type == fss.DCF
	var root prg.Block
	for i := 0; i < 16; i += 8 {
		binary.LittleEndian.PutUint64(root[i:], r.rng.Uint64())
	}
	// The level's nodes: two buffers of 2^ℓ seeds and bits, swapped each
	// level; a level's children are stored as all left children, then
	// all right ones (the sums do not depend on the order).
	bufs, tbufs, vl, vr := r.tb.grow(l, dcf)
	seeds, ts := bufs[0][:1], tbufs[0][:1]
	seeds[0], ts[0] = root, uint8(b)
	sCW := make([]prg.Block, l)
	var tL, tR uint64
	vCW := make([]uint64, l)
	var v uint64        // my share of V
	var vcwShare uint64 // my share of the last level's VCW, revealed next exchange
	aLen := alphaLen(p)
	for j := 1; j <= l; j++ {
		m := len(seeds)
		next, nts := bufs[j%2][:2*m], tbufs[j%2][:2*m]
		L, R := next[:m], next[m:]
		tl, tr := nts[:m], nts[m:]
		prg.ExpandSeeds(L, R, seeds)
		var sl0, sl1, sr0, sr1 uint64
		var TL, TR uint8
		var tpar uint64
		for i := range m {
			tl[i], tr[i] = prg.SplitControl(&L[i]), prg.SplitControl(&R[i])
			TL ^= tl[i]
			TR ^= tr[i]
			tpar += uint64(ts[i])
			sl0 ^= binary.LittleEndian.Uint64(L[i][:8])
			sl1 ^= binary.LittleEndian.Uint64(L[i][8:])
			sr0 ^= binary.LittleEndian.Uint64(R[i][:8])
			sr1 ^= binary.LittleEndian.Uint64(R[i][8:])
		}
		var SL, SR prg.Block
		binary.LittleEndian.PutUint64(SL[:8], sl0)
		binary.LittleEndian.PutUint64(SL[8:], sl1)
		binary.LittleEndian.PutUint64(SR[:8], sr0)
		binary.LittleEndian.PutUint64(SR[8:], sr1)
		var VL, VR uint64
		var gme bool
		if dcf {
			prg.ExpandValues(vl[:m], vr[:m], seeds)
			for i := range m {
				VL += prg.Convert(&vl[i], n)
				VR += prg.Convert(&vr[i], n)
			}
			gme = tShare(b, tpar)
		}
		var D prg.Block
		for k := range D {
			D[k] = SL[k] ^ SR[k]
		}
		Z := r.sign * (VL - VR)
		// A_j: my answer to the peer's α OT; DCF: d for my sign MUX and
		// my share of the previous level's VCW.
		rD := r.block()
		rZ, rB := r.rng.Uint64(), r.rng.Uint64()
		m0, m1 := make([]byte, aLen), make([]byte, aLen)
		for vbit, msg := range [][]byte{m0, m1} {
			on := a[j-1] != (vbit == 1)
			for k := range 16 {
				msg[k] = rD[k]
				if on {
					msg[k] ^= D[k]
				}
			}
			if dcf {
				binary.LittleEndian.PutUint64(msg[16:], sel(on, Z)-rZ)
				binary.LittleEndian.PutUint64(msg[24:], sel(on, betaShare)-rB)
			}
		}
		out, err := r.send(r.peer.a+j-1, aLen, m0, m1)
		if err != nil {
			return nil, err
		}
		if dcf {
			out = append(out, r.derand(r.me.m+j-1, []bool{gme})...)
			if j > 1 {
				out = binary.LittleEndian.AppendUint64(out, vcwShare)
			}
		}
		in, err := r.exchange(fmt.Sprintf("level %d α MUX", j), out)
		if err != nil {
			return nil, err
		}
		y := in.take(ot.MessagesSize(1, aLen), "α MUX messages")
		var peerG []byte
		var peerVCW uint64
		if dcf {
			peerG = in.take(1, "sign choice bit")
			if j > 1 {
				if w := in.take(8, "VCW share"); w != nil {
					peerVCW = binary.LittleEndian.Uint64(w)
				}
			}
		}
		if err := in.done(); err != nil {
			return nil, err
		}
		got, err := r.rb.Receive(r.me.a+j-1, 1, aLen, y)
		if err != nil {
			return nil, fmt.Errorf("twopc: %v: %w", p, err)
		}
		var sShare prg.Block
		for k := range sShare {
			sShare[k] = SR[k] ^ rD[k] ^ got[k]
		}
		tbits := TL ^ uint8(b2u(a[j-1])) ^ uint8(b) | (TR^uint8(b2u(a[j-1])))<<1
		out = append(sShare[:], tbits)
		var W, aZ, aB uint64
		rG := r.rng.Uint64()
		if dcf {
			if j > 1 {
				vCW[j-2] = (vcwShare + peerVCW) & r.mask
			}
			r.peerD[r.peer.m+j-1] = peerG[0]&1 == 1
			aZ = rZ + binary.LittleEndian.Uint64(got[16:])
			aB = rB + binary.LittleEndian.Uint64(got[24:])
			phi := r.sign*VR + aZ
			W = phi - v + aB
			v = phi + aB - (r.sign*VL - aZ)
			y, err := r.send(r.peer.m+j-1, 8, u64(sel(gme, W)-rG), u64(sel(!gme, W)-rG))
			if err != nil {
				return nil, err
			}
			out = append(out, y...)
		}
		// B_j: reveal the seed and bit corrections; DCF: answer the
		// peer's sign MUX.
		in, err = r.exchange(fmt.Sprintf("level %d reveal", j), out)
		if err != nil {
			return nil, err
		}
		peerS := in.take(16, "seed correction share")
		peerT := in.take(1, "control-bit correction shares")
		var gy []byte
		if dcf {
			gy = in.take(ot.MessagesSize(1, 8), "sign MUX messages")
		}
		if err := in.done(); err != nil {
			return nil, err
		}
		if peerT[0]&^3 != 0 {
			return nil, fmt.Errorf("%w: %v, level %d: control-bit byte %#x has bits above 1", ErrFrame, p, j, peerT[0])
		}
		for k := range sCW[j-1] {
			sCW[j-1][k] = sShare[k] ^ peerS[k]
		}
		tb := tbits ^ peerT[0]
		tL |= uint64(tb&1) << (j - 1)
		tR |= uint64(tb>>1) << (j - 1)
		if dcf {
			got, err := r.rb.Receive(r.me.m+j-1, 1, 8, gy)
			if err != nil {
				return nil, fmt.Errorf("twopc: %v: %w", p, err)
			}
			gW := rG + binary.LittleEndian.Uint64(got)
			vcwShare = W - 2*gW
		}
		// Correct the children of every node whose bit is set.
		cw0 := binary.LittleEndian.Uint64(sCW[j-1][:8])
		cw1 := binary.LittleEndian.Uint64(sCW[j-1][8:])
		for i := range m {
			if ts[i] == 1 {
				xorWords(&L[i], cw0, cw1)
				xorWords(&R[i], cw0, cw1)
				tl[i] ^= tb & 1
				tr[i] ^= tb >> 1
			}
		}
		seeds, ts = next, nts
	}
	// The last word: CW = (−1)^{t_1}·X0 with t_1 at α's leaf.
	var w, tsum uint64
	for i := range seeds {
		w += prg.Convert(&seeds[i], n)
		tsum += uint64(ts[i])
	}
	gme := tShare(b, tsum)
	x0 := betaShare + r.sign*w
	if dcf {
		x0 = r.sign*w - v
	}
	out := r.derand(r.me.m+r.me.nM-1, []bool{gme})
	if dcf {
		out = binary.LittleEndian.AppendUint64(out, vcwShare)
	}
	in, err := r.exchange("last word choice", out)
	if err != nil {
		return nil, err
	}
	peerG := in.take(1, "sign choice bit")
	var peerVCW uint64
	if dcf {
		if w := in.take(8, "VCW share"); w != nil {
			peerVCW = binary.LittleEndian.Uint64(w)
		}
	}
	if err := in.done(); err != nil {
		return nil, err
	}
	if dcf {
		vCW[l-1] = (vcwShare + peerVCW) & r.mask
	}
	r.peerD[r.peer.m+r.peer.nM-1] = peerG[0]&1 == 1
	rG := r.rng.Uint64()
	y, err := r.send(r.peer.m+r.peer.nM-1, 8, u64(sel(gme, x0)-rG), u64(sel(!gme, x0)-rG))
	if err != nil {
		return nil, err
	}
	in, err = r.exchange("last word MUX", y)
	if err != nil {
		return nil, err
	}
	gy := in.take(ot.MessagesSize(1, 8), "sign MUX messages")
	if err := in.done(); err != nil {
		return nil, err
	}
	got, err := r.rb.Receive(r.me.m+r.me.nM-1, 1, 8, gy)
	if err != nil {
		return nil, fmt.Errorf("twopc: %v: %w", p, err)
	}
	cwShare := x0 - 2*(rG+binary.LittleEndian.Uint64(got))
	in, err = r.exchange("last word reveal", u64(cwShare))
	if err != nil {
		return nil, err
	}
	pw := in.take(8, "last word share")
	if err := in.done(); err != nil {
		return nil, err
	}
	final := (cwShare + binary.LittleEndian.Uint64(pw)) & r.mask
	return r.assemble(root, sCW, tL, tR, vCW, final)
}

// tShare is this party's XOR share of t_1 on α's path, from the sum T_b
// of its control bits over a level: T_0 − T_1 = ±1 and t_1 = 1 exactly
// when T_1 = T_0 + 1, so with h, l bits 1 and 0 of T_b the shares are
// h_0 ⊕ l_0 ⊕ 1 and h_1 (no interaction).
func tShare(b int, sum uint64) bool {
	h, l := sum>>1&1 == 1, sum&1 == 1
	if b == 0 {
		return h == l // h ⊕ l ⊕ 1
	}
	return h
}

func xorWords(x *prg.Block, w0, w1 uint64) {
	binary.LittleEndian.PutUint64(x[:8], binary.LittleEndian.Uint64(x[:8])^w0)
	binary.LittleEndian.PutUint64(x[8:], binary.LittleEndian.Uint64(x[8:])^w1)
}

func sel(on bool, v uint64) uint64 {
	if on {
		return v
	}
	return 0
}

func u64(v uint64) []byte { return binary.LittleEndian.AppendUint64(nil, v) }

func (r *run) block() (out prg.Block) {
	binary.LittleEndian.PutUint64(out[:8], r.rng.Uint64())
	binary.LittleEndian.PutUint64(out[8:], r.rng.Uint64())
	return out
}

// assemble writes the key in the kord-v1 layout and parses it with fss,
// so that what Gen returns is exactly what Eval accepts.
func (r *run) assemble(root prg.Block, sCW []prg.Block, tL, tR uint64, vCW []uint64, final uint64) (*fss.Key, error) {
	p := r.p
	buf := make([]byte, 0, p.KeySize())
	buf = append(buf, 0x4B, 0x01, byte(p.Type), byte(r.b), byte(p.InBits), byte(p.OutBits))
	buf = append(buf, root[:]...)
	for _, s := range sCW {
		buf = append(buf, s[:]...)
	}
	ctrl := make([]byte, (2*p.InBits+7)/8)
	for j := range p.InBits {
		ctrl[2*j/8] |= byte(tL>>j&1) << (2 * j % 8)
		ctrl[(2*j+1)/8] |= byte(tR>>j&1) << ((2*j + 1) % 8)
	}
	buf = append(buf, ctrl...)
	vb := (p.OutBits + 7) / 8
	put := func(v uint64) { buf = append(buf, u64(v)[:vb]...) }
	if p.Type == fss.DCF {
		for _, v := range vCW {
			put(v)
		}
	}
	put(final)
	k, err := fss.ParseKey(buf)
	if err != nil {
		return nil, fmt.Errorf("twopc: the generated key does not parse: %w", err)
	}
	return k, nil
}

// BytesPerKey is the payload Gen sends (no length prefixes) for party b and shape
// p: the columns of the receiver batch (IKNP: 16 bytes per OT), the
// derandomization bits, the OT answers (two messages each), the revealed
// shares.
func BytesPerKey(p fss.Params, b int) uint64 {
	l := p.InBits
	me := newLayout(p, b)
	var n int
	n += ot.ColumnsSize(me.total) + (me.nG+me.nX+7)/8 // E1
	if l >= 2 {
		if b == 1 {
			n += ot.MessagesSize(l-1, 1) // g-OT answers
		}
		n += (l - 2) * ot.MessagesSize(1, 1)
	}
	n += (l + 7) / 8                           // T0
	n += l * (ot.MessagesSize(1, alphaLen(p))) // A_j
	n += l * 17                                // B_j reveals
	if p.Type == fss.DCF {
		n += l * (1 + ot.MessagesSize(1, 8)) // sign choice, sign MUX answer
		n += (l - 1) * 8                     // VCW shares in A_2..A_ℓ
		n += 8                               // VCW_ℓ in the last word's first exchange
	}
	n += 1 + ot.MessagesSize(1, 8) + 8 // last word
	return uint64(n)
}

// grow returns the level buffers, grown to 2^ℓ nodes (and 2^(ℓ−1)
// value blocks for a DCF); they are reused from key to key rather than
// zeroed and collected every time.
func (t *treeBufs) grow(l int, dcf bool) (bufs [2][]prg.Block, tbufs [2][]uint8, vl, vr []prg.Block) {
	size := 1 << l
	for i := range 2 {
		if len(t.bufs[i]) < size {
			t.bufs[i], t.tbufs[i] = make([]prg.Block, size), make([]uint8, size)
		}
	}
	if dcf && len(t.vals[0]) < size/2 {
		t.vals = [2][]prg.Block{make([]prg.Block, size/2), make([]prg.Block, size/2)}
	}
	return t.bufs, t.tbufs, t.vals[0], t.vals[1]
}
