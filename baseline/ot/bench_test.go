package ot

import (
	"crypto/rand"
	"testing"
)

// BenchmarkBaseSetup is one direction's setup: 128 base OTs.
func BenchmarkBaseSetup(b *testing.B) {
	for b.Loop() {
		pair(b)
	}
}

// BenchmarkExtension is 1024 OTs of 16-byte messages per iteration:
// choose, accept, send, receive.
func BenchmarkExtension(b *testing.B) {
	s, r := pair(b)
	const m, l = 1024, 16
	choices := make([]bool, m)
	m0, m1 := make([]byte, m*l), make([]byte, m*l)
	rand.Read(m0)
	b.SetBytes(m * l)
	for b.Loop() {
		cols, rb, err := r.Choose(choices)
		if err != nil {
			b.Fatal(err)
		}
		sb, err := s.Accept(cols, m)
		if err != nil {
			b.Fatal(err)
		}
		y, err := sb.Send(0, l, m0, m1)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := rb.Receive(0, m, l, y); err != nil {
			b.Fatal(err)
		}
	}
}
