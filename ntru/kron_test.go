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

// TestKronKernels compares every unrolled leaf with the looped convKron
// on random operands and on the maximal ones the kernels are used for
// (dense lanes q − 1, ternary-side lanes 8: every slot at its bound), and
// checks convKron itself against a lane-by-lane schoolbook.
func TestKronKernels(t *testing.T) {
	r := detRand(22)
	for _, l := range []int{6, 8, 9, 12, 17, 24} {
		kern := kronKernel(l)
		if kern == nil {
			t.Fatalf("no kernel for %d words", l)
		}
		for trial := range 6 {
			a, s := make([]uint64, l), make([]uint64, l)
			for i := range a {
				switch trial {
				case 0:
					a[i], s[i] = lanes11, 0x0008000800080008
				case 1:
					a[i], s[i] = lanes11, 0x0002000200020002
				default:
					a[i] = r.Uint64() & lanes11
					s[i] = r.Uint64() & 0x0007000700070007
					if trial == 5 {
						s[i] += 0x0001000000010000 & r.Uint64() // some lanes 8
					}
				}
			}
			got, want := make([]uint64, 2*l), make([]uint64, 2*l)
			kern(got, a, s)
			convKron(want, a, s, 8, make([]uint64, l))
			for i := range want {
				if got[i] != want[i] {
					t.Fatalf("l=%d trial %d: word %d = %#x, convKron %#x", l, trial, i, got[i], want[i])
				}
			}
			// Lane-by-lane schoolbook of the 4l-coefficient operands.
			lane := func(w []uint64, i int) uint64 { return w[i/4] >> (16 * uint(i%4)) & 0xFFFF }
			for k := 0; k < 8*l; k++ {
				var sum uint64
				for i := max(0, k-4*l+1); i <= min(k, 4*l-1); i++ {
					sum += lane(a, i) * lane(s, k-i)
				}
				if lane(want, k) != sum&qMask {
					t.Fatalf("l=%d trial %d: convKron coefficient %d", l, trial, k)
				}
			}
		}
	}
}

// TestKronDepths runs the product at every Karatsuba depth from 0 to 6
// (leaves looped or unrolled, one to three leaf products) against the
// schoolbook, for both sets' sizes, on random key-shaped, random dense and
// slot-bound operands.
func TestKronDepths(t *testing.T) {
	r := detRand(23)
	for _, n := range []int{1087, 1499} {
		for depth := 0; depth <= 6; depth++ {
			w := (n + 3) / 4
			m := (w + 1<<depth - 1) >> depth << depth
			for trial := range 3 {
				a, tr := randomPoly(r, n), make([]uint8, n)
				for i := range tr {
					switch trial {
					case 0:
						if r.Uint64()%8 == 0 {
							tr[i] = uint8(1 + r.Uint64()%2)
						}
					case 1:
						tr[i] = uint8(r.Uint64() % 3)
					case 2:
						a[i], tr[i] = qMask, 1
					}
				}
				aw, tw := make([]uint64, m), make([]uint64, m)
				packKron(aw, a)
				packKronTernary(tw, tr)
				c := make([]uint16, n)
				ternaryMulKronDepth(c, aw, sumMod(a), tw, make([]uint64, kronScratchWords(m)), depth)
				eqU16(t, fmt.Sprintf("n=%d depth %d trial %d", n, depth, trial), c, naiveMul(a, tr))
			}
		}
	}
}
