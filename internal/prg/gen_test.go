package prg

import (
	"bytes"
	"math/rand/v2"
	"testing"
)

// refDPFGenLevel is DPFGenLevel written from the spec (§3, steps 1–4) on
// crypto/aes, one key at a time.
func refDPFGenLevel(quads []Block, alpha []uint64, shift uint, out []byte, stride, cwOff, ctrlOff int, ctrlShift uint, roots bool) {
	for i := range alpha {
		c := [2]int{4*(i>>1) + i&1, 4*(i>>1) + i&1 + 2}
		var s [2]Block
		var t [2]byte
		for b := range 2 {
			s[b] = quads[c[b]]
			if roots {
				t[b] = byte(b)
			} else {
				t[b] = SplitControl(&s[b])
			}
		}
		var kids [2][2]Block // [party][L, R], control bit split off
		var tk [2][2]byte
		for b := range 2 {
			kids[b][0], kids[b][1] = reference(SeedLeft, s[b]), reference(SeedRight, s[b])
			tk[b][0], tk[b][1] = SplitControl(&kids[b][0]), SplitControl(&kids[b][1])
		}
		a := byte(alpha[i] >> shift & 1)
		keep, lose := a, 1-a
		var sCW Block
		for j := range sCW {
			sCW[j] = kids[0][lose][j] ^ kids[1][lose][j]
		}
		tCW := [2]byte{tk[0][0] ^ tk[1][0] ^ a ^ 1, tk[0][1] ^ tk[1][1] ^ a}
		copy(out[i*stride+cwOff:], sCW[:])
		out[i*stride+ctrlOff] |= (tCW[0] | tCW[1]<<1) << ctrlShift
		for b := range 2 {
			n := kids[b][keep]
			nt := tk[b][keep]
			if t[b] == 1 {
				for j := range n {
					n[j] ^= sCW[j]
				}
				nt ^= tCW[keep]
			}
			n[0] |= nt
			quads[c[b]] = n
		}
	}
}

// TestDPFGenLevel checks the fused DPF Gen level against refDPFGenLevel on
// random chains (the parties' control bits differing, as on every DPF Gen
// path) and α, for every even key count up to 40 (all main-loop, drain and
// tail paths), first level and later ones, every control-bit position.
func TestDPFGenLevel(t *testing.T) {
	withEachKernel(t, func(t *testing.T) {
		if !HasDPFGenLevel() {
			t.Skip("no fused DPF Gen level in this kernel")
		}
		r := rand.New(rand.NewPCG(7, 8))
		const stride = 37
		for n := 0; n <= 40; n += 2 {
			for _, roots := range []bool{true, false} {
				quads := make([]Block, 2*n)
				for i := range quads {
					for j := range quads[i] {
						quads[i][j] = byte(r.Uint32())
					}
				}
				for i := 0; i < n && !roots; i++ {
					t0 := byte(r.Uint32() & 1)
					c := 4*(i>>1) + i&1
					quads[c][0] = quads[c][0]&^1 | t0
					quads[c+2][0] = quads[c+2][0]&^1 | t0 ^ 1
				}
				alpha := make([]uint64, n)
				for i := range alpha {
					alpha[i] = r.Uint64()
				}
				shift, ctrlShift := uint(r.IntN(64)), uint(2*r.IntN(4))
				out := make([]byte, n*stride)
				for i := range out {
					out[i] = byte(r.Uint32())
				}
				wantQ, wantO := append([]Block(nil), quads...), append([]byte(nil), out...)
				refDPFGenLevel(wantQ, alpha, shift, wantO, stride, 3, 20, ctrlShift, roots)
				DPFGenLevel(quads, alpha, shift, out, stride, 3, 20, ctrlShift, roots)
				for i := range quads {
					if quads[i] != wantQ[i] {
						t.Fatalf("n=%d roots=%v: chain %d = %x, want %x", n, roots, i, quads[i], wantQ[i])
					}
				}
				if !bytes.Equal(out, wantO) {
					t.Fatalf("n=%d roots=%v: corrections differ\n got %x\nwant %x", n, roots, out, wantO)
				}
			}
		}
	})
}

