package kdf

import (
	"encoding/binary"
	"unsafe"

	"github.com/kord-fss/kord/internal/prg"
)

// The batch forms below compute, for keys at the consecutive counters
// first, first+1, …, exactly the blocks of their one-key forms (Roots,
// PairTag, Derived): a bulk request makes all of a batch's blocks in one
// pass, working in the caller's output buffers (no block of the PRF's own
// to move to the heap or wipe per key).

// header writes counter(8, LE) ‖ mode ‖ type ‖ ℓ ‖ n ‖ index ‖ 0 0 0 to x.
func header(x []byte, counter uint64, mode, typ, inBits, outBits, index byte) {
	binary.LittleEndian.PutUint64(x[0:8], counter)
	x[8], x[9], x[10], x[11], x[12] = mode, typ, inBits, outBits, index
	x[13], x[14], x[15] = 0, 0, 0
}

// xorPoint XORs α(8, LE) ‖ β(8, LE) into x.
func xorPoint(x []byte, alpha, beta uint64) {
	binary.LittleEndian.PutUint64(x[0:8], binary.LittleEndian.Uint64(x[0:8])^alpha)
	binary.LittleEndian.PutUint64(x[8:16], binary.LittleEndian.Uint64(x[8:16])^beta)
}

// blocks views blocks as bytes.
func blocks(b []prg.Block) []byte {
	if len(b) == 0 {
		return nil
	}
	return unsafe.Slice(&b[0][0], 16*len(b))
}

// RootsBatch sets r0[i], r1[i] to Roots(first+i, mode, typ, inBits,
// outBits, alpha[i], beta[i]) for every i < len(alpha); every slice must
// be as long as alpha. Each CBC-MAC step runs over all the keys' blocks
// in one multi-block call.
func (p *PRF) RootsBatch(first uint64, mode, typ, inBits, outBits byte, alpha, beta []uint64, r0, r1 []prg.Block) {
	n := len(alpha)
	beta, r0, r1 = beta[:n], r0[:n], r1[:n]
	for i := range n {
		c := first + uint64(i)
		header(r0[i][:], c, mode, typ, inBits, outBits, 0)
		header(r1[i][:], c, mode, typ, inBits, outBits, 1)
	}
	p.rootm.encrypt(blocks(r0))
	p.rootm.encrypt(blocks(r1))
	for i := range n {
		xorPoint(r0[i][:], alpha[i], beta[i])
		xorPoint(r1[i][:], alpha[i], beta[i])
	}
	p.rootm.encrypt(blocks(r0))
	p.rootm.encrypt(blocks(r1))
}

// PairTags writes PairTag(first+i, mode, typ, inBits, outBits, alpha[i],
// beta[i]) to tags[i·TagSize:] for every i < len(alpha); tags must hold
// len(alpha)·TagSize bytes.
func (p *PRF) PairTags(first uint64, mode, typ, inBits, outBits byte, alpha, beta []uint64, tags []byte) {
	n := len(alpha)
	beta, tags = beta[:n], tags[:n*TagSize]
	for i := range n {
		header(tags[i*TagSize:(i+1)*TagSize], first+uint64(i), mode, typ, inBits, outBits, 0)
	}
	p.tagm.encrypt(tags)
	for i := range n {
		xorPoint(tags[i*TagSize:(i+1)*TagSize], alpha[i], beta[i])
	}
	p.tagm.encrypt(tags)
}

// Payload vectors (llama keys with LLAMA's groupSize G ≥ 2). The roots and
// the pair tag of such a key are the same CBC-MACs as for one element,
// with G in byte 13 of the header block (zero for one element, so those
// keys keep their blocks) and the chain run on over the remaining
// elements, two a block:
//
//	header(…, G) · α ‖ β_0 · β_1 ‖ β_2 · … · β_{G-2} ‖ β_{G-1}   (β_G = 0 when G is even)
//
// G in the first block fixes the message's length, so the MAC stays a PRF
// over these inputs; every element of β is bound.

// chainVec runs the CBC-MAC steps after the first over the keys' blocks
// in x (one block per key, already the encrypted header): α ‖ β_0, then
// the remaining elements two a block.
func chainVec(m multi, x []byte, g int, alpha, beta []uint64) {
	n := len(alpha)
	for i := range n {
		xorPoint(x[16*i:16*(i+1)], alpha[i], beta[i*g])
	}
	m.encrypt(x)
	for j := 1; j < g; j += 2 {
		for i := range n {
			var hi uint64
			if j+1 < g {
				hi = beta[i*g+j+1]
			}
			xorPoint(x[16*i:16*(i+1)], beta[i*g+j], hi)
		}
		m.encrypt(x)
	}
}

// RootsBatchG is RootsBatch for keys whose payload β is a vector of g
// elements (beta holds len(alpha)·g, key i's at beta[i·g:]); g = 1 is
// RootsBatch.
func (p *PRF) RootsBatchG(first uint64, mode, typ, inBits, outBits byte, g int, alpha, beta []uint64, r0, r1 []prg.Block) {
	if g <= 1 {
		p.RootsBatch(first, mode, typ, inBits, outBits, alpha, beta, r0, r1)
		return
	}
	n := len(alpha)
	r0, r1 = r0[:n], r1[:n]
	for i := range n {
		c := first + uint64(i)
		header(r0[i][:], c, mode, typ, inBits, outBits, 0)
		header(r1[i][:], c, mode, typ, inBits, outBits, 1)
		r0[i][13], r1[i][13] = byte(g), byte(g)
	}
	p.rootm.encrypt(blocks(r0))
	p.rootm.encrypt(blocks(r1))
	chainVec(p.rootm, blocks(r0), g, alpha, beta)
	chainVec(p.rootm, blocks(r1), g, alpha, beta)
}

// PairTagsG is PairTags for keys whose payload β is a vector of g
// elements (as RootsBatchG); g = 1 is PairTags.
func (p *PRF) PairTagsG(first uint64, mode, typ, inBits, outBits byte, g int, alpha, beta []uint64, tags []byte) {
	if g <= 1 {
		p.PairTags(first, mode, typ, inBits, outBits, alpha, beta, tags)
		return
	}
	n := len(alpha)
	tags = tags[:n*TagSize]
	for i := range n {
		t := tags[i*TagSize : (i+1)*TagSize]
		header(t, first+uint64(i), mode, typ, inBits, outBits, 0)
		t[13] = byte(g)
	}
	p.tagm.encrypt(tags)
	chainVec(p.tagm, tags, g, alpha, beta)
}
