package kdf

import (
	"encoding/binary"

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

// RootsBatch sets r0[i], r1[i] to Roots(first+i, mode, typ, inBits,
// outBits, alpha[i], beta[i]) for every i < len(alpha); every slice must
// be as long as alpha.
func (p *PRF) RootsBatch(first uint64, mode, typ, inBits, outBits byte, alpha, beta []uint64, r0, r1 []prg.Block) {
	n := len(alpha)
	beta, r0, r1 = beta[:n], r0[:n], r1[:n]
	for i := range n {
		c := first + uint64(i)
		x, y := r0[i][:], r1[i][:]
		header(x, c, mode, typ, inBits, outBits, 0)
		header(y, c, mode, typ, inBits, outBits, 1)
		p.root.Encrypt(x, x)
		p.root.Encrypt(y, y)
		xorPoint(x, alpha[i], beta[i])
		xorPoint(y, alpha[i], beta[i])
		p.root.Encrypt(x, x)
		p.root.Encrypt(y, y)
	}
}

// PairTags writes PairTag(first+i, mode, typ, inBits, outBits, alpha[i],
// beta[i]) to tags[i·TagSize:] for every i < len(alpha); tags must hold
// len(alpha)·TagSize bytes.
func (p *PRF) PairTags(first uint64, mode, typ, inBits, outBits byte, alpha, beta []uint64, tags []byte) {
	n := len(alpha)
	beta, tags = beta[:n], tags[:n*TagSize]
	for i := range n {
		x := tags[i*TagSize : (i+1)*TagSize]
		header(x, first+uint64(i), mode, typ, inBits, outBits, 0)
		p.tag.Encrypt(x, x)
		xorPoint(x, alpha[i], beta[i])
		p.tag.Encrypt(x, x)
	}
}

// DerivedBatch sets alpha[i], alpha0[i], beta[i], beta0[i] to
// Derived(first+i) for every i < len(alpha); every slice must be as long
// as alpha. The values are full 64-bit words for the caller to reduce.
func (p *PRF) DerivedBatch(first uint64, alpha, alpha0, beta, beta0 []uint64) {
	n := len(alpha)
	alpha0, beta, beta0 = alpha0[:n], beta[:n], beta0[:n]
	for i := range n {
		c := first + uint64(i)
		p.block(DomainDerived, c, 0)
		alpha[i] = binary.LittleEndian.Uint64(p.out[:8])
		alpha0[i] = binary.LittleEndian.Uint64(p.out[8:])
		p.block(DomainDerived, c, 1)
		beta[i] = binary.LittleEndian.Uint64(p.out[:8])
		beta0[i] = binary.LittleEndian.Uint64(p.out[8:])
	}
	p.wipe()
}
