package ntru

import "testing"

// denseMul computes c = a·b mod (x^n − 1) with 16-bit wrap-around
// arithmetic (so the result is correct mod any power of two up to 2^16).
// A plain schoolbook product: the tests' reference for key generation.
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

// invertMod2Bytes is the previous byte-per-coefficient almost-inverse
// algorithm, the reference for the bit-vector invertMod2.
func invertMod2Bytes(a []uint16) ([]uint8, bool) {
	n := len(a)
	f := make([]uint8, n+1)
	g := make([]uint8, n+1)
	b := make([]uint8, n+1)
	c := make([]uint8, n+1)
	for i, v := range a {
		f[i] = uint8(v & 1)
	}
	g[0], g[n] = 1, 1
	b[0] = 1
	degF, degG := n-1, n
	for degF > 0 && f[degF] == 0 {
		degF--
	}
	k := 0
	for {
		shift := 0
		for shift <= degF && f[shift] == 0 {
			shift++
		}
		if shift > degF {
			return nil, false
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
			break
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
	inv := make([]uint8, n)
	b[0] ^= b[n]
	k %= n
	for i := 0; i < n; i++ {
		inv[(i-k+n)%n] = b[i]
	}
	return inv, true
}

// TestInvertMod2Differential compares the bit-vector inversion with the
// byte-wise one on random polynomials (invertible or not) of sizes around
// the word boundaries and of both sets, and checks a·a^-1 = 1 mod 2.
func TestInvertMod2Differential(t *testing.T) {
	r := detRand(31)
	for _, n := range []int{2, 3, 5, 7, 31, 61, 63, 64, 65, 127, 128, 131, 1087, 1499} {
		for trial := 0; trial < 12; trial++ {
			a := make([]uint16, n)
			for i := range a {
				if trial%3 == 0 {
					a[i] = uint16(r.Uint64() % 2)
				} else if r.Uint64()%10 == 0 {
					a[i] = 1
				}
			}
			if trial == 1 {
				clear(a)
				a[n-1] = 1 // x^(n−1): invertible, maximal shift
			}
			got, gotOK := invertMod2(a)
			want, wantOK := invertMod2Bytes(a)
			if gotOK != wantOK {
				t.Fatalf("n=%d trial %d: ok %v, reference %v", n, trial, gotOK, wantOK)
			}
			if !gotOK {
				continue
			}
			for i := range got {
				if got[i] != want[i] {
					t.Fatalf("n=%d trial %d: coefficient %d differs", n, trial, i)
				}
			}
			inv := make([]uint16, n)
			for i, v := range got {
				inv[i] = uint16(v)
			}
			c := make([]uint16, n)
			denseMul(c, a, inv)
			for i, v := range c {
				if v&1 != uint16(b2i(i == 0)) {
					t.Fatalf("n=%d trial %d: a·a^-1 ≠ 1 mod 2 at %d", n, trial, i)
				}
			}
		}
	}
}

// TestInvertModQSchoolbook checks f·f^-1 = 1 mod q with the schoolbook
// product, for random keys of both sets and small sizes.
func TestInvertModQSchoolbook(t *testing.T) {
	r := detRand(32)
	for _, c := range []struct{ n, d int }{{7, 1}, {31, 3}, {97, 10}, {1087, 63}, {1499, 79}} {
		found := 0
		for trial := 0; trial < 20 && found < 3; trial++ {
			plus, minus, _ := randomTernary(r, c.n, c.d, c.d)
			inv, ok := invertModQ(c.n, plus, minus)
			if !ok {
				continue
			}
			found++
			f := make([]uint16, c.n)
			f[0] = 1
			for _, i := range plus {
				f[i] += 3
			}
			for _, i := range minus {
				f[i] -= 3
			}
			prod := make([]uint16, c.n)
			denseMul(prod, f, inv)
			for i, v := range prod {
				if v&qMask != uint16(b2i(i == 0)) {
					t.Fatalf("n=%d: f·f^-1 ≠ 1 at %d", c.n, i)
				}
			}
		}
		if found == 0 {
			t.Fatalf("n=%d: no invertible f in 20 tries", c.n)
		}
	}
}
