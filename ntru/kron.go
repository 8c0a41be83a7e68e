package ntru

import "math/bits"

// The constant-time product of decryption: a public dense polynomial a (e,
// or h) times a secret ternary t (F, or r), mod x^n − 1 and q.
//
// Kronecker substitution on 16-bit slots. A word holds four consecutive
// coefficients, a0 + a1·2^16 + a2·2^32 + a3·2^48, and one 64×64→128-bit
// multiplication of a word of a by a word of t' yields their 4×4 polynomial
// product, slot k (bits 16k…16k+15 of the 128 bits) holding Σ_{i+j=k}
// a_i·t'_j, provided no slot reaches 2^16: 16 multiply-adds per MULQ.
//
// The slot bound holds with a reduced mod q (lanes below 2^11) and t' = t +
// 1 (lanes 0, 1, 2): a slot sums at most four products, 4·2047·2 < 2^15.
// The offset is undone at the end: t'·a = t·a + (Σ a_i)·(1 + x + … +
// x^(n−1)) mod x^n − 1, so every coefficient of t'·a exceeds that of t·a by
// Σ a_i.
//
// Karatsuba on word-aligned halves (depth 4 for N = 1087, 5 for N = 1499,
// see kronPlan) cuts the multiplications to (3/4)^depth of the
// schoolbook's. The dense side's sums are reduced mod q; the ternary
// side's sums are not (lanes up to 2^(depth+1)) and need no correction,
// since t' is nonnegative. Up to 8 they stay within the slot bound,
// 4·2047·8 < 2^16; larger lanes are split into two (or three) products.
// All arithmetic is mod 2^16 per lane, then mod q: exact, as q divides 2^16.
// The leaves are straight-line kernels generated for their sizes
// (kronkernels.go; 17 and 12 words for the two sets): the looped product
// scanning (convKron) spent more on loop and slice overhead than on MULQ.
//
// Constant time: every loop's trip count and every address depend only on
// n; t enters only as multiplication and addition operands (MULQ on amd64
// takes the same time for all operands). Branches depend on the recursion
// depth and public lengths only.

//go:generate go run kronkernels_gen.go

const lanesQ = 0x0800080008000800 // q in every lane

// kronMaxDepth bounds the Karatsuba levels: at depth d the ternary side's
// lanes reach 2^(d+1), and leaves above 8 cost two or three products.
const kronMaxDepth = 5

// kronPlan returns the packed length (words) and the Karatsuba depth of
// the product for n coefficients: words = L·2^depth for a leaf of L words
// (at least ⌈n/4⌉), with the leaves small enough for the unrolled kernels
// (kronkernels.go). ees1087ep1 uses 17·2^4 = 272 words (no padding),
// ees1499ep1 12·2^5 = 384 (375 needed); both measured best among the
// depths 3 to 6. Other sizes (tests) take the deepest split with leaves
// of at least 4 words.
func kronPlan(n int) (words, depth int) {
	w := (n + 3) / 4
	switch n {
	case 1087:
		return 272, 4
	case 1499:
		return 384, 5
	}
	for depth < kronMaxDepth && w>>(depth+1) >= 4 {
		depth++
	}
	l := (w + 1<<depth - 1) >> depth
	return l << depth, depth
}

// kronWords is the number of words of a packed polynomial of n
// coefficients (see kronPlan).
func kronWords(n int) int {
	w, _ := kronPlan(n)
	return w
}

// packKron packs a (each coefficient taken mod q) into 4-lane words, zero
// padded; len(dst) = kronWords(len(a)).
func packKron(dst []uint64, a []uint16) {
	clear(dst)
	for i, v := range a {
		dst[i/4] |= uint64(v&qMask) << (16 * uint(i%4))
	}
}

// packKronTernary packs t' = t + 1 for trits t (0, 1, 2 = −1) into 4-lane
// words, zero padded beyond len(t). The map 0→1, 1→2, 2→0 is branch-free.
func packKronTernary(dst []uint64, t []uint8) {
	clear(dst)
	for i, v := range t {
		v &= 3
		s := uint64(v+1) &^ -uint64(v>>1) // v = 2 gives 0
		dst[i/4] |= s << (16 * uint(i%4))
	}
}

// sumMod returns Σ a_i mod q.
func sumMod(a []uint16) uint16 {
	var s uint16
	for _, v := range a {
		s += v
	}
	return s & qMask
}

// kronScratchWords is the scratch space ternaryMulKron needs for m words.
func kronScratchWords(m int) int { return 2*m + 6*m } // product, Karatsuba

