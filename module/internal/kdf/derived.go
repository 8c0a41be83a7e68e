package kdf

import "encoding/binary"

// Derived-mode keys: the modules draw α, β (and a payload vector's
// elements) and party 0's shares of them from kr. Each word is drawn under
// the key's whole description, as its roots are: block j of the key at a
// counter is
//
//	AES_{k_der}(counter(8, LE) ‖ mode ‖ type ‖ ℓ ‖ n ‖ j ‖ G ‖ deriveβ ‖ 0)
//
// with k_der = AES_kr(DomainDerivedKey ‖ 0 ‖ 0) ‖ AES_kr(DomainDerivedKey
// ‖ 0 ‖ 1), G the payload elements (1 for one) and deriveβ 1 when β is
// drawn. Block 0 holds α and party 0's share of it, block 1 β (element 0)
// and its share, block 1+j element j ≥ 1 of a payload vector and its
// share. A module asked for another shape at the same counter draws under
// another input, so no word of one shape's draw is a word of another's.

// DerivedShape is the description a derived key's words are drawn under.
type DerivedShape struct {
	Mode, Type, InBits, OutBits byte
	G                           int // payload elements; 0 or 1: one
	DeriveBeta                  bool
}

// derivedInput writes the input of block j of the key at counter to x.
func (s *DerivedShape) derivedInput(x []byte, counter uint64, j int) {
	binary.LittleEndian.PutUint64(x[0:8], counter)
	x[8], x[9], x[10], x[11] = s.Mode, s.Type, s.InBits, s.OutBits
	x[12] = byte(j)
	x[13] = byte(max(s.G, 1))
	x[14] = 0
	if s.DeriveBeta {
		x[14] = 1
	}
	x[15] = 0
}

// Derived returns the derived-mode values of the key at counter with
// shape s: α, party 0's share of α, β (element 0) and party 0's share of
// it, each a full 64-bit word for the caller to reduce.
func (p *PRF) Derived(counter uint64, s *DerivedShape) (alpha, alpha0, beta, beta0 uint64) {
	var x [32]byte
	s.derivedInput(x[:16], counter, 0)
	s.derivedInput(x[16:], counter, 1)
	p.derm.encrypt(x[:])
	alpha = binary.LittleEndian.Uint64(x[0:8])
	alpha0 = binary.LittleEndian.Uint64(x[8:16])
	beta = binary.LittleEndian.Uint64(x[16:24])
	beta0 = binary.LittleEndian.Uint64(x[24:32])
	clear(x[:])
	return
}

// DerivedBatch sets alpha[i], alpha0[i], beta[i], beta0[i] to
// Derived(first+i, s) for every i < len(alpha); every slice must be as
// long as alpha.
func (p *PRF) DerivedBatch(first uint64, s *DerivedShape, alpha, alpha0, beta, beta0 []uint64) {
	n := len(alpha)
	alpha0, beta, beta0 = alpha0[:n], beta[:n], beta0[:n]
	if cap(p.scratch) < 32*n {
		p.scratch = make([]byte, 32*n)
	}
	x := p.scratch[:32*n]
	defer clear(x)
	for i := range n {
		c := first + uint64(i)
		s.derivedInput(x[32*i:32*i+16], c, 0)
		s.derivedInput(x[32*i+16:32*i+32], c, 1)
	}
	p.derm.encrypt(x)
	for i := range n {
		b := x[32*i : 32*(i+1)]
		alpha[i] = binary.LittleEndian.Uint64(b[0:8])
		alpha0[i] = binary.LittleEndian.Uint64(b[8:16])
		beta[i] = binary.LittleEndian.Uint64(b[16:24])
		beta0[i] = binary.LittleEndian.Uint64(b[24:32])
	}
}

// DerivedBetas sets beta[i·g+j], beta0[i·g+j] (j ≥ 1) to element j of the
// derived payload of the key at first+i (shape s, s.G = g) and party 0's
// share of it, for every i < len(beta)/g; elements j = 0 are left as they
// are (DerivedBatch makes them). Full 64-bit words for the caller to
// reduce.
func (p *PRF) DerivedBetas(first uint64, s *DerivedShape, beta, beta0 []uint64) {
	g := s.G
	if g <= 1 {
		return
	}
	n := len(beta) / g
	m := n * (g - 1)
	if cap(p.scratch) < 16*m {
		p.scratch = make([]byte, 16*m)
	}
	x := p.scratch[:16*m]
	defer clear(x)
	for i := range n {
		for j := 1; j < g; j++ {
			s.derivedInput(x[16*(i*(g-1)+j-1):], first+uint64(i), 1+j)
		}
	}
	p.derm.encrypt(x)
	for i := range n {
		for j := 1; j < g; j++ {
			b := x[16*(i*(g-1)+j-1):]
			beta[i*g+j] = binary.LittleEndian.Uint64(b[0:8])
			beta0[i*g+j] = binary.LittleEndian.Uint64(b[8:16])
		}
	}
}
