package kdf

import (
	"encoding/binary"
	"fmt"
)

// DomainTuple is the PRF domain of preprocessing tuples (Beaver triples,
// squares, random bits, matrix triples): each request's words are drawn
// under a key bound to its whole description,
//
//	D     = DomainTuple ‖ kind ‖ ring ‖ part ‖ 0⁴ ‖ first(8)      (block 0)
//	        blocks(8) ‖ 0⁸                                       (block 1)
//	        in(4) ‖ out(4) ‖ k(4) ‖ h(4)                         (block 2)
//	        w(4) ‖ 0¹²                                           (block 3)
//	k_d   = CBC-MAC_kr(D with byte 4 = 0) ‖ CBC-MAC_kr(D with byte 4 = 1)
//	word block j of section s = AES_{k_d}(s ‖ j(8, LE) ‖ 0⁷)
//
// (all integers little-endian). D has a fixed length, so CBC-MAC on it is
// a PRF; two requests that differ in any field, or sections and positions
// within one request, never share an input block. Both modules compute
// the same words.
const DomainTuple = 0x06

// TupleDesc is the description a tuple request's words are bound to.
type TupleDesc struct {
	Kind, Ring, Part byte
	First, Blocks    uint64
	In, Out, K, H, W uint32
}

// tupleKey computes k_d for d.
func (p *PRF) tupleKey(d *TupleDesc, key *[32]byte) {
	var x [64]byte
	x[0], x[1], x[2], x[3] = DomainTuple, d.Kind, d.Ring, d.Part
	binary.LittleEndian.PutUint64(x[8:], d.First)
	binary.LittleEndian.PutUint64(x[16:], d.Blocks)
	binary.LittleEndian.PutUint32(x[32:], d.In)
	binary.LittleEndian.PutUint32(x[36:], d.Out)
	binary.LittleEndian.PutUint32(x[40:], d.K)
	binary.LittleEndian.PutUint32(x[44:], d.H)
	binary.LittleEndian.PutUint32(x[48:], d.W)
	var c [16]byte
	for half := range 2 {
		x[4] = byte(half)
		clear(c[:])
		for blk := range 4 {
			for i := range c {
				c[i] ^= x[16*blk+i]
			}
			p.b.Encrypt(c[:], c[:])
		}
		copy(key[16*half:], c[:])
	}
	clear(c[:])
}

// TupleWords fills each out[s] with the words of section s (s < 256) of
// the tuple request d: two little-endian words per block, block j of
// section s being AES_{k_d}(s ‖ j ‖ 0…).
func (p *PRF) TupleWords(d *TupleDesc, out ...[]uint64) error {
	if len(out) > 256 {
		return fmt.Errorf("kdf: %d tuple sections, at most 256", len(out))
	}
	var key [32]byte
	defer clear(key[:])
	p.tupleKey(d, &key)
	m, err := newMulti(&key)
	if err != nil {
		return fmt.Errorf("kdf: keying a tuple request: %w", err)
	}
	for s, words := range out {
		n := (len(words) + 1) / 2
		if cap(p.scratch) < 16*n {
			p.scratch = make([]byte, 16*n)
		}
		x := p.scratch[:16*n]
		for j := range n {
			b := x[16*j : 16*(j+1)]
			clear(b)
			b[0] = byte(s)
			binary.LittleEndian.PutUint64(b[1:9], uint64(j))
		}
		m.encrypt(x)
		for i := range words {
			words[i] = binary.LittleEndian.Uint64(x[8*i:])
		}
		clear(x)
	}
	return nil
}
