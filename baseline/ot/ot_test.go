package ot

import (
	"bytes"
	"crypto/rand"
	"errors"
	"math/bits"
	mrand "math/rand/v2"
	"testing"
)

func randChoices(rng *mrand.Rand, n int) []bool {
	c := make([]bool, n)
	for i := range c {
		c[i] = rng.IntN(2) == 1
	}
	return c
}

// TestBaseOT: the receiver's key is exactly the sender's key of its
// choice, and differs from the other one.
func TestBaseOT(t *testing.T) {
	rng := mrand.New(mrand.NewPCG(1, 2))
	s, err := NewBaseSender(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	choices := randChoices(rng, 64)
	msg, keys, err := BaseReceive(rand.Reader, s.Message(), choices)
	if err != nil {
		t.Fatal(err)
	}
	k0, k1, err := s.Keys(msg, len(choices))
	if err != nil {
		t.Fatal(err)
	}
	for i, c := range choices {
		want, other := k0[i], k1[i]
		if c {
			want, other = other, want
		}
		if keys[i] != want {
			t.Fatalf("OT %d (choice %v): receiver key is not the sender's chosen key", i, c)
		}
		if keys[i] == other {
			t.Fatalf("OT %d: receiver key equals the other key too", i)
		}
	}
}

func TestBaseOTRejectsBadPoints(t *testing.T) {
	s, err := NewBaseSender(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := s.Keys(make([]byte, 31), 1); err == nil {
		t.Fatal("short message accepted")
	}
	// u = p (not reduced): all ones but the top bit, minus 18 in the low byte.
	bad := bytes.Repeat([]byte{0xff}, PointSize)
	bad[0] = 0xed
	bad[31] = 0x7f
	if _, _, err := s.Keys(bad, 1); !errors.Is(err, ErrPoint) {
		t.Fatalf("unreduced u: %v, want ErrPoint", err)
	}
	// Find a u on the twist: about half of all u are.
	u := make([]byte, PointSize)
	found := false
	for x := byte(2); x < 100 && !found; x++ {
		u[0] = x
		if _, err := lift(u, false); err != nil {
			found = true
		}
	}
	if !found {
		t.Fatal("no twist point among u < 100")
	}
	if _, _, err := s.Keys(u, 1); !errors.Is(err, ErrPoint) {
		t.Fatalf("twist point: %v, want ErrPoint", err)
	}
	if _, _, err := BaseReceive(rand.Reader, u, []bool{true}); !errors.Is(err, ErrPoint) {
		t.Fatalf("twist point as A: %v, want ErrPoint", err)
	}
}

// pair runs the setup of one session direction.
func pair(t testing.TB) (*Sender, *Receiver) {
	rs, m1, err := NewReceiverSetup(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	s, m2, err := NewSender(rand.Reader, m1)
	if err != nil {
		t.Fatal(err)
	}
	if len(m2) != BaseMessageSize {
		t.Fatalf("base flight is %d bytes, want %d", len(m2), BaseMessageSize)
	}
	r, err := rs.Finish(m2)
	if err != nil {
		t.Fatal(err)
	}
	return s, r
}

// TestExtension checks the OT definition over several batches of odd
// sizes and message lengths: the receiver obtains exactly m_c, and what it
// can compute for the other message is not m_{1−c} but a string whose bits
// are balanced (the pad of the other branch looks uniform to it).
func TestExtension(t *testing.T) {
	rng := mrand.New(mrand.NewPCG(3, 4))
	s, r := pair(t)
	ones, total := 0, 0
	for _, tc := range []struct{ m, msgLen int }{{1, 1}, {7, 16}, {130, 8}, {1000, 33}, {4096, 16}} {
		choices := randChoices(rng, tc.m)
		cols, rb, err := r.Choose(choices)
		if err != nil {
			t.Fatal(err)
		}
		if len(cols) != ColumnsSize(tc.m) {
			t.Fatalf("columns message %d bytes, want %d", len(cols), ColumnsSize(tc.m))
		}
		sb, err := s.Accept(cols, tc.m)
		if err != nil {
			t.Fatal(err)
		}
		m0, m1 := make([]byte, tc.m*tc.msgLen), make([]byte, tc.m*tc.msgLen)
		for i := range m0 {
			m0[i], m1[i] = byte(rng.Uint32()), byte(rng.Uint32())
		}
		// Send in two ranges, as the protocol does level by level.
		half := tc.m / 2
		var got []byte
		for _, rg := range [][2]int{{0, half}, {half, tc.m}} {
			if rg[0] == rg[1] {
				continue
			}
			lo, hi := rg[0]*tc.msgLen, rg[1]*tc.msgLen
			y, err := sb.Send(rg[0], tc.msgLen, m0[lo:hi], m1[lo:hi])
			if err != nil {
				t.Fatal(err)
			}
			part, err := rb.Receive(rg[0], rg[1]-rg[0], tc.msgLen, y)
			if err != nil {
				t.Fatal(err)
			}
			got = append(got, part...)
			// The other branch, unmasked with the receiver's own row.
			for k := rg[0]; k < rg[1]; k++ {
				c := 0
				if choices[k] {
					c = 1
				}
				other := append([]byte(nil), y[(2*(k-rg[0])+1-c)*tc.msgLen:][:tc.msgLen]...)
				row := rb.rows[k]
				xorPad(other, rb.first+uint64(k), &row)
				want := m0[k*tc.msgLen : (k+1)*tc.msgLen]
				if c == 0 {
					want = m1[k*tc.msgLen : (k+1)*tc.msgLen]
				}
				if tc.msgLen >= 8 && bytes.Equal(other, want) {
					t.Fatalf("OT %d: the receiver's row also unmasks the other message", k)
				}
				for i := range other {
					ones += bits.OnesCount8(other[i] ^ want[i])
					total += 8
				}
			}
		}
		for k, c := range choices {
			want := m0[k*tc.msgLen : (k+1)*tc.msgLen]
			if c {
				want = m1[k*tc.msgLen : (k+1)*tc.msgLen]
			}
			if !bytes.Equal(got[k*tc.msgLen:(k+1)*tc.msgLen], want) {
				t.Fatalf("m=%d OT %d choice %v: received the wrong message", tc.m, k, c)
			}
		}
	}
	// The receiver's guess at m_{1−c} is off by a pad that should be
	// uniform: over ~1.1 M bits, 50% ± 1% is > 20 standard deviations wide.
	if f := float64(ones) / float64(total); f < 0.49 || f > 0.51 {
		t.Fatalf("the other branch's pad has %.4f ones, want ≈ 0.5", f)
	}
}

// TestColumnsHideChoices: the sender's view (the columns) is balanced
// whatever the choices: all-zero and all-one choice vectors give columns
// with ≈ 50% ones.
func TestColumnsHideChoices(t *testing.T) {
	_, r := pair(t)
	for _, c := range []bool{false, true} {
		choices := make([]bool, 8192)
		for i := range choices {
			choices[i] = c
		}
		cols, _, err := r.Choose(choices)
		if err != nil {
			t.Fatal(err)
		}
		ones := 0
		for _, b := range cols {
			ones += bits.OnesCount8(b)
		}
		if f := float64(ones) / float64(8*len(cols)); f < 0.495 || f > 0.505 {
			t.Fatalf("choices all %v: columns have %.4f ones, want ≈ 0.5", c, f)
		}
	}
}

func TestMalformed(t *testing.T) {
	s, r := pair(t)
	cols, rb, err := r.Choose([]bool{true, false, true})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Accept(cols[:len(cols)-1], 3); !errors.Is(err, ErrMessage) {
		t.Fatalf("short columns: %v", err)
	}
	if _, err := s.Accept(cols, 0); !errors.Is(err, ErrMessage) {
		t.Fatalf("zero OTs: %v", err)
	}
	if _, err := rb.Receive(0, 3, 8, make([]byte, 47)); !errors.Is(err, ErrMessage) {
		t.Fatalf("short messages: %v", err)
	}
	if _, err := rb.Receive(2, 2, 8, make([]byte, 32)); !errors.Is(err, ErrMessage) {
		t.Fatalf("range outside batch: %v", err)
	}
	if _, _, err := r.Choose(nil); err == nil {
		t.Fatal("empty batch accepted")
	}
}

// TestFork: a receiver's fork and its sender's fork of the same id are an
// OT pair (the receiver gets exactly m_c), independent of the parent (the
// parent's pair still works afterwards) and of other forks (a mismatched
// id does not decode).
func TestFork(t *testing.T) {
	rng := mrand.New(mrand.NewPCG(13, 14))
	s, r := pair(t)
	run := func(s *Sender, r *Receiver) bool {
		choices := randChoices(rng, 100)
		cols, rb, err := r.Choose(choices)
		if err != nil {
			t.Fatal(err)
		}
		sb, err := s.Accept(cols, len(choices))
		if err != nil {
			t.Fatal(err)
		}
		m0, m1 := make([]byte, 100*16), make([]byte, 100*16)
		for i := range m0 {
			m0[i], m1[i] = byte(rng.Uint32()), byte(rng.Uint32())
		}
		y, err := sb.Send(0, 16, m0, m1)
		if err != nil {
			t.Fatal(err)
		}
		got, err := rb.Receive(0, 100, 16, y)
		if err != nil {
			t.Fatal(err)
		}
		for k, c := range choices {
			want := m0[k*16 : (k+1)*16]
			if c {
				want = m1[k*16 : (k+1)*16]
			}
			if !bytes.Equal(got[k*16:(k+1)*16], want) {
				return false
			}
		}
		return true
	}
	for _, id := range []uint64{1, 2, 7} {
		fs, err := s.Fork(id)
		if err != nil {
			t.Fatal(err)
		}
		fr, err := r.Fork(id)
		if err != nil {
			t.Fatal(err)
		}
		if !run(fs, fr) {
			t.Fatalf("fork %d: the receiver did not get m_c", id)
		}
	}
	if !run(s, r) {
		t.Fatal("the parent pair broke after forking")
	}
	fs, _ := s.Fork(3)
	fr, _ := r.Fork(4)
	if run(fs, fr) {
		t.Fatal("forks 3 and 4 form an OT pair")
	}
	if _, err := r.Fork(0); err == nil {
		t.Fatal("fork id 0 accepted")
	}
	if _, err := s.Fork(MaxForks); err == nil {
		t.Fatal("fork id MaxForks accepted")
	}
}
