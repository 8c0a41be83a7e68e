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
	if !HasDPFGenLevel() {
		t.Skip("no fused DPF Gen kernel on this machine")
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
}