// refDCFValues is DCFValues written from the spec (§4) on crypto/aes, one
// key at a time.
func refDCFValues(quads []Block, alpha []uint64, shift uint, beta, v []uint64, out []byte, stride, width int, mask uint64, roots bool) {
	for i := range alpha {
		c := [2]int{4*(i>>1) + i&1, 4*(i>>1) + i&1 + 2}
		var w [2][2]uint64 // [party][L, R]
		for b := range 2 {
			s := quads[c[b]]
			if !roots {
				SplitControl(&s)
			}
			l, r := reference(ValueLeft, s), reference(ValueRight, s)
			w[b] = [2]uint64{Convert(&l, 64), Convert(&r, 64)}
		}
		t1 := uint64(1)
		if !roots {
			t1 = uint64(quads[c[1]][0] & 1)
		}
		a := alpha[i] >> shift & 1
		keep, lose := a, 1-a
		x := w[1][lose] - w[0][lose] - v[i] + a*beta[i]
		vcw := x & mask
		if t1 == 1 {
			vcw = -x & mask
		}
		sv := vcw
		if t1 == 1 {
			sv = -vcw & mask
		}
		v[i] += w[0][keep] - w[1][keep] + sv
		for j := range width {
			out[i*stride+j] = byte(vcw >> (8 * j))
		}
	}
}

// TestDCFValues checks the fused DCF value level against refDCFValues on
// random chains, α, β and running values, for every even key count up to
// 40, both first and later levels and every field width it serves.
func TestDCFValues(t *testing.T) {
	withEachKernel(t, func(t *testing.T) {
		r := rand.New(rand.NewPCG(9, 10))
		for _, width := range []int{1, 2, 3, 4, 8} {
			if !HasDCFValues(width) {
				continue
			}
			for n := 0; n <= 40; n += 2 {
				for _, roots := range []bool{true, false} {
					bits := 1 + r.IntN(8*width)
					if width == 1 {
						bits = 1 + r.IntN(8)
					}
					mask := Mask(bits)
					quads := make([]Block, 2*n)
					for i := range quads {
						for j := range quads[i] {
							quads[i][j] = byte(r.Uint32())
						}
					}
					alpha, beta, v := make([]uint64, n), make([]uint64, n), make([]uint64, n)
					for i := range alpha {
						alpha[i], beta[i], v[i] = r.Uint64(), r.Uint64()&mask, r.Uint64()
					}
					const stride = 11
					out := make([]byte, n*stride)
					for i := range out {
						out[i] = byte(r.Uint32())
					}
					shift := uint(r.IntN(64))
					wantQ, wantO, wantV := append([]Block(nil), quads...), append([]byte(nil), out...), append([]uint64(nil), v...)
					refDCFValues(wantQ, alpha, shift, beta, wantV, wantO, stride, width, mask, roots)
					DCFValues(quads, alpha, shift, beta, v, out, stride, width, mask, roots)
					for i := range v {
						if v[i] != wantV[i] {
							t.Fatalf("width %d n=%d roots=%v: V[%d] = %#x, want %#x", width, n, roots, i, v[i], wantV[i])
						}
					}
					if !bytes.Equal(out, wantO) {
						t.Fatalf("width %d n=%d roots=%v: VCWs differ\n got %x\nwant %x", width, n, roots, out, wantO)
					}
					for i := range quads {
						if quads[i] != wantQ[i] {
							t.Fatalf("width %d n=%d: chain %d changed", width, n, i)
						}
					}
				}
			}
		}
	})
}

// TestFusedLayoutChecks checks that the fused Gen kernels refuse, with a
// panic and before touching memory, layouts that would write outside out:
// a negative stride passed the bounds check and made the kernels write
// below the start of out.
func TestFusedLayoutChecks(t *testing.T) {
	mustPanic := func(name string, f func()) {
		t.Helper()
		defer func() {
			if recover() == nil {
				t.Errorf("%s: no panic", name)
			}
		}()
		f()
	}
	quads := make([]Block, 8)
	alpha, beta, v := make([]uint64, 4), make([]uint64, 4), make([]uint64, 4)
	out := make([]byte, 4*40)
	mustPanic("DPFGenLevel stride -40", func() { DPFGenLevel(quads, alpha, 0, out[120:], -40, 0, 20, 0, true) })
	mustPanic("DCFValues stride -40", func() { DCFValues(quads, alpha, 0, beta, v, out[120:], -40, 8, Mask(64), true) })
	mustPanic("DCFValues width 9", func() { DCFValues(quads, alpha, 0, beta, v, out, 40, 9, Mask(64), true) })
	mustPanic("DPFGenLevel odd count", func() { DPFGenLevel(quads[:6], alpha[:3], 0, out, 40, 0, 20, 0, true) })
}
