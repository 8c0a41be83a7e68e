package kdf

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/binary"
)

// Derived correlations are bound to their whole description, as key roots
// are to theirs. A module holds k_corr = AES_kr(DomainCorrKey ‖ 0 ‖ 0) ‖
// AES_kr(DomainCorrKey ‖ 0 ‖ 1); for one correlation it derives
//
//	k_d   = HMAC-SHA256(k_corr, "kord/v1/corr/words" ‖ enc(d))
//	tag_d = HMAC-SHA256(k_corr, "kord/v1/corr/tag" ‖ enc(d))[:16]
//
// where enc(d) is the fixed-length encoding of CorrDesc (every field of
// the shape, the part, the weight it refers to, its first counter and
// its block count), and word position i of the correlation's draw is
// word i mod 2 of AES_{k_d}(⌊i/2⌋ as 8 bytes LE ‖ 0…). Two descriptions
// that differ in any field draw under independent keys, so a module
// asked for another shape at the same counters draws no word of the
// honest one; positions are separated by the AES input.

// DomainCorrKey is the PRF domain of the correlation subkey k_corr. The
// domain 0x05 (block i of a correlation was AES_kr(0x05 ‖ counter+i), the
// same for every shape) is retired and never used again.
const DomainCorrKey = 0x07

// Labels of the correlation subkey's two uses.
const (
	LabelCorrWords = "kord/v1/corr/words"
	LabelCorrTag   = "kord/v1/corr/tag"
)

// CorrDesc is the canonical description of one derived correlation (or
// of the weight mask an input correlation refers to).
type CorrDesc struct {
	Counter    uint64 // first counter
	Blocks     uint64 // counters it takes
	Kind       uint8
	Ring       uint8
	Part       uint8
	In, Out    uint32
	K, H, W    uint32
	WeightFrom uint64
}

// corrDescSize is the length of enc(d).
const corrDescSize = 8 + 8 + 3 + 5*4 + 8

// encode writes enc(d): the fields in declaration order, integers LE.
func (d *CorrDesc) encode(b *[corrDescSize]byte) {
	binary.LittleEndian.PutUint64(b[0:], d.Counter)
	binary.LittleEndian.PutUint64(b[8:], d.Blocks)
	b[16], b[17], b[18] = d.Kind, d.Ring, d.Part
	for i, v := range []uint32{d.In, d.Out, d.K, d.H, d.W} {
		binary.LittleEndian.PutUint32(b[19+4*i:], v)
	}
	binary.LittleEndian.PutUint64(b[39:], d.WeightFrom)
}

// corrMAC computes HMAC-SHA256(k_corr, label ‖ enc(d)) into out.
func (p *PRF) corrMAC(label string, d *CorrDesc, out *[32]byte) {
	var e [corrDescSize]byte
	d.encode(&e)
	m := hmac.New(sha256.New, p.corrKey[:])
	m.Write([]byte(label))
	m.Write(e[:])
	m.Sum(out[:0])
	clear(e[:])
}

// CorrWords fills out with words 0…len(out)−1 of the draw of d.
func (p *PRF) CorrWords(d *CorrDesc, out []uint64) {
	var k [32]byte
	defer clear(k[:])
	p.corrMAC(LabelCorrWords, d, &k)
	m, err := newMulti(&k)
	if err != nil { // a 32-byte key is always accepted
		panic("kdf: keying a correlation: " + err.Error())
	}
	const chunk = 4096 // blocks a pass
	if cap(p.scratch) < 16*chunk {
		p.scratch = make([]byte, 16*chunk)
	}
	defer clear(p.scratch)
	n := (len(out) + 1) / 2
	for lo := 0; lo < n; lo += chunk {
		hi := min(n, lo+chunk)
		x := p.scratch[:16*(hi-lo)]
		clear(x)
		for i := lo; i < hi; i++ {
			binary.LittleEndian.PutUint64(x[16*(i-lo):], uint64(i))
		}
		m.encrypt(x)
		for w := 2 * lo; w < min(len(out), 2*hi); w++ {
			out[w] = binary.LittleEndian.Uint64(x[8*(w-2*lo):])
		}
	}
	if s, ok := m.(interface{ wipe() }); ok {
		s.wipe()
	}
}

// CorrTag computes the pair tag of d: both modules compute the same tag
// exactly when they drew the same description, and it tells nothing of
// the words (another HMAC input than k_d's).
func (p *PRF) CorrTag(d *CorrDesc, out *[TagSize]byte) {
	var t [32]byte
	p.corrMAC(LabelCorrTag, d, &t)
	copy(out[:], t[:TagSize])
	clear(t[:])
}
