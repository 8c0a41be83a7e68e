package fss

import (
	"crypto/rand"
	"encoding/binary"
	"fmt"
	"io"

	"github.com/kord-fss/kord/internal/prg"
)

// neg returns v when t = 0 and -v mod 2^n when t = 1 (the spec's neg_t).
func neg(t uint8, v uint64, mask uint64) uint64 {
	return ((v ^ -uint64(t)) + uint64(t)) & mask
}

// sel8 returns x when a = 0 and y when a = 1 (a a bit), without a branch.
func sel8(a, x, y uint8) uint8 { return x ^ (x^y)&-a }

// sel64 is sel8 on 64-bit values.
func sel64(a uint8, x, y uint64) uint64 { return x ^ (x^y)&-uint64(a) }

// order writes (x, y) to keep, lose when a = 0 and (y, x) when a = 1 (a a
// bit). Gen picks the Keep child by α's bits this way, with masks, so that
// neither a branch nor a memory address depends on α.
func order(a uint8, x, y, keep, lose *prg.Block) {
	m := -uint64(a)
	for o := 0; o < len(keep); o += 8 {
		xw, yw := le.Uint64(x[o:]), le.Uint64(y[o:])
		d := (xw ^ yw) & m
		le.PutUint64(keep[o:], xw^d)
		le.PutUint64(lose[o:], yw^d)
	}
}

// xorIf XORs c into b when t = 1 (t a bit), without a branch.
func xorIf(t uint8, b, c *prg.Block) {
	m := -uint64(t)
	for o := 0; o < len(b); o += 8 {
		le.PutUint64(b[o:], le.Uint64(b[o:])^le.Uint64(c[o:])&m)
	}
}

var le = binary.LittleEndian

// checkPoint validates α < 2^ℓ and β < 2^n for params p.
func checkPoint(p Params, alpha, beta uint64) error {
	if err := p.Validate(); err != nil {
		return err
	}
	if alpha&^prg.Mask(p.InBits) != 0 {
		return fmt.Errorf("fss: alpha %d does not fit in %d input bits", alpha, p.InBits)
	}
	if beta&^prg.Mask(p.OutBits) != 0 {
		return fmt.Errorf("fss: beta %d does not fit in %d output bits", beta, p.OutBits)
	}
	return nil
}

// Gen generates a key pair for (α, β) with fresh root seeds from rnd
// (crypto/rand when rnd is nil).
func Gen(rnd io.Reader, p Params, alpha, beta uint64) (k0, k1 *Key, err error) {
	r0, r1, err := freshRoots(rnd)
	if err != nil {
		return nil, nil, err
	}
	return GenWithRoots(p, alpha, beta, r0, r1)
}

// freshRoots draws two root seeds from rnd (crypto/rand when rnd is nil).
func freshRoots(rnd io.Reader) (r0, r1 prg.Block, err error) {
	if rnd == nil {
		rnd = rand.Reader
	}
	var roots [32]byte
	if _, err := io.ReadFull(rnd, roots[:]); err != nil {
		return r0, r1, fmt.Errorf("fss: reading root seeds: %w", err)
	}
	copy(r0[:], roots[:16])
	copy(r1[:], roots[16:])
	clear(roots[:])
	return r0, r1, nil
}

// GenWithRoots generates the key pair for (α, β) from the given root seeds,
// used exactly as given. The same inputs always give the same bytes; this is
// the entry point for known-answer tests and for key-generation modules,
// which derive their roots instead of drawing them.
func GenWithRoots(p Params, alpha, beta uint64, root0, root1 [16]byte) (k0, k1 *Key, err error) {
	if err := checkPoint(p, alpha, beta); err != nil {
		return nil, nil, err
	}
	k0 = &Key{p: p, party: 0, root: root0, seedCW: make([]prg.Block, p.InBits)}
	k1 = &Key{p: p, party: 1, root: root1, seedCW: make([]prg.Block, p.InBits)}
	if p.Type == DCF {
		k0.valCW = make([]uint64, p.InBits)
		k1.valCW = make([]uint64, p.InBits)
	}
	var st genState
	st.run(p, alpha, beta, root0, root1, k0, k1)
	st.wipe()
	k1.seedCW = append(k1.seedCW[:0], k0.seedCW...)
	copy(k1.valCW, k0.valCW)
	k1.tL, k1.tR, k1.final = k0.tL, k0.tR, k0.final
	return k0, k1, nil
}

