package ntru

import (
	"fmt"
	"testing"
)

// kronMul runs ternaryMulKron on unpacked inputs.
func kronMul(a []uint16, t []uint8) []uint16 {
	n := len(a)
	m := kronWords(n)
	aw, tw := make([]uint64, m), make([]uint64, m)
	packKron(aw, a)
	packKronTernary(tw, t)
	c := make([]uint16, n)
	ternaryMulKron(c, aw, sumMod(a), tw, make([]uint64, kronScratchWords(m)))
	return c
}

// TestKronMulDifferential checks the decryption product against the
// schoolbook naiveMul on random inputs and on the edge values that stress
// the 16-bit slot bound (all q−1 against all +1, all −1, dense mixtures)
// and the wrap-around (n not a multiple of 4, nonzeros at 0 and n−1).
func TestKronMulDifferential(t *testing.T) {
	r := detRand(21)
	sizes := []int{1, 2, 3, 4, 5, 7, 8, 9, 23, 24, 25, 31, 64, 97, 1087, 1499}
	for _, n := range sizes {
		fills := map[string]func(a []uint16, tr []uint8){
			"random sparse": func(a []uint16, tr []uint8) {
				copy(a, randomPoly(r, n))
				for i := range tr {
					tr[i] = 0
					if r.Uint64()%8 == 0 {
						tr[i] = uint8(1 + r.Uint64()%2)
					}
				}
			},
			"random dense": func(a []uint16, tr []uint8) {
				copy(a, randomPoly(r, n))
				for i := range tr {
					tr[i] = uint8(r.Uint64() % 3)
				}
			},
			"max, all +1": func(a []uint16, tr []uint8) {
				for i := range a {
					a[i], tr[i] = qMask, 1
				}
			},
			"max, all −1": func(a []uint16, tr []uint8) {
				for i := range a {
					a[i], tr[i] = qMask, 2
				}
			},
			"max, all 0": func(a []uint16, tr []uint8) {
				for i := range a {
					a[i], tr[i] = qMask, 0
				}
			},
			"zero a": func(a []uint16, tr []uint8) {
				for i := range a {
					a[i], tr[i] = 0, uint8(i%3)
				}
			},
			"ends": func(a []uint16, tr []uint8) {
				for i := range a {
					a[i], tr[i] = 0, 0
				}
				a[0], a[n-1] = qMask, qMask-1
				tr[0], tr[n-1] = 2, 1
			},
		}
		for name, fill := range fills {
			a, tr := make([]uint16, n), make([]uint8, n)
			fill(a, tr)
			want := naiveMul(a, tr)
			eqU16(t, fmt.Sprintf("n=%d %s", n, name), kronMul(a, tr), want)
		}
	}
	// Random key-shaped inputs of both sets, also against the previous
	// constant-time product.
	for _, set := range ParamSets() {
		p, _ := set.params()
		for range 20 {
			a := randomPoly(r, p.n)
			plus, minus, err := randomTernary(r, p.n, p.df, p.df)
			if err != nil {
				t.Fatal(err)
			}
			tr := make([]uint8, p.n)
			for _, i := range plus {
				tr[i] = 1
			}
			for _, i := range minus {
				tr[i] = 2
			}
			got := kronMul(a, tr)
			eqU16(t, set.Name(), got, naiveMul(a, tr))
			old := make([]uint16, p.n)
			ternaryMulCT(old, newLaneImage(a, false), tr)
			eqU16(t, set.Name()+" vs ternaryMulCT", got, old)
		}
	}
}

// TestPackKronTernary checks the trit map 0→1, 1→2, 2→0 and the
// lane order, including the zero padding.
func TestPackKronTernary(t *testing.T) {
	tr := []uint8{0, 1, 2, 1, 2, 0}
	w := make([]uint64, kronWords(len(tr)))
	packKronTernary(w, tr)
	if w[0] != 1|2<<16|0<<32|2<<48 || w[1] != 0|1<<16 {
		t.Fatalf("got %#x", w)
	}
}
