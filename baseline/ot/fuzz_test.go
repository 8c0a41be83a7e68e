package ot

import (
	"crypto/rand"
	"testing"
)

// FuzzBaseMessages: any bytes as either base-OT flight give keys or an
// error, never a panic.
func FuzzBaseMessages(f *testing.F) {
	s, err := NewBaseSender(rand.Reader)
	if err != nil {
		f.Fatal(err)
	}
	msg, _, err := BaseReceive(rand.Reader, s.Message(), []bool{true, false})
	if err != nil {
		f.Fatal(err)
	}
	f.Add(msg, uint8(2))
	f.Add(s.Message(), uint8(1))
	f.Add(make([]byte, 32), uint8(1))
	f.Fuzz(func(t *testing.T, data []byte, n uint8) {
		_, _, _ = s.Keys(data, int(n%8))
		_, _, _ = BaseReceive(rand.Reader, data, []bool{true})
	})
}

// FuzzExtensionMessages: any bytes as a columns or messages message give
// a batch or an error, never a panic.
func FuzzExtensionMessages(f *testing.F) {
	s, r := pair(f)
	cols, rb, err := r.Choose(make([]bool, 9))
	if err != nil {
		f.Fatal(err)
	}
	f.Add(cols, uint16(9), uint8(0), uint8(9), uint8(8))
	f.Add([]byte{}, uint16(0), uint8(3), uint8(2), uint8(0))
	f.Fuzz(func(t *testing.T, data []byte, m uint16, lo, n, msgLen uint8) {
		if sb, err := s.Accept(data, int(m%512)); err == nil && sb.Len() != int(m%512) {
			t.Fatalf("accepted %d OTs as %d", m%512, sb.Len())
		}
		_, _ = rb.Receive(int(lo), int(n), int(msgLen), data)
	})
}
