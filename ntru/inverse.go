package ntru

// invertMod2 returns the inverse of a mod (2, x^n − 1) as 0/1 coefficients,
// or false if a is not invertible. It is the "almost inverse" algorithm: it
// keeps b·a ≡ x^k·f and c·a ≡ x^k·g (mod 2), shrinking f and g until f = 1.
func invertMod2(a []uint16) ([]uint8, bool) {
	n := len(a)
	f := make([]uint8, n+1)
	g := make([]uint8, n+1)
	b := make([]uint8, n+1)
	c := make([]uint8, n+1)
	for i, v := range a {
		f[i] = uint8(v & 1)
	}
	g[0], g[n] = 1, 1 // x^n − 1 ≡ x^n + 1
	b[0] = 1
	degF, degG := n-1, n
	for degF > 0 && f[degF] == 0 {
		degF--
	}
	k := 0
	for {
		// Divide f by x while its constant term is zero; multiply c by x.
		shift := 0
		for shift <= degF && f[shift] == 0 {
			shift++
		}
		if shift > degF {
			return nil, false // f = 0
		}
		if shift > 0 {
			copy(f, f[shift:degF+1])
			for i := degF + 1 - shift; i <= degF; i++ {
				f[i] = 0
			}
			degF -= shift
			copy(c[shift:], c[:n+1-shift])
			for i := 0; i < shift; i++ {
				c[i] = 0
			}
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
		for i := 0; i <= degG; i++ {
			f[i] ^= g[i]
		}
		for i := range b {
			b[i] ^= c[i]
		}
		for degF > 0 && f[degF] == 0 {
			degF--
		}
	}
	// a^-1 = x^(−k)·b mod (x^n − 1); b has degree < n here.
	inv := make([]uint8, n)
	b[0] ^= b[n] // fold x^n ≡ 1 (should be zero already)
	k %= n
	for i := 0; i < n; i++ {
		inv[(i-k+n)%n] = b[i]
	}
	return inv, true
}

// invertModQ returns f^-1 mod (q, x^n − 1) for f = 1 + 3F with F given as
// index lists, by inverting mod 2 and lifting with Newton's iteration
// b ← b·(2 − f·b), which doubles the number of correct low bits each time.
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
	t := make([]uint16, n)
	for bits := 1; bits < qBits; bits *= 2 {
		denseMul(t, f, b)
		for i := range t {
			t[i] = -t[i]
		}
		t[0] += 2
		denseMul(b, b, t)
	}
	for i := range b {
		b[i] &= qMask
	}
	// Check f·b = 1 mod q.
	denseMul(t, f, b)
	for i, v := range t {
		want := uint16(0)
		if i == 0 {
			want = 1
		}
		if v&qMask != want {
			return nil, false
		}
	}
	return b, true
}
