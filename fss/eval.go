package fss

import (
	"fmt"

	"github.com/kord-fss/kord/internal/prg"
)

// Eval returns this party's share of f(x). x must be below 2^ℓ.
func (k *Key) Eval(x uint64) (uint64, error) {
	if err := checkX(x, k.p.InBits); err != nil {
		return 0, err
	}
	return k.eval(x), nil
}

// checkX refuses an evaluation point x wider than the key's inBits.
func checkX(x uint64, inBits int) error {
	if x&^prg.Mask(inBits) != 0 {
		return fmt.Errorf("fss: x = %d does not fit in the key's %d input bits", x, inBits)
	}
	return nil
}

// eval walks the single path of x on the key's own words.
func (k *Key) eval(x uint64) uint64 { return evalPath(k, nil, x) }

// evalPath walks the single path of x. Only the child on x's side is
// hashed: one AES call per level for a DPF, two for a DCF. With raw nil
// the per-level seed and value corrections are k's words; otherwise they
// are read in place from raw, the serialized key (a KeyView's, for which
// k holds only the header fields). The one walk serves both, so a view's
// Eval is a parsed key's by construction.
func evalPath(k *Key, raw []byte, x uint64) uint64 {
	l, n := k.p.InBits, k.p.OutBits
	mask := prg.Mask(n)
	b := k.party
	s := k.root
	t := b
	var acc uint64
	var buf, vbuf [1]prg.Block
	for j := 1; j <= l; j++ {
		xj := uint8(x >> uint(l-j) & 1)
		seedLane, valLane, tcw := prg.SeedLeft, prg.ValueLeft, k.tL
		if xj == 1 {
			seedLane, valLane, tcw = prg.SeedRight, prg.ValueRight, k.tR
		}
		in := [1]prg.Block{s}
		if k.p.Type == DCF {
			prg.HashPair(seedLane, valLane, buf[:], vbuf[:], in[:])
			c := prg.Convert(&vbuf[0], n)
			if t == 1 {
				if raw == nil {
					c += k.valCW[j-1]
				} else {
					_, valOff, vb := k.p.layout()
					off := valOff + (j-1)*vb
					c += readValue(raw[off : off+vb])
				}
			}
			acc += neg(b, c, mask)
		} else {
			prg.Hash(seedLane, buf[:], in[:])
		}
		child := buf[0]
		tc := prg.SplitControl(&child)
		if t == 1 {
			var cw *prg.Block
			if raw == nil {
				cw = &k.seedCW[j-1]
			} else {
				off := headerSize + 16*j // sCW_j
				cw = (*prg.Block)(raw[off : off+16])
			}
			for i := range child {
				child[i] ^= cw[i]
			}
			tc ^= uint8(tcw >> uint(j-1) & 1)
		}
		s, t = child, tc
	}
	c := prg.Convert(&s, n)
	if t == 1 {
		c += k.final
	}
	buf[0], vbuf[0], s = prg.Block{}, prg.Block{}, prg.Block{}
	return (acc + neg(b, c, mask)) & mask
}

// EvalAll evaluates the key at every x in [0, 2^ℓ) into out, which must have
// exactly 2^ℓ entries (ℓ ≤ 40 in practice). out[x] is the share of f(x).
func (k *Key) EvalAll(out []uint64) error {
	if k.p.InBits >= 63 || uint64(len(out)) != 1<<uint(k.p.InBits) {
		return fmt.Errorf("fss: EvalAll needs an output of 2^%d entries, got %d", k.p.InBits, len(out))
	}
	if k.p.InBits <= 28 {
		return k.EvalAllBatched(out) // same outputs, on the batched kernels
	}
	return k.EvalRange(0, uint64(len(out)), out)
}

// EvalRange evaluates the key at every x in [lo, hi) into out[x-lo]; out
// must have hi-lo entries and hi must not exceed 2^ℓ. The walk is depth
// first with O(ℓ) seeds of state plus a fixed 4 KiB batch for the last
// levels, which are expanded breadth first so the PRG sees many blocks per
// call.
func (k *Key) EvalRange(lo, hi uint64, out []uint64) error {
	l := k.p.InBits
	if hi < lo || uint64(len(out)) != hi-lo {
		return fmt.Errorf("fss: EvalRange [%d, %d) needs %d outputs, got %d", lo, hi, hi-lo, len(out))
	}
	if hi == lo {
		return nil
	}
	if hi-1 > prg.Mask(l) {
		return fmt.Errorf("fss: EvalRange end %d is beyond the %d-bit domain", hi, l)
	}
	w := newWalker(k, lo, hi-1, out)
	w.walk(0, 0, k.root, k.party, 0)
	w.wipe()
	return nil
}

// bottomLevels is how many of the last levels are expanded breadth first.
const bottomLevels = 8

type walker struct {
	k        *Key
	lo, last uint64 // inclusive range
	out      []uint64
	mask     uint64
	bottom   int
	// breadth-first scratch for the bottom levels, swapped level by level
	cur, nxt   []prg.Block
	ct, nt     []uint8
	cv, nv     []uint64
	tmpL, tmpR []prg.Block
}

