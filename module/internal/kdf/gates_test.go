package kdf

import (
	"bytes"
	"testing"
)

// A gates stream is a function of the root key and the whole description:
// the same description gives the same words at every module of the pair,
// any other description (one byte changed, one appended) other words, and
// positions within one stream are separated.
func TestGateStream(t *testing.T) {
	kr := bytes.Repeat([]byte{7}, 32)
	mk := func() *PRF {
		p, err := NewPRF((*[32]byte)(kr))
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	a, b := mk(), mk()
	desc := []byte("kord/v1/llama-gates\x03\x20\x05 counts and counter")
	words := func(p *PRF, d []byte, j uint64) [5]uint64 {
		s, err := p.GateStream(d)
		if err != nil {
			t.Fatal(err)
		}
		var w [5]uint64
		GateWords(s, j, w[:])
		return w
	}
	w0 := words(a, desc, 0)
	if w0 != words(b, desc, 0) {
		t.Fatal("two modules of a pair draw different words for one description")
	}
	if w0 == words(a, desc, 1) {
		t.Fatal("positions 0 and 1 draw the same words")
	}
	for i := range desc {
		d := bytes.Clone(desc)
		d[i] ^= 1
		if words(a, d, 0) == w0 {
			t.Fatalf("a description changed in byte %d draws the same words", i)
		}
	}
	if words(a, append(bytes.Clone(desc), 0), 0) == w0 {
		t.Fatal("a longer description draws the same words")
	}
	if w0[0] == w0[2] || w0[1] == w0[3] {
		t.Fatal("blocks within a position repeat")
	}
}
