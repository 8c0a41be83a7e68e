package kdf

import (
	"crypto/aes"
	"crypto/cipher"
	"fmt"
)

// schedule256 is an expanded AES-256 key: fifteen round keys.
type schedule256 [15][16]byte

// multi encrypts many blocks under one AES-256 key in one call: buf (a
// whole number of 16-byte blocks) is encrypted in place, block by block
// (ECB; each block is a separate PRF input).
type multi interface {
	encrypt(buf []byte)
}

// portable is multi over crypto/aes.
type portable struct{ b cipher.Block }

func newPortable(key *[32]byte) (multi, error) {
	b, err := aes.NewCipher(key[:])
	if err != nil {
		return nil, fmt.Errorf("kdf: keying the batch cipher: %w", err)
	}
	return portable{b}, nil
}

func (p portable) encrypt(buf []byte) {
	for i := 0; i+16 <= len(buf); i += 16 {
		p.b.Encrypt(buf[i:i+16], buf[i:i+16])
	}
}
