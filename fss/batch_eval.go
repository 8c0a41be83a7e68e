package fss

import (
	"encoding/binary"
	"fmt"

	"github.com/kord-fss/kord/internal/prg"
)

// BatchEval evaluates many keys of one shape, each at its own point:
// out[i] = keys[i].Eval(xs[i]). Keys walk their paths level by level
// together; at each level the seeds that go left and those that go right
// are hashed in one kernel call each, so the PRG sees up to GroupKeys
// blocks per call. Keys may belong to either party.
type BatchEval struct {
	p    Params
	s    []prg.Block // current seeds
	in   []prg.Block // gathered seeds of one side
	o, v []prg.Block // seed-lane and value-lane outputs of one side
	idx  []int32     // key slots, left-going first
	t    []uint8
	acc  []uint64 // DCF running value
}

// NewBatchEval returns an evaluator for keys with params p.
func NewBatchEval(p Params) (*BatchEval, error) {
	if err := p.Validate(); err != nil {
		return nil, err
	}
	const g = GroupKeys
	return &BatchEval{
		p: p, s: make([]prg.Block, g), in: make([]prg.Block, g),
		o: make([]prg.Block, g), v: make([]prg.Block, g),
		idx: make([]int32, g), t: make([]uint8, g), acc: make([]uint64, g),
	}, nil
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
	clear(e.s)
	clear(e.in)
	clear(e.o)
	clear(e.v)
	return nil
}

func (e *BatchEval) group(keys []*Key, xs, out []uint64) {
	n := len(keys)
	l, nb := e.p.InBits, e.p.OutBits
	mask := prg.Mask(nb)
	dcf := e.p.Type == DCF
	for i, k := range keys {
		e.s[i], e.t[i], e.acc[i] = k.root, k.party, 0
	}
	for j := 1; j <= l; j++ {
		sh := uint(l - j)
		// Partition: slots going left fill idx from the front, right from
		// the back.
		lo, hi := 0, n
		for i := 0; i < n; i++ {
			if xs[i]>>sh&1 == 0 {
				e.idx[lo] = int32(i)
				lo++
			} else {
				hi--
				e.idx[hi] = int32(i)
			}
		}
		for side := 0; side < 2; side++ {
			a, b := 0, lo
			seedLane, valLane := prg.SeedLeft, prg.ValueLeft
			if side == 1 {
				a, b = lo, n
				seedLane, valLane = prg.SeedRight, prg.ValueRight
			}
			if a == b {
				continue
			}
			for q := a; q < b; q++ {
				e.in[q] = e.s[e.idx[q]]
			}
			if dcf {
				prg.HashPair(seedLane, valLane, e.o[a:b], e.v[a:b], e.in[a:b])
			} else {
				prg.Hash(seedLane, e.o[a:b], e.in[a:b])
			}
			for q := a; q < b; q++ {
				i := e.idx[q]
				k := keys[i]
				t := e.t[i]
				child := &e.o[q]
				lo := binary.LittleEndian.Uint64(child[:8])
				hi := binary.LittleEndian.Uint64(child[8:])
				tcw := k.tL
				if side == 1 {
					tcw = k.tR
				}
				// Branch-free correction: XOR sCW and the bit correction when t = 1.
				tm := -uint64(t)
				cw := &k.seedCW[j-1]
				tc := uint8(lo&1) ^ uint8(tcw>>uint(j-1)&1)&t
				lo = (lo &^ 1) ^ binary.LittleEndian.Uint64(cw[:8])&tm
				hi ^= binary.LittleEndian.Uint64(cw[8:]) & tm
				if dcf {
					c := binary.LittleEndian.Uint64(e.v[q][8:]) + k.valCW[j-1]&tm
					e.acc[i] += neg(k.party, c, mask)
				}
				binary.LittleEndian.PutUint64(e.s[i][:8], lo)
				binary.LittleEndian.PutUint64(e.s[i][8:], hi)
				e.t[i] = tc
			}
		}
	}
	for i, k := range keys {
		c := prg.Convert(&e.s[i], nb)
		if e.t[i] == 1 {
			c += k.final
		}
		out[i] = (e.acc[i] + neg(k.party, c, mask)) & mask
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
