package ntru

import "math/bits"

// invertMod2 returns the inverse of a mod (2, x^n − 1) as 0/1 coefficients,
// or false if a is not invertible. It is the "almost inverse" algorithm: it
// keeps b·a ≡ x^k·f and c·a ≡ x^k·g (mod 2), shrinking f and g until f = 1.
// The four polynomials are bit vectors (bit i of word i/64 is the
// coefficient of x^i), so each step costs O(n/64) word operations.
func invertMod2(a []uint16) ([]uint8, bool) {
	n := len(a)
	w := (n+1+63)/64 + 1
	f, g := make([]uint64, w), make([]uint64, w)
	b, c := make([]uint64, w), make([]uint64, w)
	for i, v := range a {
		f[i/64] |= uint64(v&1) << (i % 64)
	}
	g[0] |= 1
	g[n/64] |= 1 << (n % 64) // x^n − 1 ≡ x^n + 1
	b[0] = 1
	degF, degG := degree2(f), n
	if degF < 0 {
		return nil, false
	}
	k := 0
	for {
		// Divide f by x while its constant term is zero; multiply c by x,
		// keeping the n+1 coefficients 0…n as the schoolbook form did.
		shift := trailingZeros2(f)
		if shift > 0 {
			shr2(f, shift)
			degF -= shift
			shl2(c, shift, n+1)
			k += shift
		}
		if degF == 0 {
			break // f = 1
		}
		if degF < degG {
			f, g = g, f
			b, c = c, b
			degF, degG = degG, degF
		}
		for i := range f {
			f[i] ^= g[i]
			b[i] ^= c[i]
		}
		if degF = degree2(f); degF < 0 {
			return nil, false // f = 0
		}
	}
	// a^-1 = x^(−k)·b mod (x^n − 1); b has degree < n here.
	bit := func(i int) uint8 { return uint8(b[i/64] >> (i % 64) & 1) }
	inv := make([]uint8, n)
	k %= n
	for i := 0; i < n; i++ {
		inv[(i-k+n)%n] = bit(i)
	}
	inv[(n-k)%n] ^= bit(n) // fold x^n ≡ 1 (should be zero already)
	return inv, true
}

// degree2 returns the degree of the bit-vector polynomial p, −1 for zero.
func degree2(p []uint64) int {
	for i := len(p) - 1; i >= 0; i-- {
		if p[i] != 0 {
			return 64*i + bits.Len64(p[i]) - 1
		}
	}
	return -1
}

// trailingZeros2 returns the number of zero low coefficients of p ≠ 0.
func trailingZeros2(p []uint64) int {
	for i, v := range p {
		if v != 0 {
			return 64*i + bits.TrailingZeros64(v)
		}
	}
	return 64 * len(p)
}

// shr2 divides p by x^s, dropping the low s coefficients.
func shr2(p []uint64, s int) {
	ws, bs := s/64, uint(s%64)
	for i := range p {
		var v uint64
		if j := i + ws; j < len(p) {
			v = p[j] >> bs
			if bs != 0 && j+1 < len(p) {
				v |= p[j+1] << (64 - bs)
			}
		}
		p[i] = v
	}
}

// shl2 multiplies p by x^s, keeping coefficients below nbits.
func shl2(p []uint64, s, nbits int) {
	ws, bs := s/64, uint(s%64)
	for i := len(p) - 1; i >= 0; i-- {
		var v uint64
		if j := i - ws; j >= 0 {
			v = p[j] << bs
			if bs != 0 && j > 0 {
				v |= p[j-1] >> (64 - bs)
			}
		}
		p[i] = v
	}
	top := nbits / 64
	if top < len(p) {
		p[top] &= 1<<(nbits%64) - 1
		clear(p[top+1:])
	}
}

// invertModQ returns f^-1 mod (q, x^n − 1) for f = 1 + 3F with F given as
// index lists, by inverting mod 2 and lifting with Newton's iteration: if
// f·b = 1 + 2^k·u then b′ = b·(2 − f·b) = b − 2^k·(b·u) is the inverse mod
// 2^2k, and only b·u mod 2^(11−k) is needed. f·b is a sparse product (F
// has 2·df nonzeros); b·u is a sum of Kronecker products of b with the
// balanced-ternary digits of u (7, 6, 5 and 2 digits for k = 1, 2, 4, 8).
func invertModQ(n int, fPlus, fMinus []uint16) ([]uint16, bool) {
	f := make([]uint16, n)
	f[0] = 1
	for _, i := range fPlus {
		f[i] += 3
	}
	for _, i := range fMinus {
		f[i] -= 3
	}
	inv2, ok := invertMod2(f)
	if !ok {
		return nil, false
	}
	b := make([]uint16, n)
	for i, v := range inv2 {
		b[i] = uint16(v)
	}
	fb := make([]uint16, n)
	mulF := func() { // fb = f·b mod q
		sparseMul(fb, newLaneImage(b, false), newLaneImage(b, true), fPlus, fMinus)
		for i := range fb {
			fb[i] = (b[i] + 3*fb[i]) & qMask
		}
	}
	m := kronWords(n)
	bw, tw := make([]uint64, m), make([]uint64, m)
	scratch := make([]uint64, kronScratchWords(m))
	v := make([]int32, n)
	digit := make([]uint8, n)
	prod, acc := make([]uint16, n), make([]uint16, n)
	for k := 1; k < qBits; k *= 2 {
		mulF()
		j := qBits - k // bits of u needed
		half := int32(1) << (j - 1)
		for i := range v {
			u := int32((fb[i]-uint16(b2i(i == 0)))&qMask) >> k
			v[i] = u - (u&half)<<1 // centred in [−2^(j−1), 2^(j−1))
		}
		// b·u = Σ_d 3^d·(b·t_d) for the balanced-ternary digits t_d of u.
		packKron(bw, b)
		bSum := sumMod(b)
		clear(acc)
		pow := uint16(1)
		for reach := int32(0); reach < half; reach = 3*reach + 1 {
			for i, x := range v {
				r := (x%3 + 3) % 3 // 0, 1, 2
				if r == 2 {
					r = -1
				}
				v[i] = (x - r) / 3
				digit[i] = uint8(r+3) % 3 // trit code: 0, 1, 2 = −1
			}
			packKronTernary(tw, digit)
			ternaryMulKron(prod, bw, bSum, tw, scratch)
			for i, p := range prod {
				acc[i] += pow * p
			}
			pow *= 3
		}
		for _, x := range v {
			if x != 0 {
				return nil, false // digits did not cover u: cannot happen
			}
		}
		for i := range b {
			b[i] = (b[i] - acc[i]<<k) & qMask
		}
	}
	// Check f·b = 1 mod q.
	mulF()
	for i, x := range fb {
		if x != uint16(b2i(i == 0)) {
			return nil, false
		}
	}
	return b, true
}

func b2i(c bool) int {
	if c {
		return 1
	}
	return 0
}
