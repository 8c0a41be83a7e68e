package llama

import (
	"crypto/aes"
	"crypto/cipher"
	"encoding/binary"
	"fmt"
)

// Plaintext counters of a node's PRG: left seed, right seed, left value,
// right value.
const (
	ctrSeedL = iota
	ctrSeedR
	ctrValL
	ctrValR
)

// aesKey is the AES key of node s: s with bits 0 and 1 cleared.
func aesKey(s Block) Block {
	s[0] &^= 3
	return s
}

// newCipher keys AES-128 with the 16 bytes of k. crypto/aes cannot fail on
// a 16-byte key; the error is passed on rather than assumed away.
func newCipher(k Block) (cipher.Block, error) {
	c, err := aes.NewCipher(k[:])
	if err != nil {
		return nil, fmt.Errorf("llama: AES key schedule: %w", err)
	}
	return c, nil
}

// counterBlock encrypts the block holding ctr little-endian in bytes 0..7.
func counterBlock(c cipher.Block, ctr uint64) (out Block) {
	var in Block
	binary.LittleEndian.PutUint64(in[:], ctr)
	c.Encrypt(out[:], in[:])
	return out
}

// converter turns blocks into group elements (LLAMA's convert) for one
// (Bout, Group); it owns the scratch of the AES-stream case.
type converter struct {
	outBits, group, w int
	m                 uint64
	stream            []byte // nil when w·group ≤ 16
	// ctr is the counter block of the stream's encryptions, kept here so
	// that passing it through cipher.Block does not move a fresh block
	// to the heap on every call (public: counters only).
	ctr [16]byte
}

func newConverter(p Params) *converter {
	w := (p.OutBits + 7) / 8
	c := &converter{outBits: p.OutBits, group: p.Group, w: w, m: mask(p.OutBits)}
	if w*p.Group > 16 {
		c.stream = make([]byte, 16*((w*p.Group+15)/16))
	}
	return c
}

// convert writes the group elements of b into out (len Group). Elements are
// read little-endian at offsets i·ceil(Bout/8), from b itself when they fit
// in it, else from AES_b(0) ‖ AES_b(1) ‖ … with b as the whole AES key.
func (cv *converter) convert(out []uint64, b Block) error {
	if cv.stream == nil && len(out) == 1 {
		// One element read at offset 0: the low eight bytes.
		out[0] = binary.LittleEndian.Uint64(b[:8]) & cv.m
		return nil
	}
	src := b[:]
	if cv.stream != nil {
		c, err := newCipher(b)
		if err != nil {
			return err
		}
		cv.ctr = [16]byte{}
		for j := 0; j*16 < len(cv.stream); j++ {
			binary.LittleEndian.PutUint64(cv.ctr[:8], uint64(j))
			c.Encrypt(cv.stream[16*j:16*(j+1)], cv.ctr[:])
		}
		src = cv.stream
	}
	for i := range out {
		if off := i * cv.w; off+8 <= len(src) {
			out[i] = binary.LittleEndian.Uint64(src[off:]) & cv.m
			continue
		}
		var tmp [8]byte
		copy(tmp[:], src[i*cv.w:]) // bytes past the source stay zero; they lie above Bout
		out[i] = binary.LittleEndian.Uint64(tmp[:]) & cv.m
	}
	return nil
}