// genState is the working state of one Gen, kept in one place so it can be
// wiped when the key is done.
type genState struct {
	s      [2]prg.Block // current seeds of both chains
	l, r   [2]prg.Block // raw children
	keep   [2]prg.Block // the children on α's path
	lose   [2]prg.Block // and off it
	vl, vr [2]prg.Block // value-lane outputs (DCF)
	t      [2]uint8
	v      uint64 // DCF running value V
}

func (g *genState) wipe() { *g = genState{} }

// run computes the correction words into k0 (k1 gets copies). It takes
// no branch and forms no address from α or the control bits: selections
// are masks, as in the fused kernels of package prg.
func (g *genState) run(p Params, alpha, beta uint64, root0, root1 prg.Block, k0, _ *Key) {
	mask := prg.Mask(p.OutBits)
	l := p.InBits
	g.s = [2]prg.Block{root0, root1}
	g.t = [2]uint8{0, 1}
	for j := 1; j <= l; j++ {
		a := uint8(alpha >> uint(l-j) & 1)
		prg.ExpandSeeds(g.l[:], g.r[:], g.s[:])
		var tl, tr [2]uint8
		for b := 0; b < 2; b++ {
			tl[b] = prg.SplitControl(&g.l[b])
			tr[b] = prg.SplitControl(&g.r[b])
		}
		var tKeep [2]uint8
		for b := 0; b < 2; b++ {
			order(a, &g.l[b], &g.r[b], &g.keep[b], &g.lose[b])
			tKeep[b] = sel8(a, tl[b], tr[b])
		}
		var sCW prg.Block
		for i := range sCW {
			sCW[i] = g.lose[0][i] ^ g.lose[1][i]
		}
		tLCW := tl[0] ^ tl[1] ^ a ^ 1
		tRCW := tr[0] ^ tr[1] ^ a
		tKeepCW := sel8(a, tLCW, tRCW)
		if p.Type == DCF {
			prg.ExpandValues(g.vl[:], g.vr[:], g.s[:])
			v0L, v1L := prg.Convert(&g.vl[0], p.OutBits), prg.Convert(&g.vl[1], p.OutBits)
			v0R, v1R := prg.Convert(&g.vr[0], p.OutBits), prg.Convert(&g.vr[1], p.OutBits)
			t1 := g.t[1]
			vcw := neg(t1, sel64(a, v1R-v0R-g.v, v1L-v0L-g.v+beta), mask)
			keep0, keep1 := sel64(a, v0L, v0R), sel64(a, v1L, v1R)
			g.v = (g.v - keep1 + keep0 + neg(t1, vcw, mask)) & mask
			k0.valCW[j-1] = vcw
		}
		for b := 0; b < 2; b++ {
			g.s[b] = g.keep[b]
			xorIf(g.t[b], &g.s[b], &sCW)
			g.t[b] = tKeep[b] ^ (g.t[b] & tKeepCW)
		}
		k0.seedCW[j-1] = sCW
		k0.tL |= uint64(tLCW) << uint(j-1)
		k0.tR |= uint64(tRCW) << uint(j-1)
	}
	c0, c1 := prg.Convert(&g.s[0], p.OutBits), prg.Convert(&g.s[1], p.OutBits)
	if p.Type == DPF {
		k0.final = neg(g.t[1], beta-c0+c1, mask)
	} else {
		k0.final = neg(g.t[1], c1-c0-g.v, mask)
	}
}

// Dealer is the trusted-dealer baseline: it sees (α, β) and emits both key
// shares. kord's modules produce the same keys without any party seeing both.
//
// Deprecated: Dealer{Rand: r}.Deal(p, α, β) is Gen(r, p, α, β); use Gen.
type Dealer struct {
	// Rand is the source of root seeds; nil means crypto/rand.
	Rand io.Reader
}

// Deal returns both shares of a fresh key for (α, β).
//
// Deprecated: use Gen(d.Rand, p, alpha, beta).
func (d *Dealer) Deal(p Params, alpha, beta uint64) (k0, k1 *Key, err error) {
	return Gen(d.Rand, p, alpha, beta)
}
