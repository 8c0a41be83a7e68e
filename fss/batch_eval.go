package fss

import (
	"encoding/binary"
	"fmt"

	"github.com/kord-fss/kord/internal/prg"
)

// BatchEval evaluates many keys of one shape, each at its own point:
// out[i] = keys[i].Eval(xs[i]). Keys walk their paths level by level
// together, GroupKeys at a time: each group first copies its keys'
// corrections into a contiguous table (one sequential read per key instead
// of a scattered one per level), then every level hashes all the group's
// seeds in one kernel call per lane pair and picks each key's child
// branch-free. Both children are hashed, twice the AES work of one path,
// because at these sizes the AES is a small part of the cost and this
// avoids partitioning keys by their next bit. Keys may belong to either
// party.
type BatchEval struct {
	p      Params
	s      []prg.Block // current seeds
	l, r   []prg.Block // seed-lane children
	vl, vr []prg.Block // value-lane outputs (DCF)
	t      []uint8
	acc    []uint64    // DCF running value
	cws    []prg.Block // corrections of the group, key-major: cws[i·ℓ + j]
	vcws   []uint64    // DCF value corrections, same layout
	tl, tr []uint64    // control-bit corrections per key
	final  []uint64
	party  []uint8
}

// NewBatchEval returns an evaluator for keys with params p.
func NewBatchEval(p Params) (*BatchEval, error) {
	if err := p.Validate(); err != nil {
		return nil, err
	}
	const g = GroupKeys
	e := &BatchEval{
		p: p, s: make([]prg.Block, g), l: make([]prg.Block, g), r: make([]prg.Block, g),
		t: make([]uint8, g), acc: make([]uint64, g),
		cws: make([]prg.Block, g*p.InBits),
		tl:  make([]uint64, g), tr: make([]uint64, g), final: make([]uint64, g), party: make([]uint8, g),
	}
	if p.Type == DCF {
		e.vl, e.vr = make([]prg.Block, g), make([]prg.Block, g)
		e.vcws = make([]uint64, g*p.InBits)
	}
	return e, nil
}

// Eval sets out[i] to the share of keys[i] at xs[i]. All keys must have
// the evaluator's params; every x must fit in ℓ bits.
func (e *BatchEval) Eval(keys []*Key, xs, out []uint64) error {
	if len(xs) != len(keys) || len(out) != len(keys) {
		return fmt.Errorf("fss: batch eval of %d keys got %d points and %d outputs", len(keys), len(xs), len(out))
	}
	for i, k := range keys {
		if k == nil || k.p != e.p {
			return fmt.Errorf("fss: batch eval key %d is not a %v key", i, e.p)
		}
		if xs[i]&^prg.Mask(e.p.InBits) != 0 {
			return fmt.Errorf("fss: batch eval point %d = %d does not fit in %d bits", i, xs[i], e.p.InBits)
		}
	}
	for base := 0; base < len(keys); base += GroupKeys {
		hi := min(len(keys), base+GroupKeys)
		e.group(keys[base:hi], xs[base:hi], out[base:hi])
	}
	e.wipe()
	return nil
}

func (e *BatchEval) group(keys []*Key, xs, out []uint64) {
	l := e.p.InBits
	dcf := e.p.Type == DCF
	for i, k := range keys {
		e.s[i], e.t[i], e.acc[i] = k.root, k.party, 0
		copy(e.cws[i*l:(i+1)*l], k.seedCW)
		if dcf {
			copy(e.vcws[i*l:(i+1)*l], k.valCW)
		}
		e.tl[i], e.tr[i], e.final[i], e.party[i] = k.tL, k.tR, k.final, k.party
	}
	e.walk(len(keys), xs, out)
}

// load copies key i of a group from a view (of the evaluator's shape).
func (e *BatchEval) load(i int, v *KeyView) {
	l := e.p.InBits
	e.s[i], e.t[i], e.acc[i] = *(*prg.Block)(v.b[headerSize : headerSize+16]), v.party, 0
	cws := e.cws[i*l : (i+1)*l]
	for j := range cws {
		cws[j] = *v.seedCW(j)
	}
	if e.p.Type == DCF {
		_, off, vb := e.p.layout()
		vcws := e.vcws[i*l : (i+1)*l]
		for j := range vcws {
			vcws[j] = readValue(v.b[off : off+vb])
			off += vb
		}
	}
	e.tl[i], e.tr[i], e.final[i], e.party[i] = v.tL, v.tR, v.final, v.party
}

// EvalViews is Eval on key views: out[i] = keys[i].Eval(xs[i]).
func (e *BatchEval) EvalViews(keys []KeyView, xs, out []uint64) error {
	if len(xs) != len(keys) || len(out) != len(keys) {
		return fmt.Errorf("fss: batch eval of %d keys got %d points and %d outputs", len(keys), len(xs), len(out))
	}
	for i := range keys {
		if err := keys[i].live(); err != nil {
			return fmt.Errorf("fss: batch eval key %d: %w", i, err)
		}
		if keys[i].p != e.p {
			return fmt.Errorf("fss: batch eval key %d is not a %v key", i, e.p)
		}
		if xs[i]&^prg.Mask(e.p.InBits) != 0 {
			return fmt.Errorf("fss: batch eval point %d = %d does not fit in %d bits", i, xs[i], e.p.InBits)
		}
	}
	for base := 0; base < len(keys); base += GroupKeys {
		hi := min(len(keys), base+GroupKeys)
		for i := base; i < hi; i++ {
			e.load(i-base, &keys[i])
		}
		e.walk(hi-base, xs[base:hi], out[base:hi])
	}
	e.wipe()
	return nil
}

