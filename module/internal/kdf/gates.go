package kdf

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/sha256"
	"encoding/binary"
	"fmt"
)

// DomainLlamaGates is the PRF domain of derived LLAMA gate packs. It is
// far from the small domains (0x02…) so that other derived outputs can
// take the next ones.
const DomainLlamaGates = 0x4C

// GateStream keys the stream of one LLAMA gates request from its whole
// description desc (kind, width, shift, counts and first counter, as the
// caller encodes them): with d = SHA-256(DomainLlamaGates ‖ desc), the
// AES-256 key
//
//	AES_kr(DomainLlamaGates ‖ d[0:15]) ‖ AES_kr(DomainLlamaGates ‖ d[15:30])
//
// Two modules of a pair get the same stream exactly when they agree on
// the whole description; a request that differs in any field, at the
// same counter or not, gets an independent one. Position j, word block w
// of the request is then AES_key(j(8, LE) ‖ w(8, LE)) (GateWords), so
// every pack's draws are separated by its position.
func (p *PRF) GateStream(desc []byte) (cipher.Block, error) {
	h := sha256.New()
	h.Write([]byte{DomainLlamaGates})
	h.Write(desc)
	var d [32]byte
	h.Sum(d[:0])
	var k [32]byte
	defer clear(k[:])
	defer clear(d[:])
	for i := range 2 {
		in := p.in[:]
		in[0] = DomainLlamaGates
		copy(in[1:], d[15*i:15*i+15])
		p.b.Encrypt(k[16*i:16*i+16], in)
	}
	p.wipe()
	b, err := aes.NewCipher(k[:])
	if err != nil {
		return nil, fmt.Errorf("kdf: keying a gates stream: %w", err)
	}
	return b, nil
}

// GateWords fills out with the words of position j of a gates stream:
// two little-endian words per block AES_key(j ‖ w), w = 0, 1, ….
func GateWords(s cipher.Block, j uint64, out []uint64) {
	var in, blk [16]byte
	binary.LittleEndian.PutUint64(in[:8], j)
	for w := 0; 2*w < len(out); w++ {
		binary.LittleEndian.PutUint64(in[8:], uint64(w))
		s.Encrypt(blk[:], in[:])
		out[2*w] = binary.LittleEndian.Uint64(blk[:8])
		if 2*w+1 < len(out) {
			out[2*w+1] = binary.LittleEndian.Uint64(blk[8:])
		}
	}
	clear(blk[:])
}
