package ntru

// blindingIndices derives the blinding polynomial r from sData with IGF-2:
// c-bit candidates are read from the hash stream of sData, values at or
// above 2^c − (2^c mod N) are rejected, and the index is the value mod N.
// The first dr distinct indices get +1, the next dr distinct ones get −1.
// The returned slice holds the dr plus indices followed by the dr minus
// indices, in generation order; dense holds r as trits (0, 1, 2 = −1).
func (p *params) blindingIndices(sData []byte) (idx []uint16, dense []uint8) {
	br := bitReader{src: newHashStream(sData)}
	limit := uint32(1)<<p.c - (uint32(1)<<p.c)%uint32(p.n)
	dense = make([]uint8, p.n)
	idx = make([]uint16, 0, 2*p.dr)
	for len(idx) < 2*p.dr {
		v := br.read(p.c)
		if v >= limit {
			continue
		}
		i := v % uint32(p.n)
		if dense[i] != 0 {
			continue
		}
		dense[i] = 1 + uint8(len(idx)/p.dr) // +1 first, then −1
		idx = append(idx, uint16(i))
	}
	return idx, dense
}

// mask derives the mask trits from the packed R mod 4 with MGF-TP-1: each
// hash-stream byte below 243 gives five trits, least significant base-3
// digit first, the digit 2 meaning −1; bytes from 243 up are skipped.
// Trits are returned as 0, 1 or 2 (= −1).
func (p *params) mask(r4 []byte) []uint8 {
	hs := newHashStream(r4)
	out := make([]uint8, p.n)
	for i := 0; i < p.n; {
		b := hs.nextByte()
		if b >= 243 {
			continue
		}
		for k := 0; k < 5 && i < p.n; k++ {
			out[i] = b % 3
			b /= 3
			i++
		}
	}
	return out
}