// EvalSlab is Eval on the keys of a slab: out[i] = s.Key(i).Eval(xs[i]).
func (e *BatchEval) EvalSlab(s Slab, xs, out []uint64) error {
	n := s.Len()
	if len(xs) != n || len(out) != n {
		return fmt.Errorf("fss: batch eval of %d keys got %d points and %d outputs", n, len(xs), len(out))
	}
	if n > 0 && s.p != e.p {
		return fmt.Errorf("fss: batch eval slab holds %v keys, not %v", s.p, e.p)
	}
	for i := range xs {
		if xs[i]&^prg.Mask(e.p.InBits) != 0 {
			return fmt.Errorf("fss: batch eval point %d = %d does not fit in %d bits", i, xs[i], e.p.InBits)
		}
	}
	var vs [GroupKeys]KeyView
	for base := 0; base < n; base += GroupKeys {
		hi := min(n, base+GroupKeys)
		for i := base; i < hi; i++ {
			if vs[i-base] = s.Key(i); vs[i-base].IsZero() {
				clear(vs[:])
				return fmt.Errorf("fss: batch eval slab key %d: %w", i, ErrStaleView)
			}
		}
		for i := base; i < hi; i++ {
			e.load(i-base, &vs[i-base])
		}
		e.walk(hi-base, xs[base:hi], out[base:hi])
	}
	clear(vs[:])
	e.wipe()
	return nil
}

func (e *BatchEval) wipe() {
	clear(e.s)
	clear(e.l)
	clear(e.r)
	clear(e.cws)
	clear(e.vl)
	clear(e.vr)
	clear(e.vcws)
	clear(e.tl)
	clear(e.tr)
	clear(e.final)
}

// walk evaluates the n loaded keys of a group at xs.
func (e *BatchEval) walk(n int, xs, out []uint64) {
	l, nb := e.p.InBits, e.p.OutBits
	mask := prg.Mask(nb)
	dcf := e.p.Type == DCF
	s, L, R := e.s[:n], e.l[:n], e.r[:n]
	for j := 0; j < l; j++ {
		sh := uint(l - 1 - j)
		if dcf {
			prg.ExpandValues(e.vl[:n], e.vr[:n], s)
		}
		prg.ExpandSeeds(L, R, s)
		for i := 0; i < n; i++ {
			bit := xs[i] >> sh & 1
			bm := -bit
			t := e.t[i]
			tm := -uint64(t)
			llo, lhi := binary.LittleEndian.Uint64(L[i][:8]), binary.LittleEndian.Uint64(L[i][8:])
			rlo, rhi := binary.LittleEndian.Uint64(R[i][:8]), binary.LittleEndian.Uint64(R[i][8:])
			lo := llo ^ (llo^rlo)&bm
			hi := lhi ^ (lhi^rhi)&bm
			tcw := e.tl[i] ^ (e.tl[i]^e.tr[i])&bm
			cw := &e.cws[i*l+j]
			tc := uint8(lo&1) ^ uint8(tcw>>uint(j)&1)&t
			lo = (lo &^ 1) ^ binary.LittleEndian.Uint64(cw[:8])&tm
			hi ^= binary.LittleEndian.Uint64(cw[8:]) & tm
			binary.LittleEndian.PutUint64(s[i][:8], lo)
			binary.LittleEndian.PutUint64(s[i][8:], hi)
			e.t[i] = tc
			if dcf {
				vL := binary.LittleEndian.Uint64(e.vl[i][8:])
				vR := binary.LittleEndian.Uint64(e.vr[i][8:])
				c := vL ^ (vL^vR)&bm + e.vcws[i*l+j]&tm
				e.acc[i] += neg(e.party[i], c, mask)
			}
		}
	}
	for i := 0; i < n; i++ {
		c := prg.Convert(&s[i], nb)
		if e.t[i] == 1 {
			c += e.final[i]
		}
		out[i] = (e.acc[i] + neg(e.party[i], c, mask)) & mask
	}
}

// BlocksPerEval returns the MMO blocks one Eval of a key of shape p costs:
// one per level for a DPF, two for a DCF.
func BlocksPerEval(p Params) int {
	if p.Type == DCF {
		return 2 * p.InBits
	}
	return p.InBits
}

// BlocksPerEvalAll returns the MMO blocks of one full-domain evaluation:
// both children of each of the 2^ℓ - 1 inner nodes, twice that for a DCF.
func BlocksPerEvalAll(p Params) float64 {
	inner := float64(uint64(1)<<uint(min(p.InBits, 63))) - 1
	if p.Type == DCF {
		return 4 * inner
	}
	return 2 * inner
}
