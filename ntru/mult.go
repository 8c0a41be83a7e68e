package ntru

// The products work on four 16-bit lanes per uint64 ("SWAR"). Coefficients
// are kept below 2^11 = q, so up to 31 of them can be added to a lane that
// is itself below 2^11 before it could overflow 16 bits; the lanes are
// reduced mod q by masking with lanes11 before that happens.
//
// Reading four consecutive coefficients of a rotation x^s·a is one aligned
// word load from a laneImage: four copies of a, copy r holding in word x
// the coefficients a[(4x + r + l) mod n], l = 0…3. Coefficient k of x^s·a
// is a[(k + o) mod n] with o = n − s, so the words of x^s·a are the run of
// copy o mod 4 starting at word o / 4.

const lanes11 = 0x07FF07FF07FF07FF

// words is the number of uint64 words holding n coefficients.
func words(n int) int { return (n + 3) / 4 }

// laneImage is the four-copy image of a polynomial described above.
type laneImage [4][]uint64

// newLaneImage builds the image of a (reduced mod q) or, if neg, of −a
// with each coefficient as q − a_i in [1, q].
func newLaneImage(a []uint16, neg bool) *laneImage {
	n := len(a)
	cw := 2*words(n) + 1
	ext := make([]uint64, 4*cw+3) // ext[i] = a[i mod n] (or q − that)
	for i, k := 0, 0; i < len(ext); i++ {
		c := a[k] & qMask
		if neg {
			c = q - c
		}
		ext[i] = uint64(c)
		if k++; k == n {
			k = 0
		}
	}
	var img laneImage
	for r := range img {
		cp := make([]uint64, cw)
		for x := range cp {
			e := ext[4*x+r : 4*x+r+4]
			cp[x] = e[0] | e[1]<<16 | e[2]<<32 | e[3]<<48
		}
		img[r] = cp
	}
	return &img
}

// rot returns the words of x^(n−o)·a, for 1 <= o <= n, as w words.
func (img *laneImage) rot(o, w int) []uint64 {
	return img[o&3][o>>2 : o>>2+w]
}

// unlane writes the n coefficients held in acc to c, adding add, mod q.
func unlane(c []uint16, acc []uint64, add uint16) {
	for k := range c {
		c[k] = (uint16(acc[k/4]>>(16*uint(k%4))) + add) & qMask
	}
}

func reduceLanes(acc []uint64) {
	for i := range acc {
		acc[i] &= lanes11
	}
}

// sparseMul computes c = t·a mod q for a ternary t given by its +1 indices
// and −1 indices (each below n), from the images of a and of −a.
//
// The loads' addresses depend on the indices: it serves where the indices
// are public or that leak is accepted (encryption, key generation).
func sparseMul(c []uint16, pos, neg *laneImage, plus, minus []uint16) {
	n := len(c)
	w := words(n)
	acc := make([]uint64, w)
	srcs := make([][]uint64, 0, len(plus)+len(minus))
	for _, s := range plus {
		srcs = append(srcs, pos.rot(n-int(s), w))
	}
	for _, s := range minus {
		srcs = append(srcs, neg.rot(n-int(s), w))
	}
	// Each term adds at most q to a lane; 28 terms on top of a lane below q
	// stay below 2^16.
	for len(srcs) > 0 {
		chunk := min(28, len(srcs))
		k := 0
		for ; k+8 <= chunk; k += 8 {
			add8(acc, srcs[k:k+8])
		}
		for ; k+4 <= chunk; k += 4 {
			add4(acc, srcs[k], srcs[k+1], srcs[k+2], srcs[k+3])
		}
		for ; k < chunk; k++ {
			s := srcs[k][:len(acc)]
			for i := range acc {
				acc[i] += s[i]
			}
		}
		srcs = srcs[chunk:]
		reduceLanes(acc)
	}
	unlane(c, acc, 0)
}

// add8 adds eight rotations: one load and store of acc per eight terms.
func add8(acc []uint64, s [][]uint64) {
	n := len(acc)
	s0, s1, s2, s3 := s[0][:n], s[1][:n], s[2][:n], s[3][:n]
	s4, s5, s6, s7 := s[4][:n], s[5][:n], s[6][:n], s[7][:n]
	for i := range acc {
		acc[i] += s0[i] + s1[i] + s2[i] + s3[i] + s4[i] + s5[i] + s6[i] + s7[i]
	}
}

func add4(acc, s0, s1, s2, s3 []uint64) {
	n := len(acc)
	s0, s1, s2, s3 = s0[:n], s1[:n], s2[:n], s3[:n]
	for i := range acc {
		acc[i] += s0[i] + s1[i] + s2[i] + s3[i]
	}
}
