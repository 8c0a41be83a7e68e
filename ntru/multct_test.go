package ntru

// ternaryMulCT is decryption's previous constant-time product (a dense
// masked SWAR product, N²/4 word operations), kept as a second reference
// for the tests and as the "before" of BenchmarkMul.
//
// It computes c = t·a mod q for a secret ternary t given densely
// as trits (0, 1, 2 = −1) and a public a given by its image.
//
// It is constant time with respect to t: every coefficient of t is visited,
// the loads' addresses depend only on loop counters, and t enters only
// through masks. A −1 coefficient adds a's rotation with each lane's 11 bits
// complemented, q − 1 − x; the missing +1 per −1 coefficient is added at
// the end as a count (computed without branches).
func ternaryMulCT(c []uint16, img *laneImage, t []uint8) {
	n := len(c)
	w := words(n)
	t = t[:n]
	xs := make([]uint64, n)
	ms := make([]uint64, n)
	var negs uint16
	for j, tj := range t {
		neg := uint64(tj>>1) & 1
		xs[j] = -neg & lanes11
		ms[j] = -(uint64(tj|tj>>1) & 1)
		negs += uint16(neg)
	}
	acc := make([]uint64, w)
	// Four coefficients of t per pass, seven passes (28 terms of at most
	// q − 1 each) between reductions.
	j := 0
	for pass := 0; j+4 <= n; j += 4 {
		s0, s1, s2, s3 := img.rot(n-j, w), img.rot(n-j-1, w), img.rot(n-j-2, w), img.rot(n-j-3, w)
		x0, x1, x2, x3 := xs[j], xs[j+1], xs[j+2], xs[j+3]
		m0, m1, m2, m3 := ms[j], ms[j+1], ms[j+2], ms[j+3]
		s0, s1, s2, s3 = s0[:len(acc)], s1[:len(acc)], s2[:len(acc)], s3[:len(acc)]
		for i := range acc {
			acc[i] += (s0[i]^x0)&m0 + (s1[i]^x1)&m1 + (s2[i]^x2)&m2 + (s3[i]^x3)&m3
		}
		if pass++; pass == 7 {
			reduceLanes(acc)
			pass = 0
		}
	}
	reduceLanes(acc)
	for ; j < n; j++ {
		s, x, m := img.rot(n-j, w)[:len(acc)], xs[j], ms[j]
		for i := range acc {
			acc[i] += (s[i] ^ x) & m
		}
	}
	unlane(c, acc, negs)
}
