package fss

import (
	"encoding/binary"
	"fmt"
	"sync"

	"github.com/kord-fss/kord/internal/prg"
)

// Eval returns this party's share (one bit) of f(x); x must be below 2^ℓ.
func (k *XorKey) Eval(x uint64) (uint8, error) {
	if err := checkX(x, k.inBits); err != nil {
		return 0, err
	}
	nu := xorNu(k.inBits)
	d := len(k.seedCW)
	s, t := k.root, k.party
	var buf [1]prg.Block
	for j := 1; j <= d; j++ {
		xj := uint8(x >> uint(k.inBits-j) & 1)
		lane, tcw := prg.SeedLeft, k.tL
		if xj == 1 {
			lane, tcw = prg.SeedRight, k.tR
		}
		in := [1]prg.Block{s}
		prg.Hash(lane, buf[:], in[:])
		child := buf[0]
		tc := prg.SplitControl(&child)
		if t == 1 {
			child = xorBlock(child, k.seedCW[j-1])
			tc ^= uint8(tcw >> uint(j-1) & 1)
		}
		s, t = child, tc
	}
	in := [1]prg.Block{s}
	prg.Hash(prg.ValueLeft, buf[:], in[:])
	w := buf[0]
	if t == 1 {
		w = xorBlock(w, k.leafCW)
	}
	pos := x & prg.Mask(nu)
	return w[pos/8] >> (pos % 8) & 1, nil
}

// EvalAll writes all 2^d leaf words into out (len(out) must be 2^d; d ≤ 40
// in practice). Output bit x is bit x mod 8 of byte x/8 of the leaf words
// laid end to end: bit x%128 of out[x/128]. When ℓ < 7 the bits at and above
// 2^ℓ are zero.
func (k *XorKey) EvalAll(out []Block) error {
	d := len(k.seedCW)
	if d >= 48 || uint64(len(out)) != 1<<uint(d) {
		return fmt.Errorf("fss: EvalAll of a type 0x03 key with ℓ = %d needs 2^%d leaf words, got %d", k.inBits, d, len(out))
	}
	return k.EvalLeaves(0, out)
}

// EvalLeaves writes the leaf words lo .. lo+len(out)-1 into out. Leaf word
// i holds the output bits of x = 128·i .. 128·i+127 (for ℓ ≥ 7).
func (k *XorKey) EvalLeaves(lo uint64, out []Block) error {
	d := len(k.seedCW)
	n := uint64(len(out))
	if n == 0 {
		return nil
	}
	if lo+n < lo || lo+n > 1<<uint(min(d, 63)) {
		return fmt.Errorf("fss: leaf words [%d, %d) are beyond the key's 2^%d", lo, lo+n, d)
	}
	sc := getScratch()
	defer putScratch(sc)
	k.walk(sc, 0, 0, k.root, k.party, lo, lo+n, out)
	if k.inBits < XorLeafBits {
		maskUnused(&out[0], k.inBits)
	}
	return nil
}

// maskUnused clears the output bits at and above 2^ℓ of the only leaf word
// of a key with ℓ < 7.
func maskUnused(b *prg.Block, inBits int) {
	used := 1 << uint(inBits) // bits 0..used-1 are meaningful
	for i := range b {
		lo := i * 8
		switch {
		case lo >= used:
			b[i] = 0
		case lo+8 > used:
			b[i] &= byte(1<<uint(used-lo) - 1)
		}
	}
}

// maxBFS bounds the subtree expanded breadth first in one go (2^16 leaves).
const maxBFS = 16

func (k *XorKey) walk(sc *scratch, depth int, prefix uint64, s prg.Block, t uint8, lo, hi uint64, out []prg.Block) {
	d := len(k.seedCW)
	rem := d - depth
	first := prefix << uint(rem)
	size := uint64(1) << uint(rem)
	if first >= hi || first+size <= lo {
		return
	}
	if first >= lo && first+size <= hi && rem <= maxBFS {
		k.expand(sc, s, t, depth, d, out[first-lo:first-lo+size], true)
		return
	}
	in := [1]prg.Block{s}
	var L, R [1]prg.Block
	prg.ExpandSeeds(L[:], R[:], in[:])
	tl, tr := prg.SplitControl(&L[0]), prg.SplitControl(&R[0])
	if t == 1 {
		L[0] = xorBlock(L[0], k.seedCW[depth])
		R[0] = xorBlock(R[0], k.seedCW[depth])
		tl ^= uint8(k.tL >> uint(depth) & 1)
		tr ^= uint8(k.tR >> uint(depth) & 1)
	}
	k.walk(sc, depth+1, prefix<<1, L[0], tl, lo, hi, out)
	k.walk(sc, depth+1, prefix<<1|1, R[0], tr, lo, hi, out)
}

// chunk is how many parents one PRG call expands.
const chunk = 512

type scratch struct {
	ts, nts    []uint8
	tmpL, tmpR [chunk]prg.Block
}

var scratchPool = sync.Pool{New: func() any { return new(scratch) }}

func getScratch() *scratch { return scratchPool.Get().(*scratch) }

func putScratch(sc *scratch) {
	clear(sc.tmpL[:])
	clear(sc.tmpR[:])
	scratchPool.Put(sc)
}

