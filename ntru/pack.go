package ntru

// packBits writes each value's low `bits` bits, most significant bit first,
// zero-padding the final byte. dst must hold (len(v)*bits+7)/8 bytes.
func packBits(dst []byte, v []uint16, bits uint) {
	var acc uint64 // the low n bits are pending, n < 32 between values
	var n uint
	j := 0
	for _, x := range v {
		acc = acc<<bits | uint64(x)&(1<<bits-1)
		n += bits
		if n >= 32 {
			n -= 32
			w := uint32(acc >> n)
			d := dst[j : j+4 : j+4]
			d[0], d[1], d[2], d[3] = byte(w>>24), byte(w>>16), byte(w>>8), byte(w)
			j += 4
			acc &= 1<<n - 1
		}
	}
	for n >= 8 {
		n -= 8
		dst[j] = byte(acc >> n)
		j++
	}
	if n > 0 {
		dst[j] = byte(acc << (8 - n))
	}
}

// unpackBits reads len(v) values of `bits` bits each, most significant bit
// first. It reports whether the padding bits after the last value are zero.
// src must hold exactly (len(v)*bits+7)/8 bytes.
func unpackBits(v []uint16, src []byte, bits uint) bool {
	var acc uint64 // the low n bits are unread
	var n uint
	j := 0
	need := (len(v)*int(bits) + 7) / 8 // whole words only within these bytes
	for i := range v {
		if n < bits {
			if j+4 <= need {
				s := src[j : j+4 : j+4]
				acc = acc<<32 | uint64(s[0])<<24 | uint64(s[1])<<16 | uint64(s[2])<<8 | uint64(s[3])
				j += 4
				n += 32
			} else {
				for n < bits {
					acc = acc<<8 | uint64(src[j])
					j++
					n += 8
				}
			}
		}
		n -= bits
		v[i] = uint16(acc >> n)
		acc &= 1<<n - 1
	}
	return acc == 0 && j == len(src)
}

// packQ packs coefficients mod q, 11 bits each.
func packQ(p []uint16) []byte {
	out := make([]byte, (len(p)*qBits+7)/8)
	packBits(out, p, qBits)
	return out
}

// packMod4 packs coefficients mod 4, 2 bits each, first coefficient in the
// top bits of the first byte (the "R4" that seeds MGF-TP-1).
func packMod4(p []uint16) []byte {
	out := make([]byte, (len(p)+3)/4)
	full := len(p) / 4
	for j := range out[:full] {
		x := p[4*j : 4*j+4 : 4*j+4]
		out[j] = byte(x[0]&3)<<6 | byte(x[1]&3)<<4 | byte(x[2]&3)<<2 | byte(x[3]&3)
	}
	for i, x := range p[4*full:] {
		out[full] |= byte(x&3) << (6 - 2*uint(i))
	}
	return out
}

// bitsToTrits maps Mbin to trits (0, 1, 2 = −1), reading 3 bits at a time
// most significant first; the value v = 3·t0 + t1 gives the trit pair
// (t0, t1). Only the first n trits are kept; bits after the last complete
// 3-bit group count as zero.
func bitsToTrits(dst []uint8, mbin []byte) {
	n := len(dst)
	var acc uint32
	var nb uint
	j := 0
	for i := 0; i < n; i += 2 {
		for nb < 3 {
			acc <<= 8
			if j < len(mbin) {
				acc |= uint32(mbin[j])
			}
			j++
			nb += 8
		}
		nb -= 3
		v := uint8(acc>>nb) & 7
		acc &= 1<<nb - 1
		dst[i] = v / 3
		if i+1 < n {
			dst[i+1] = v % 3
		}
	}
}

// tritsToBits inverts bitsToTrits for the complete trit pairs of t, writing
// 3 bits per pair into dst (most significant first, as far as dst reaches).
// It returns 1 if any pair is (−1, −1), which no 3-bit value produces, and 0
// otherwise, without branching on the trits.
func tritsToBits(dst []byte, t []uint8) (bad int) {
	for i := range dst {
		dst[i] = 0
	}
	var acc uint32
	var nb uint
	j := 0
	var invalid uint32
	for i := 0; i+1 < len(t); i += 2 {
		v := uint32(t[i])*3 + uint32(t[i+1])
		invalid |= ((v ^ 8) - 1) >> 31 // 1 iff v == 8
		acc = acc<<3 | v&7
		nb += 3
		if nb >= 8 {
			nb -= 8
			if j < len(dst) {
				dst[j] = byte(acc >> nb)
			}
			j++
			acc &= 1<<nb - 1
		}
	}
	if nb > 0 && j < len(dst) {
		dst[j] = byte(acc << (8 - nb))
	}
	return int(invalid)
}
