package fss

import (
	"encoding/binary"
	"fmt"

	"github.com/kord-fss/kord/internal/prg"
)

// subLevels is how many of the last levels EvalAllBatched expands per
// subtree: 2^10 leaves, whose seeds (16 KiB) stay in L1/L2 while the
// subtree is expanded breadth first.
const subLevels = 10

// expandChunk is how many parents one kernel call expands.
const expandChunk = 256

// EvalAllBatched is EvalAll on the batched kernels: out[x] is this party's
// share of f(x) for every x in [0, 2^ℓ), and out must have 2^ℓ entries
// (ℓ ≤ 28). The tree is expanded breadth first down to 2^(ℓ-10) nodes,
// then one 2^10-leaf subtree at a time, breadth first, so that every PRG
// call hashes up to 256 seeds under both lanes; the per-node corrections
// are branch-free word operations. Results equal EvalAll's.
func (k *Key) EvalAllBatched(out []uint64) error {
	l := k.p.InBits
	if l > 28 || len(out) != 1<<uint(l) {
		return fmt.Errorf("fss: EvalAllBatched needs ℓ ≤ 28 and an output of 2^ℓ entries, got ℓ = %d and %d", l, len(out))
	}
	if k.p.Type == DPF {
		k.evalAllTree(out)
		return nil
	}
	sub := min(l, subLevels)
	top := l - sub
	e := newFullEval(k, 1<<uint(max(top, sub)))
	// Breadth first over the top levels.
	e.cur[0], e.ct[0], e.cv[0] = k.root, k.party, 0
	width := 1
	for d := 0; d < top; d++ {
		e.level(width, d, nil)
		width *= 2
		e.swap()
	}
	// Then each subtree below a top node.
	topS := append([]prg.Block(nil), e.cur[:width]...)
	topT := append([]uint8(nil), e.ct[:width]...)
	topV := append([]uint64(nil), e.cv[:width]...)
	leaves := 1 << uint(sub)
	for node := 0; node < width; node++ {
		e.cur[0], e.ct[0], e.cv[0] = topS[node], topT[node], topV[node]
		w := 1
		for d := top; d < l; d++ {
			if d == l-1 {
				e.level(w, d, out[node*leaves:(node+1)*leaves])
				break
			}
			e.level(w, d, nil)
			w *= 2
			e.swap()
		}
	}
	clear(topS)
	e.wipe()
	return nil
}

type fullEval struct {
	k                *Key
	mask             uint64
	cur, nxt         []prg.Block
	ct, nt           []uint8
	cv, nv           []uint64
	tl, tr, tvl, tvr []prg.Block
}

func newFullEval(k *Key, width int) *fullEval {
	e := &fullEval{
		k: k, mask: prg.Mask(k.p.OutBits),
		cur: make([]prg.Block, width), nxt: make([]prg.Block, width),
		ct: make([]uint8, width), nt: make([]uint8, width),
		cv: make([]uint64, width), nv: make([]uint64, width),
		tl: make([]prg.Block, expandChunk), tr: make([]prg.Block, expandChunk),
	}
	if k.p.Type == DCF {
		e.tvl, e.tvr = make([]prg.Block, expandChunk), make([]prg.Block, expandChunk)
	}
	return e
}

func (e *fullEval) swap() {
	e.cur, e.nxt = e.nxt, e.cur
	e.ct, e.nt = e.nt, e.ct
	e.cv, e.nv = e.nv, e.cv
}

func (e *fullEval) wipe() {
	clear(e.cur)
	clear(e.nxt)
	clear(e.tl)
	clear(e.tr)
	clear(e.tvl)
	clear(e.tvr)
}