// ternaryMulKron computes c = t·a mod (x^n − 1, q), n = len(c), in
// constant time with respect to t. a is packed by packKron, with aSum =
// Σ a_i mod q; tw holds t + 1 packed by packKronTernary; both have
// kronWords(n) words. scratch has at least kronScratchWords(kronWords(n))
// words.
func ternaryMulKron(c []uint16, a []uint64, aSum uint16, tw, scratch []uint64) {
	_, depth := kronPlan(len(c))
	ternaryMulKronDepth(c, a, aSum, tw, scratch, depth)
}

// ternaryMulKronDepth is ternaryMulKron with the Karatsuba depth given
// (len(a) a multiple of 2^depth); the benchmarks compare depths with it.
func ternaryMulKronDepth(c []uint16, a []uint64, aSum uint16, tw, scratch []uint64, depth int) {
	n := len(c)
	m := len(a)
	prod := scratch[:2*m]
	karatsuba(prod, a, tw[:m], 2, depth, scratch[2*m:])
	// Fold the linear product (degree ≤ 2n − 2 < 8m) mod x^n − 1, four
	// coefficients a word: coefficient k + n lies in words (k+n)/4 and the
	// next, shifted by (n mod 4) lanes. Lanes are masked to 11 bits before
	// adding, so no lane carries (2047·2 + 2q < 2^16).
	base, sh := n/4, 16*uint(n%4)
	sub := (2*q - uint64(aSum)) * 0x0001000100010001
	for w := 0; 4*w < n; w++ {
		hi := prod[w+base] >> sh
		if sh != 0 {
			hi |= prod[w+base+1] << (64 - sh)
		}
		v := (prod[w]&lanes11 + hi&lanes11 + sub) & lanes11
		cw := c[4*w : min(4*w+4, n)]
		for j := range cw {
			cw[j] = uint16(v >> (16 * uint(j)))
		}
	}
}

// karatsuba computes the linear product out = a·s (len(out) = 2·len(a)),
// every lane reduced mod q, for a with lanes below 2^11 and s with lanes at
// most sMax (2 · 2^k), with depth levels of Karatsuba; len(a) = len(s) is
// a multiple of 2^depth. scratch has at least 6·len(a) words: 2·len(a)
// for this level, less than 2·len(a) for the levels below and 5 leaf
// lengths for the leaf.
func karatsuba(out, a, s []uint64, sMax uint64, depth int, scratch []uint64) {
	l := len(a)
	if depth == 0 {
		kronLeaf(out, a, s, sMax, scratch)
		return
	}
	h := l / 2
	a01, s01, mid, rest := scratch[:h], scratch[h:2*h], scratch[2*h:4*h], scratch[4*h:]
	a0, a1, s0, s1 := a[:h], a[h:l], s[:h], s[h:l]
	a0, a1, s0, s1 = a0[:len(a01)], a1[:len(a01)], s0[:len(a01)], s1[:len(a01)]
	s01 = s01[:len(a01)]
	for i := range a01 {
		a01[i] = (a0[i] + a1[i]) & lanes11 // lanes below 2^12 before the mask
		s01[i] = s0[i] + s1[i]             // lanes at most 2·sMax
	}
	karatsuba(out[:2*h], a0, s0, sMax, depth-1, rest)
	karatsuba(out[2*h:4*h], a1, s1, sMax, depth-1, rest)
	karatsuba(mid, a01, s01, 2*sMax, depth-1, rest)
	// out += x^h·(mid − lo − hi) for lo = out[:2h], hi = out[2h:4h], in
	// place: word h+i needs lo[h+i], lo[i], hi[i] and word 2h+i needs
	// hi[i], lo[h+i], hi[h+i], so each i reads its four words before
	// writing two of them. Adding q twice per lane keeps the lane
	// subtraction from borrowing (every term is below 2^11).
	q0, q1, q2, q3 := out[:h], out[h:2*h], out[2*h:3*h], out[3*h:4*h]
	m0, m1 := mid[:h], mid[h:2*h]
	q1, q2, q3, m0, m1 = q1[:len(q0)], q2[:len(q0)], q3[:len(q0)], m0[:len(q0)], m1[:len(q0)]
	for i := range q0 {
		l0, l1, h0, h1 := q0[i], q1[i], q2[i], q3[i]
		q1[i] = (l1 + m0[i] + 2*lanesQ - l0 - h0) & lanes11
		q2[i] = (h0 + m1[i] + 2*lanesQ - l1 - h1) & lanes11
	}
}

