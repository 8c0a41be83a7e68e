package llama

import (
	"crypto/rand"
	"encoding/binary"
	"errors"
	mrand "math/rand/v2"
	"strings"
	"testing"
)

// RandomGateSecrets draws a pack's secrets at random (crypto/rand): what
// an in-process dealer uses, and the tests' source.
func randomSecrets(t testing.TB, g Gate) GateSecrets {
	t.Helper()
	s, err := RandomGateSecrets(g)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// signed reads v as a two's-complement bw-bit integer.
func signed(v uint64, bw int) int64 {
	v &= mask(bw)
	if bw < 64 && v>>uint(bw-1) == 1 {
		return int64(v) - int64(1)<<uint(bw)
	}
	return int64(v)
}

// gateWant is the gate's function on plain (unmasked) inputs, written from
// its definition, not from LLAMA's evaluation.
func gateWant(g Gate, x, y uint64) uint64 {
	bw := g.Bits
	m := mask(bw)
	switch g.Kind {
	case GateReLU:
		if signed(x, bw) > 0 {
			return x & m
		}
		return 0
	case GateARS:
		return uint64(signed(x, bw)>>uint(g.Shift)) & m
	default:
		if signed(x, bw) >= signed(y, bw) {
			return x & m
		}
		return y & m
	}
}

// smallPair draws x, y with |x| + |y| < 2^(bw−1) (MaxPool's domain).
func smallPair(r *mrand.Rand, bw int) (uint64, uint64) {
	lim := uint64(1) << uint(bw-2) // |x|, |y| < 2^(bw−2)
	x := int64(r.Uint64()%lim) * (1 - 2*int64(r.IntN(2)))
	y := int64(r.Uint64()%lim) * (1 - 2*int64(r.IntN(2)))
	return uint64(x), uint64(y)
}

// TestGatesRandom: packs made from random secrets, evaluated by both
// parties at random masked inputs, open to f(x) + r_out, at widths 8, 16,
// 37 and 64 and several shifts.
func TestGatesRandom(t *testing.T) {
	r := mrand.New(mrand.NewPCG(1, 2))
	for _, bw := range []int{8, 16, 37, 64} {
		gates := []Gate{{Kind: GateReLU, Bits: bw}, {Kind: GateMaxPool, Bits: bw}}
		for _, s := range []int{1, 3, bw / 2, bw - 1} {
			gates = append(gates, Gate{Kind: GateARS, Bits: bw, Shift: s})
		}
		for _, g := range gates {
			const n = 6
			sec := make([]GateSecrets, n)
			for i := range sec {
				sec[i] = randomSecrets(t, g)
			}
			size := g.PackSize()
			out0, out1 := make([]byte, n*size), make([]byte, n*size)
			if err := GenGates(g, sec, out0, out1); err != nil {
				t.Fatal(err)
			}
			p0, err := SplitGates(g, out0)
			if err != nil {
				t.Fatal(err)
			}
			p1, err := SplitGates(g, out1)
			if err != nil {
				t.Fatal(err)
			}
			m := mask(bw)
			for i := range n {
				for k := 0; k < 40; k++ {
					var x, y uint64
					switch {
					case g.Kind == GateMaxPool:
						x, y = smallPair(r, bw)
					case k < 8: // the edges: 0, ±1, ±2^(bw−1)
						x = []uint64{0, 1, m, 1 << uint(bw-1), 1<<uint(bw-1) - 1, 1<<uint(bw-1) + 1, 2, m - 1}[k]
					default:
						x = r.Uint64()
					}
					x, y = x&m, y&m
					xh, yh := (x+sec[i].RIn[0])&m, (y+sec[i].RIn[1])&m
					o0, err0 := p0[i].Eval(0, xh, yh)
					o1, err1 := p1[i].Eval(1, xh, yh)
					if err0 != nil || err1 != nil {
						t.Fatal(err0, err1)
					}
					got := (o0 + o1 - sec[i].ROut) & m
					if want := gateWant(g, x, y); got != want {
						t.Fatalf("%v pack %d at x=%d y=%d: opens to %d, want %d", g, i, signed(x, bw), signed(y, bw), signed(got, bw), signed(want, bw))
					}
				}
			}
		}
	}
}

// TestGatesPartyHalves: each party's half alone is that half of the pair.
func TestGatesPartyHalves(t *testing.T) {
	for _, g := range []Gate{{Kind: GateReLU, Bits: 24}, {Kind: GateARS, Bits: 40, Shift: 12}, {Kind: GateMaxPool, Bits: 9}} {
		sec := []GateSecrets{randomSecrets(t, g), randomSecrets(t, g), randomSecrets(t, g)}
		n := len(sec) * g.PackSize()
		a0, a1, b0, b1 := make([]byte, n), make([]byte, n), make([]byte, n), make([]byte, n)
		if err := GenGates(g, sec, a0, a1); err != nil {
			t.Fatal(err)
		}
		if err := GenGatesParty(g, 0, sec, b0); err != nil {
			t.Fatal(err)
		}
		if err := GenGatesParty(g, 1, sec, b1); err != nil {
			t.Fatal(err)
		}
		if string(a0) != string(b0) || string(a1) != string(b1) {
			t.Fatalf("%v: GenGatesParty differs from GenGates", g)
		}
	}
}

// TestGateRefusals: bad shapes and secrets are refused naming the field.
func TestGateRefusals(t *testing.T) {
	for _, c := range []struct {
		g    Gate
		want string
	}{
		{Gate{Kind: GateReLU, Bits: 7}, "bits"},
		{Gate{Kind: GateReLU, Bits: 65}, "bits"},
		{Gate{Kind: GateARS, Bits: 16, Shift: 0}, "shift"},
		{Gate{Kind: GateARS, Bits: 16, Shift: 16}, "shift"},
		{Gate{Kind: GateMaxPool, Bits: 16, Shift: 2}, "shift"},
		{Gate{Kind: 9, Bits: 16}, "kind"},
	} {
		err := c.g.Validate()
		if err == nil || !errors.Is(err, ErrGate) || !strings.Contains(err.Error(), c.want+":") {
			t.Errorf("%+v: %v, want an ErrGate naming %s", c.g, err, c.want)
		}
		if err := GenGatesParty(c.g, 0, nil, nil); err == nil {
			t.Errorf("%+v: GenGatesParty accepted it", c.g)
		}
	}
	g := Gate{Kind: GateMaxPool, Bits: 16}
	good := randomSecrets(t, g)
	for name, f := range map[string]func(s *GateSecrets){
		"r_in[1]":  func(s *GateSecrets) { s.RIn[1] = 1 << 16 },
		"r_out":    func(s *GateSecrets) { s.ROut = 1 << 20 },
		"roots":    func(s *GateSecrets) { s.Roots[0][1][0] = s.Roots[0][0][0] },
		"split[5]": func(s *GateSecrets) { s.Split[5] = 1 << 16 },
	} {
		s := good
		f(&s)
		out := make([]byte, g.PackSize())
		if err := GenGatesParty(g, 1, []GateSecrets{s}, out); err == nil || !errors.Is(err, ErrGate) {
			t.Errorf("%s out of range: %v", name, err)
		}
	}
	out := make([]byte, g.PackSize()-1)
	if err := GenGatesParty(g, 0, []GateSecrets{good}, out); err == nil {
		t.Error("a short output buffer was accepted")
	}
	if err := GenGatesParty(g, 2, []GateSecrets{good}, make([]byte, g.PackSize())); !errors.Is(err, ErrParty) {
		t.Errorf("party 2: %v", err)
	}
}

// TestParseGateStrict: a pack with a share field wider than Bits, or of
// the wrong length, is refused.
func TestParseGateStrict(t *testing.T) {
	g := Gate{Kind: GateARS, Bits: 12, Shift: 5}
	sec := randomSecrets(t, g)
	k0, k1 := make([]byte, g.PackSize()), make([]byte, g.PackSize())
	if err := GenGates(g, []GateSecrets{sec}, k0, k1); err != nil {
		t.Fatal(err)
	}
	if _, err := ParseGate(g, k0); err != nil {
		t.Fatal(err)
	}
	bad := append([]byte(nil), k0...)
	binary.LittleEndian.PutUint16(bad[len(bad)-2:], 1<<12) // rb: 2 bytes, bit 12 set
	if _, err := ParseGate(g, bad); err == nil || !strings.Contains(err.Error(), "share field 2") {
		t.Errorf("a wide rb: %v", err)
	}
	if _, err := ParseGate(g, k0[1:]); err == nil {
		t.Error("a short pack was accepted")
	}
	if _, err := SplitGates(g, append(k0, 0)); err == nil {
		t.Error("a trailing byte was accepted")
	}
}

func FuzzParseGate(f *testing.F) {
	for _, g := range []Gate{{Kind: GateReLU, Bits: 8}, {Kind: GateARS, Bits: 9, Shift: 3}, {Kind: GateMaxPool, Bits: 8}} {
		s, _ := RandomGateSecrets(g)
		k0, k1 := make([]byte, g.PackSize()), make([]byte, g.PackSize())
		if err := GenGates(g, []GateSecrets{s}, k0, k1); err != nil {
			f.Fatal(err)
		}
		f.Add(uint8(g.Kind), uint8(g.Bits), uint8(g.Shift), k0)
		f.Add(uint8(g.Kind), uint8(g.Bits), uint8(g.Shift), k1)
	}
	f.Fuzz(func(t *testing.T, kind, bits, shift uint8, data []byte) {
		g := Gate{Kind: GateKind(kind), Bits: int(bits), Shift: int(shift)}
		pk, err := ParseGate(g, data)
		if err != nil {
			return
		}
		if len(data) != g.PackSize() {
			t.Fatalf("%v: parsed %d bytes, pack is %d", g, len(data), g.PackSize())
		}
		var b [8]byte
		rand.Read(b[:])
		x := binary.LittleEndian.Uint64(b[:]) & mask(g.Bits)
		for party := range 2 {
			if _, err := pk.Eval(party, x, x/3); err != nil {
				t.Fatalf("a parsed pack does not evaluate: %v", err)
			}
		}
	})
}

// TestGatesEdgeMasksExhaustive: at 8 bits, masks at the edges of the ring
// (0, ±1, ±2^7) and every input x (MaxPool: every pair with |x| + |y| <
// 2^7 on a grid), every shift.
func TestGatesEdgeMasksExhaustive(t *testing.T) {
	const bw = 8
	edges := []uint64{0, 1, 255, 128, 127, 129, 2}
	gates := []Gate{{Kind: GateReLU, Bits: bw}, {Kind: GateMaxPool, Bits: bw}}
	for s := 1; s < bw; s++ {
		gates = append(gates, Gate{Kind: GateARS, Bits: bw, Shift: s})
	}
	for _, g := range gates {
		for _, r1 := range edges {
			for _, r2 := range []uint64{0, 255, 128} {
				sec := randomSecrets(t, g)
				sec.RIn[0] = r1
				if g.Kind == GateMaxPool {
					sec.RIn[1] = r2
				} else if r2 != 0 {
					continue
				}
				k0, k1 := make([]byte, g.PackSize()), make([]byte, g.PackSize())
				if err := GenGates(g, []GateSecrets{sec}, k0, k1); err != nil {
					t.Fatal(err)
				}
				p0, _ := ParseGate(g, k0)
				p1, _ := ParseGate(g, k1)
				check := func(x, y uint64) {
					xh, yh := (x+sec.RIn[0])&255, (y+sec.RIn[1])&255
					o0, _ := p0.Eval(0, xh, yh)
					o1, _ := p1.Eval(1, xh, yh)
					if got, want := (o0+o1-sec.ROut)&255, gateWant(g, x, y); got != want {
						t.Fatalf("%v r_in=(%d,%d) x=%d y=%d: %d, want %d", g, sec.RIn[0], sec.RIn[1], signed(x, bw), signed(y, bw), got, want)
					}
				}
				if g.Kind != GateMaxPool {
					for x := uint64(0); x < 256; x++ {
						check(x, 0)
					}
					continue
				}
				for x := int64(-63); x <= 63; x += 3 {
					for y := int64(-63); y <= 63; y += 5 {
						check(uint64(x)&255, uint64(y)&255)
					}
				}
			}
		}
	}
}
