package ntru

import "encoding/binary"

// The products work on four 16-bit lanes per uint64 ("SWAR"): coefficients
// are kept below 2^11 = q, so up to 31 of them can be added to a lane that
// is itself below 2^11 before it could overflow 16 bits; the lanes are
// reduced mod q by masking with lanes11 before that happens. Reading four
// consecutive coefficients of a rotation of a is one unaligned 64-bit load
// from a "extended" little-endian image of a, in which coefficient i holds
// a[i mod n], so coefficient k of x^s·a sits at index k − s + n.

const lanes11 = 0x07FF07FF07FF07FF

func le64(b []byte) uint64 { return binary.LittleEndian.Uint64(b) }

// words is the number of uint64 words holding n coefficients.
func words(n int) int { return (n + 3) / 4 }

// extLen is the number of coefficients in an extended image for n.
func extLen(n int) int { return n + 4*words(n) }

// extend writes the extended image of a (len n) reduced mod q into ext and,
// if neg is non-nil, the image of −a as values q − a_i in [1, q].
func extend(ext, neg []byte, a []uint16) {
	n := len(a)
	for i := 0; i < extLen(n); i++ {
		v := a[i%n] & qMask
		binary.LittleEndian.PutUint16(ext[2*i:], v)
		if neg != nil {
			binary.LittleEndian.PutUint16(neg[2*i:], q-v)
		}
	}
}

// unlane writes the n coefficients held in acc to c, reduced mod q.
func unlane(c []uint16, acc []uint64, add uint16) {
	for k := range c {
		c[k] = (uint16(acc[k/4]>>(16*uint(k%4))) + add) & qMask
	}
}

// sparseMul computes c = t·a mod q for a ternary t given by its +1 indices
// and −1 indices, using the extended images ext of a and neg of −a.
//
// The loads' addresses depend on the indices: use it only where the
// indices are not secret, or where that leak is accepted (encryption, key
// generation). Indices must be below n.
func sparseMul(c []uint16, ext, neg []byte, plus, minus []uint16) {
	n := len(c)
	w := words(n)
	acc := make([]uint64, w)
	srcs := make([][]byte, 0, len(plus)+len(minus))
	for _, s := range plus {
		o := 2 * (n - int(s))
		srcs = append(srcs, ext[o:o+8*w])
	}
	for _, s := range minus {
		o := 2 * (n - int(s))
		srcs = append(srcs, neg[o:o+8*w])
	}
	// Each term adds at most q to a lane; 28 terms on top of a lane below q
	// stay below 2^16.
	for len(srcs) > 0 {
		chunk := min(28, len(srcs))
		k := 0
		for ; k+4 <= chunk; k += 4 {
			add4(acc, srcs[k], srcs[k+1], srcs[k+2], srcs[k+3])
		}
		for ; k < chunk; k++ {
			add1(acc, srcs[k])
		}
		srcs = srcs[chunk:]
		for i := range acc {
			acc[i] &= lanes11
		}
	}
	unlane(c, acc, 0)
}

func add4(acc []uint64, s0, s1, s2, s3 []byte) {
	n := 8 * len(acc)
	s0, s1, s2, s3 = s0[:n], s1[:n], s2[:n], s3[:n]
	i := 0
	for ; i+2 <= len(acc); i += 2 {
		o := 8 * i
		acc[i] += le64(s0[o:o+8]) + le64(s1[o:o+8]) + le64(s2[o:o+8]) + le64(s3[o:o+8])
		acc[i+1] += le64(s0[o+8:o+16]) + le64(s1[o+8:o+16]) + le64(s2[o+8:o+16]) + le64(s3[o+8:o+16])
	}
	for ; i < len(acc); i++ {
		o := 8 * i
		acc[i] += le64(s0[o:o+8]) + le64(s1[o:o+8]) + le64(s2[o:o+8]) + le64(s3[o:o+8])
	}
}

func add1(acc []uint64, s []byte) {
	s = s[:8*len(acc)]
	for i := range acc {
		acc[i] += le64(s[8*i : 8*i+8])
	}
}

// ternaryMulCT computes c = t·a mod q for a secret ternary t given densely
// as trits (0, 1, 2 = −1) and a public a given by its extended image ext.
//
// It is constant time with respect to t: every coefficient of t is visited,
// the loads' addresses depend only on the loop counters, and t enters only
// through masks. A −1 coefficient adds a's rotation with each lane's 11 bits
// complemented, (q − 1 − x), and the missing +1 per −1 coefficient, a
// public count (dr or df), is added at the end.
func ternaryMulCT(c []uint16, ext []byte, t []uint8) {
	n := len(c)
	w := words(n)
	xs := make([]uint64, n)
	ms := make([]uint64, n)
	var negs uint16
	for j, tj := range t[:n] {
		neg := uint64(tj>>1) & 1
		xs[j] = -neg & lanes11
		ms[j] = -(uint64(tj|tj>>1) & 1)
		negs += uint16(neg)
	}
	acc := make([]uint64, w)
	i := 0
	for ; i+4 <= w; i += 4 {
		var a0, a1, a2, a3 uint64
		base := 2 * (4*i + n)
		for j0 := 0; j0 < n; j0 += 31 {
			j1 := min(j0+31, n)
			for j := j0; j < j1; j++ {
				o := base - 2*j
				x, m := xs[j], ms[j]
				s := ext[o : o+32]
				a0 += (le64(s[0:8]) ^ x) & m
				a1 += (le64(s[8:16]) ^ x) & m
				a2 += (le64(s[16:24]) ^ x) & m
				a3 += (le64(s[24:32]) ^ x) & m
			}
			a0 &= lanes11
			a1 &= lanes11
			a2 &= lanes11
			a3 &= lanes11
		}
		acc[i], acc[i+1], acc[i+2], acc[i+3] = a0, a1, a2, a3
	}
	for ; i < w; i++ {
		var a0 uint64
		base := 2 * (4*i + n)
		for j0 := 0; j0 < n; j0 += 31 {
			j1 := min(j0+31, n)
			for j := j0; j < j1; j++ {
				o := base - 2*j
				a0 += (le64(ext[o:o+8]) ^ xs[j]) & ms[j]
			}
			a0 &= lanes11
		}
		acc[i] = a0
	}
	unlane(c, acc, negs)
}

// denseMul computes c = a·b mod (x^n − 1) with 16-bit wrap-around
// arithmetic (so the result is correct mod any power of two up to 2^16).
// It is a plain schoolbook product, used only in key generation.
func denseMul(c, a, b []uint16) {
	n := len(a)
	t := make([]uint16, 2*n)
	for i, ai := range a {
		row := t[i : i+n]
		for j, bj := range b[:n] {
			row[j] += ai * bj
		}
	}
	for k := 0; k < n; k++ {
		c[k] = t[k] + t[k+n]
	}
}
