package mpspdz

import "fmt"

// CheckTuple reports whether the two players' shares of one tuple of kind
// k (k.Words() each) open to a correct tuple: c = a·b, q = a², r ∈ {0, 1},
// C = A·B (mod 2^64).
func CheckTuple(k Kind, s0, s1 []uint64) error {
	w := k.Words()
	if len(s0) != w || len(s1) != w {
		return fmt.Errorf("%d and %d shares, want %d", len(s0), len(s1), w)
	}
	open := func(i int) uint64 { return s0[i] + s1[i] }
	switch k.Name {
	case "Triples":
		if a, b, c := open(0), open(1), open(2); c != a*b {
			return fmt.Errorf("c ≠ a·b")
		}
	case "Squares":
		if a, q := open(0), open(1); q != a*a {
			return fmt.Errorf("q ≠ a²")
		}
	case "Bits":
		if r := open(0); r > 1 {
			return fmt.Errorf("r = %d is not a bit", r)
		}
	case "Matrix":
		m, kk, n := k.M, k.K, k.N
		b0, c0 := m*kk, m*kk+kk*n
		for i := 0; i < m; i++ {
			for j := 0; j < n; j++ {
				var acc uint64
				for l := 0; l < kk; l++ {
					acc += open(i*kk+l) * open(b0+l*n+j)
				}
				if acc != open(c0+i*n+j) {
					return fmt.Errorf("C[%d][%d] ≠ (A·B)[%d][%d]", i, j, i, j)
				}
			}
		}
	default:
		return fmt.Errorf("unknown kind %q", k.Name)
	}
	return nil
}

// CheckAll checks every tuple of two players' files of kind k; a mismatch
// names the tuple index.
func CheckAll(k Kind, s0, s1 []uint64) error {
	w := k.Words()
	if len(s0) != len(s1) {
		return fmt.Errorf("player 0 has %d tuples, player 1 %d", len(s0)/w, len(s1)/w)
	}
	for i := 0; i+w <= len(s0); i += w {
		if err := CheckTuple(k, s0[i:i+w], s1[i:i+w]); err != nil {
			return fmt.Errorf("tuple %d: %w", i/w, err)
		}
	}
	return nil
}
