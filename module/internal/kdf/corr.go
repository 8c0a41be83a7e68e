package kdf

import "encoding/binary"

// DomainCorr is the PRF domain of derived multiplication correlations:
// block i of a correlation at counters first… is AES_kr(DomainCorr ‖
// first+i ‖ 0 ‖ 0…). It is disjoint from the derived-key domain, so a
// correlation's masks never equal a key's α.
const DomainCorr = 0x05

// CorrWords fills out with the words of the correlation blocks at
// counters first, first+1, …: two little-endian 64-bit words per block,
// ⌈len(out)/2⌉ blocks. Both modules of a pair compute the same words.
func (p *PRF) CorrWords(first uint64, out []uint64) {
	n := (len(out) + 1) / 2
	if cap(p.scratch) < 16*n {
		p.scratch = make([]byte, 16*n)
	}
	x := p.scratch[:16*n]
	defer clear(x)
	for i := range n {
		b := x[16*i : 16*(i+1)]
		clear(b)
		b[0] = DomainCorr
		binary.LittleEndian.PutUint64(b[1:9], first+uint64(i))
	}
	p.bm.encrypt(x)
	for i := range out {
		out[i] = binary.LittleEndian.Uint64(x[8*i:])
	}
}
