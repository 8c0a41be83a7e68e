package llama

import (
	"encoding/binary"
	"errors"
	"math/rand/v2"
	"testing"
)

// TestDualDCF: key packs built from a DCF for payload1 − payload2 and
// shares of payload2 evaluate, as LLAMA's evalDualDCF does (the DCF share
// plus the party's sb), to payload1 below α and payload2 from α on, and
// have LLAMA's size; bad shares are refused.
func TestDualDCF(t *testing.T) {
	r := rand.New(rand.NewPCG(51, 52))
	for _, p := range []Params{{InBits: 16, OutBits: 8, Group: 1}, {InBits: 31, OutBits: 64, Group: 2}, {InBits: 7, OutBits: 20, Group: 5}} {
		m := mask(p.OutBits)
		alpha := r.Uint64() & mask(p.InBits)
		p1, p2, diff, sb0, sb1 := make([]uint64, p.Group), make([]uint64, p.Group), make([]uint64, p.Group), make([]uint64, p.Group), make([]uint64, p.Group)
		for i := range p1 {
			p1[i], p2[i] = r.Uint64()&m, r.Uint64()&m
			diff[i] = (p1[i] - p2[i]) & m
			sb0[i] = r.Uint64() & m
			sb1[i] = (p2[i] - sb0[i]) & m
		}
		r0, r1 := randomRoots(r)
		k0, k1, err := Gen(p, alpha, diff, r0, r1)
		if err != nil {
			t.Fatal(err)
		}
		d0, err := AppendDualDCF(nil, p, k0, sb0)
		if err != nil {
			t.Fatal(err)
		}
		d1, err := AppendDualDCF(nil, p, k1, sb1)
		if err != nil {
			t.Fatal(err)
		}
		if len(d0) != p.DualDCFSize() || len(d1) != p.DualDCFSize() {
			t.Fatalf("%v: DualDCF packs of %d and %d bytes, want %d", p, len(d0), len(d1), p.DualDCFSize())
		}
		e := ElemBytes(p.OutBits)
		readSB := func(pack []byte) []uint64 {
			out := make([]uint64, p.Group)
			for i := range out {
				var b [8]byte
				copy(b[:], pack[p.KeySize()+i*e:p.KeySize()+(i+1)*e])
				out[i] = binary.LittleEndian.Uint64(b[:])
			}
			return out
		}
		kk0, _ := Parse(p, d0[:p.KeySize()])
		kk1, _ := Parse(p, d1[:p.KeySize()])
		s0, s1 := readSB(d0), readSB(d1)
		for _, x := range []uint64{0, mask(p.InBits), alpha, (alpha - 1) & mask(p.InBits), (alpha + 1) & mask(p.InBits)} {
			y0, _ := Eval(0, kk0, x)
			y1, _ := Eval(1, kk1, x)
			for i := range y0 {
				want := p2[i]
				if x < alpha {
					want = p1[i]
				}
				if got := (y0[i] + s0[i] + y1[i] + s1[i]) & m; got != want {
					t.Fatalf("%v α=%d x=%d element %d: %d, want %d", p, alpha, x, i, got, want)
				}
			}
		}
		if _, err := AppendDualDCF(nil, p, k0, sb0[:p.Group-1]); !errors.Is(err, ErrPayload) {
			t.Fatalf("short sb: %v", err)
		}
		if p.OutBits < 64 {
			bad := append([]uint64(nil), sb0...)
			bad[0] = m + 1
			if _, err := AppendDualDCF(nil, p, k0, bad); !errors.Is(err, ErrValue) {
				t.Fatalf("sb wider than Bout: %v", err)
			}
		}
		if _, err := AppendDualDCF(nil, p, k0[1:], sb0); !errors.Is(err, ErrLength) {
			t.Fatalf("short DCF key: %v", err)
		}
	}
}
