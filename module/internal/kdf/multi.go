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

// Multi is AES-256 under one key over many blocks per call: each 16-byte
// block of the buffer is encrypted in place on its own (the blocks are
// separate PRF inputs). It runs the AES-NI kernel where the CPU has it,
// crypto/aes otherwise (and under purego).
type Multi struct{ m multi }

// NewMulti keys a Multi.
func NewMulti(key *[32]byte) (*Multi, error) {
	m, err := newMulti(key)
	if err != nil {
		return nil, err
	}
	return &Multi{m}, nil
}

// Encrypt encrypts every whole 16-byte block of buf in place.
func (m *Multi) Encrypt(buf []byte) { m.m.encrypt(buf[:len(buf)&^15]) }