func newWalker(k *Key, lo, last uint64, out []uint64) *walker {
	const n = 1 << bottomLevels
	blocks := make([]prg.Block, 3*n)
	return &walker{
		k: k, lo: lo, last: last, out: out, mask: prg.Mask(k.p.OutBits),
		bottom: min(k.p.InBits, bottomLevels),
		cur:    blocks[:n], nxt: blocks[n : 2*n],
		tmpL: blocks[2*n : 5*n/2], tmpR: blocks[5*n/2:],
		ct: make([]uint8, n), nt: make([]uint8, n),
		cv: make([]uint64, n), nv: make([]uint64, n),
	}
}

func (w *walker) wipe() {
	clear(w.cur)
	clear(w.nxt)
	clear(w.tmpL)
	clear(w.tmpR)
}

// walk visits the node at depth `depth` whose path is `prefix`, with seed s,
// control bit t and DCF running value v (party-signed, already summed).
func (w *walker) walk(depth int, prefix uint64, s prg.Block, t uint8, v uint64) {
	l := w.k.p.InBits
	rem := l - depth
	first := prefix << uint(rem)
	lastX := first + prg.Mask(rem)
	if rem == 0 {
		lastX = first
	}
	if lastX < w.lo || first > w.last {
		return
	}
	if rem <= w.bottom {
		w.leaves(depth, first, s, t, v)
		return
	}
	var in, L, R [1]prg.Block
	in[0] = s
	prg.ExpandSeeds(L[:], R[:], in[:])
	var vl, vr uint64
	if w.k.p.Type == DCF {
		var VL, VR [1]prg.Block
		prg.ExpandValues(VL[:], VR[:], in[:])
		vl, vr = w.value(&VL[0], t, depth), w.value(&VR[0], t, depth)
	}
	cl, cr, tl, tr := w.correct(&L[0], &R[0], t, depth)
	w.walk(depth+1, prefix<<1, cl, tl, v+vl)
	w.walk(depth+1, prefix<<1|1, cr, tr, v+vr)
}

// value returns the party-signed value contribution of a child at the level
// below depth: neg_b(Convert(v) + t·VCW).
func (w *walker) value(vb *prg.Block, t uint8, depth int) uint64 {
	c := prg.Convert(vb, w.k.p.OutBits)
	if t == 1 {
		c += w.k.valCW[depth]
	}
	return neg(w.k.party, c, w.mask)
}

// correct splits the control bits off raw children L, R of a node with
// control bit t at `depth` and applies the level's correction words.
func (w *walker) correct(L, R *prg.Block, t uint8, depth int) (cl, cr prg.Block, tl, tr uint8) {
	tl, tr = prg.SplitControl(L), prg.SplitControl(R)
	cl, cr = *L, *R
	if t == 1 {
		cw := &w.k.seedCW[depth]
		for i := range cl {
			cl[i] ^= cw[i]
			cr[i] ^= cw[i]
		}
		tl ^= uint8(w.k.tL >> uint(depth) & 1)
		tr ^= uint8(w.k.tR >> uint(depth) & 1)
	}
	return
}

// leaves expands the subtree below a node breadth first and writes the
// leaves that fall inside the range.
func (w *walker) leaves(depth int, first uint64, s prg.Block, t uint8, v uint64) {
	l := w.k.p.InBits
	dcf := w.k.p.Type == DCF
	w.cur[0], w.ct[0], w.cv[0] = s, t, v
	width := 1
	for d := depth; d < l; d++ {
		// Expand in chunks that fit the temporaries.
		for base := 0; base < width; base += len(w.tmpL) {
			m := min(len(w.tmpL), width-base)
			prg.ExpandSeeds(w.tmpL[:m], w.tmpR[:m], w.cur[base:base+m])
			for i := 0; i < m; i++ {
				p := base + i
				cl, cr, tl, tr := w.correct(&w.tmpL[i], &w.tmpR[i], w.ct[p], d)
				w.nxt[2*p], w.nxt[2*p+1] = cl, cr
				w.nt[2*p], w.nt[2*p+1] = tl, tr
			}
			if dcf {
				prg.ExpandValues(w.tmpL[:m], w.tmpR[:m], w.cur[base:base+m])
				for i := 0; i < m; i++ {
					p := base + i
					w.nv[2*p] = w.cv[p] + w.value(&w.tmpL[i], w.ct[p], d)
					w.nv[2*p+1] = w.cv[p] + w.value(&w.tmpR[i], w.ct[p], d)
				}
			}
		}
		width *= 2
		w.cur, w.nxt = w.nxt, w.cur
		w.ct, w.nt = w.nt, w.ct
		w.cv, w.nv = w.nv, w.cv
	}
	n := w.k.p.OutBits
	for i := 0; i < width; i++ {
		x := first + uint64(i)
		if x < w.lo || x > w.last {
			continue
		}
		c := prg.Convert(&w.cur[i], n)
		if w.ct[i] == 1 {
			c += w.k.final
		}
		val := neg(w.k.party, c, w.mask)
		if dcf {
			val += w.cv[i]
		}
		w.out[x-w.lo] = val & w.mask
	}
}