// kronLeaf computes out = a·s like karatsuba, by product scanning
// (convKron). Lanes of s above 8 are split, s = s_lo + 8·s_hi with s_lo's
// lanes at most 7, into two products. scratch has at least 5·len(a) words.
func kronLeaf(out, a, s []uint64, sMax uint64, scratch []uint64) {
	l := len(a)
	if sMax <= 8 {
		if kern := kronKernel(l); kern != nil {
			kern(out, a, s)
		} else {
			convKron(out, a, s, sMax, scratch)
		}
		return
	}
	const lanes3, lanes13 = 0x0007000700070007, 0x1FFF1FFF1FFF1FFF
	sLo, sHi, hi := scratch[:l], scratch[l:2*l], scratch[2*l:4*l]
	for i := range sLo {
		sLo[i] = s[i] & lanes3
		sHi[i] = s[i] >> 3 & lanes13
	}
	kronLeaf(hi, a, sHi, sMax>>3, scratch[4*l:])
	kronLeaf(out, a, sLo, 7, scratch[4*l:])
	for i := range out {
		out[i] = (out[i] + hi[i]<<3) & lanes11 // hi's lanes < 2^11
	}
}

// convKron computes the linear product out = a·s (len(out) = 2·len(a)) by
// product scanning, each lane reduced mod q; a's lanes are below 2^11 and
// s's at most sMax ≤ 8. scratch has at least len(a) words.
//
// Output word k sums the low halves of the products a_i·s_(k−i) and the
// high halves of a_i·s_(k−1−i). One product's slots stay below
// 4·2047·sMax < 2^16 (see dot for the accumulation).
func convKron(out, a, s []uint64, sMax uint64, scratch []uint64) {
	l := len(a)
	s = s[:l]
	out = out[:2*l]
	sr := scratch[:l] // s in reverse word order: sr[j] = s[l−1−j]
	for i, v := range s {
		sr[l-1-i] = v
	}
	var carry uint64 // high halves for word k, from the products for word k−1
	for k := 0; k < 2*l-1; k++ {
		i0 := max(0, k-l+1)
		cnt := min(k, l-1) - i0 + 1
		j0 := l - 1 - k + i0 // sr[j0+x] = s[k−i0−x]
		aa, ss := a[i0:i0+cnt], sr[j0:j0+cnt]
		lo, hi := dot(aa, ss, sMax)
		out[k] = (lo + carry) & lanes11
		carry = hi
	}
	out[2*l-1] = carry & lanes11
}

// dot returns the lane sums mod q of the low and of the high halves of
// the products a_x·s_x. Products are summed in groups small enough not to
// carry out of a lane, each group masked to 11 bits before it joins the
// accumulator, which is masked once per four products (at most 2047 +
// 4·2047 < 2^16 per lane). A group is four products for sMax ≤ 2 (a
// product's slots below 4·2047·2 = 16376), two for sMax ≤ 4 (below
// 32752) and one for sMax ≤ 8 (below 65504).
func dot(a, s []uint64, sMax uint64) (lo, hi uint64) {
	s = s[:len(a)]
	x := 0
	for ; x+4 <= len(a); x += 4 {
		av, sv := (*[4]uint64)(a[x:x+4]), (*[4]uint64)(s[x:x+4])
		h0, l0 := bits.Mul64(av[0], sv[0])
		h1, l1 := bits.Mul64(av[1], sv[1])
		h2, l2 := bits.Mul64(av[2], sv[2])
		h3, l3 := bits.Mul64(av[3], sv[3])
		switch {
		case sMax <= 2:
			lo = (lo + (l0+l1+l2+l3)&lanes11) & lanes11
			hi = (hi + (h0+h1+h2+h3)&lanes11) & lanes11
		case sMax <= 4:
			lo = (lo + (l0+l1)&lanes11 + (l2+l3)&lanes11) & lanes11
			hi = (hi + (h0+h1)&lanes11 + (h2+h3)&lanes11) & lanes11
		default:
			lo = (lo + l0&lanes11 + l1&lanes11 + l2&lanes11 + l3&lanes11) & lanes11
			hi = (hi + h0&lanes11 + h1&lanes11 + h2&lanes11 + h3&lanes11) & lanes11
		}
	}
	// The last products (fewer than four), one group each.
	for ; x < len(a); x++ {
		h, l := bits.Mul64(a[x], s[x])
		lo = (lo + l&lanes11) & lanes11
		hi = (hi + h&lanes11) & lanes11
	}
	return lo, hi
}