// expand expands the node (s, t) at depth `from` breadth first down to
// depth `to` in place in out (len 2^(to-from)); with leaf set, it then turns
// the seeds into corrected leaf words. Otherwise out holds the seeds and
// sc.ts their control bits.
func (k *XorKey) expand(sc *scratch, s prg.Block, t uint8, from, to int, out []prg.Block, leaf bool) {
	n := len(out)
	if cap(sc.ts) < n {
		sc.ts = make([]uint8, n)
		sc.nts = make([]uint8, n)
	}
	ts, nts := sc.ts[:n], sc.nts[:n]
	out[0], ts[0] = s, t
	w := 1
	for lev := from; lev < to; lev++ {
		cw := &k.seedCW[lev]
		cwLo, cwHi := binary.LittleEndian.Uint64(cw[:8]), binary.LittleEndian.Uint64(cw[8:])
		tlc, trc := uint8(k.tL>>uint(lev)&1), uint8(k.tR>>uint(lev)&1)
		// Children of node i go to 2i and 2i+1, so walking the level in
		// chunks from its end backwards never overwrites a seed not yet
		// expanded (each chunk's seeds are consumed by the PRG call before
		// its children are written). Control bits ping-pong.
		for hi := w; hi > 0; {
			m := min(chunk, hi)
			a := hi - m
			L, R := sc.tmpL[:m], sc.tmpR[:m]
			prg.ExpandSeeds(L, R, out[a:hi])
			tp := ts[a:hi]
			dst := out[2*a : 2*hi]
			nt := nts[2*a : 2*hi]
			for i := range m {
				t := tp[i]
				mask := -uint64(t)
				lLo := binary.LittleEndian.Uint64(L[i][:8])
				lHi := binary.LittleEndian.Uint64(L[i][8:])
				rLo := binary.LittleEndian.Uint64(R[i][:8])
				rHi := binary.LittleEndian.Uint64(R[i][8:])
				nt[2*i] = uint8(lLo&1) ^ (tlc & t)
				nt[2*i+1] = uint8(rLo&1) ^ (trc & t)
				d := dst[2*i : 2*i+2]
				binary.LittleEndian.PutUint64(d[0][:8], (lLo&^1)^(cwLo&mask))
				binary.LittleEndian.PutUint64(d[0][8:], lHi^(cwHi&mask))
				binary.LittleEndian.PutUint64(d[1][:8], (rLo&^1)^(cwLo&mask))
				binary.LittleEndian.PutUint64(d[1][8:], rHi^(cwHi&mask))
			}
			hi = a
		}
		w *= 2
		ts, nts = nts, ts
	}
	sc.ts, sc.nts = ts[:cap(ts)], nts[:cap(nts)]
	if !leaf {
		return
	}
	prg.Hash(prg.ValueLeft, out, out)
	cwLo := binary.LittleEndian.Uint64(k.leafCW[:8])
	cwHi := binary.LittleEndian.Uint64(k.leafCW[8:])
	ts = ts[:len(out)]
	for i := range out {
		mask := -uint64(ts[i])
		o := &out[i]
		binary.LittleEndian.PutUint64(o[:8], binary.LittleEndian.Uint64(o[:8])^(cwLo&mask))
		binary.LittleEndian.PutUint64(o[8:], binary.LittleEndian.Uint64(o[8:])^(cwHi&mask))
	}
}

// XorNode is an inner node of a type-0x03 key's tree: its seed and control
// bit. A batched evaluator computes a frontier of nodes once and expands
// each node's subtree when it needs those leaves (cache blocking).
type XorNode struct {
	seed  prg.Block
	t     uint8
	depth uint8
}

// Frontier returns the 2^depth nodes at the given depth (0 ≤ depth ≤ d, and
// depth ≤ 24), in order.
func (k *XorKey) Frontier(depth int) ([]XorNode, error) {
	if depth < 0 || depth > len(k.seedCW) || depth > 24 {
		return nil, fmt.Errorf("fss: frontier depth %d outside 0..min(d = %d, 24)", depth, len(k.seedCW))
	}
	seeds := make([]prg.Block, 1<<uint(depth))
	sc := getScratch()
	defer putScratch(sc)
	k.expand(sc, k.root, k.party, 0, depth, seeds, false)
	nodes := make([]XorNode, len(seeds))
	for i := range nodes {
		nodes[i] = XorNode{seed: seeds[i], t: sc.ts[i], depth: uint8(depth)}
	}
	clear(seeds)
	return nodes, nil
}

// ExpandNode writes the 2^(d-depth) leaf words below node n (a node of this
// key's Frontier) into out.
func (k *XorKey) ExpandNode(n *XorNode, out []Block) error {
	rem := len(k.seedCW) - int(n.depth)
	if rem < 0 || rem > maxBFS || len(out) != 1<<uint(rem) {
		return fmt.Errorf("fss: node at depth %d of a key with d = %d needs 2^%d leaf words, got %d", n.depth, len(k.seedCW), rem, len(out))
	}
	sc := getScratch()
	k.expand(sc, n.seed, n.t, int(n.depth), len(k.seedCW), out, true)
	putScratch(sc)
	if k.inBits < XorLeafBits {
		maskUnused(&out[0], k.inBits)
	}
	return nil
}