// level expands the `width` nodes in cur at depth d into their 2·width
// children in nxt, or, when leaf is not nil, into the outputs leaf[0:2·width].
func (e *fullEval) level(width, d int, leaf []uint64) {
	k := e.k
	b := k.party
	mask := e.mask
	dcf := k.p.Type == DCF
	cw := &k.seedCW[d]
	cwlo, cwhi := binary.LittleEndian.Uint64(cw[:8]), binary.LittleEndian.Uint64(cw[8:])
	tlcw, trcw := uint8(k.tL>>uint(d)&1), uint8(k.tR>>uint(d)&1)
	var vcw uint64
	if dcf {
		vcw = k.valCW[d]
	}
	final := k.final
	for base := 0; base < width; base += expandChunk {
		m := min(expandChunk, width-base)
		in := e.cur[base : base+m]
		L, R := e.tl[:m], e.tr[:m]
		if dcf {
			prg.ExpandValues(e.tvl[:m], e.tvr[:m], in)
		}
		prg.ExpandSeeds(L, R, in)
		ct := e.ct[base : base+m]
		for i := range L {
			t := ct[i]
			tm := -uint64(t)
			llo, lhi := binary.LittleEndian.Uint64(L[i][:8]), binary.LittleEndian.Uint64(L[i][8:])
			rlo, rhi := binary.LittleEndian.Uint64(R[i][:8]), binary.LittleEndian.Uint64(R[i][8:])
			tL := uint8(llo&1) ^ tlcw&t
			tR := uint8(rlo&1) ^ trcw&t
			lhi ^= cwhi & tm
			rhi ^= cwhi & tm
			var vl, vr uint64
			if dcf {
				pv := e.cv[base+i]
				cl := binary.LittleEndian.Uint64(e.tvl[i][8:]) + vcw&tm
				cr := binary.LittleEndian.Uint64(e.tvr[i][8:]) + vcw&tm
				vl, vr = pv+neg(b, cl, mask), pv+neg(b, cr, mask)
			}
			p := 2 * (base + i)
			if leaf != nil {
				leaf[p] = (vl + neg(b, lhi+final&-uint64(tL), mask)) & mask
				leaf[p+1] = (vr + neg(b, rhi+final&-uint64(tR), mask)) & mask
				continue
			}
			nl, nr := &e.nxt[p], &e.nxt[p+1]
			binary.LittleEndian.PutUint64(nl[:8], llo&^1^cwlo&tm)
			binary.LittleEndian.PutUint64(nl[8:], lhi)
			binary.LittleEndian.PutUint64(nr[:8], rlo&^1^cwlo&tm)
			binary.LittleEndian.PutUint64(nr[8:], rhi)
			e.nt[p], e.nt[p+1] = tL, tR
			if dcf {
				e.nv[p], e.nv[p+1] = vl, vr
			}
		}
	}
}

// evalAllTree is the DPF full-domain evaluation on prg.ExpandTree: nodes
// are folded (control bit in bit 0 of the seed), so a row of the tree is
// one kernel call with the corrections fused in. The top of the tree is
// expanded row by row down to 2^(ℓ-treeSub) nodes; below that, chunks of
// treeChunk adjacent nodes are expanded together down to their leaves, so
// that every call past the first few rows carries at least eight parents
// and the working rows (≤ 16 KiB each) stay in cache. The last level goes
// straight to the output words.
func (k *Key) evalAllTree(out []uint64) {
	const treeSub, treeChunk = 8, 8
	l := k.p.InBits
	cw := make([][2]prg.Block, l)
	for d := range cw {
		cw[d][0], cw[d][1] = k.seedCW[d], k.seedCW[d]
		cw[d][0][0] |= uint8(k.tL >> uint(d) & 1)
		cw[d][1][0] |= uint8(k.tR >> uint(d) & 1)
	}
	mask := prg.Mask(k.p.OutBits)
	neg1 := k.party == 1
	// Level 1 from the root, which is used as given (its bit 0 is seed, not
	// control bit): raw children, folded with the party's control bit.
	var L, R [1]prg.Block
	prg.ExpandSeeds(L[:], R[:], []prg.Block{k.root})
	first := [2]prg.Block{L[0], R[0]}
	if k.party == 1 {
		for i := range first[0] {
			first[0][i] ^= cw[0][0][i]
			first[1][i] ^= cw[0][1][i]
		}
	}
	if l == 1 {
		for i := range first {
			lo := binary.LittleEndian.Uint64(first[i][:8])
			hi := binary.LittleEndian.Uint64(first[i][8:])
			out[i] = neg(k.party, hi+k.final&-(lo&1), mask)
		}
		return
	}
	// Rows of the top part: row d holds 2^d nodes.
	d := 1
	topW := 1 << uint(max(l-treeSub, 1))
	rowA, rowB := make([]prg.Block, topW), make([]prg.Block, topW)
	row := rowA[:2]
	copy(row, first[:])
	for ; len(row) < topW; d++ {
		prg.ExpandTree(rowB[:2*len(row)], row, &cw[d][0], &cw[d][1])
		rowA, rowB = rowB, rowA
		row = rowA[:2*len(row)]
	}
	// Chunks of adjacent nodes down to their leaves.
	rem := l - d // levels below the row, ≥ 1
	c := min(treeChunk, len(row))
	bufW := c << uint(rem-1)
	bufA, bufB := make([]prg.Block, bufW), make([]prg.Block, bufW)
	for base := 0; base < len(row); base += c {
		cur := row[base : base+c]
		for e := d; e < l-1; e++ {
			prg.ExpandTree(bufB[:2*len(cur)], cur, &cw[e][0], &cw[e][1])
			bufA, bufB = bufB, bufA
			cur = bufA[:2*len(cur)]
		}
		prg.ExpandTreeLeaves(out[base<<uint(rem):(base+c)<<uint(rem)], cur, &cw[l-1][0], &cw[l-1][1], k.final, neg1, mask)
	}
	clear(rowA)
	clear(rowB)
	clear(bufA)
	clear(bufB)
}
