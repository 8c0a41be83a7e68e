// Package kdf is the key schedule of a paired module: it expands the
// channel secret K_ch into the root key kr, the frame key kp, the keystream
// key K_otp and their per-direction subkeys, and derives per-key root seeds
// and derived masks from kr and the lockstep counter. Every label is
// domain-separated and listed in docs/protocol.md.
package kdf

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/hkdf"
	"crypto/sha256"
	"encoding/binary"
	"fmt"
)

// HKDF labels (the info strings). Direction subkeys append the direction
// byte (0 or 1: the party that sends the frame).
const (
	LabelChannel   = "kord/v1/pair/channel"
	LabelConfirm   = "kord/v1/pair/confirm/"
	LabelRoot      = "kord/v1/kr"
	LabelFrame     = "kord/v1/kp"
	LabelKeystream = "kord/v1/otp"
	LabelMACDir    = "kord/v1/kp/mac/dir"
	LabelBatchDir  = "kord/v1/kp/batchmac/dir"
	LabelOTPDir    = "kord/v1/otp/dir"
)

// PRF domains for the blocks AES_kr(domain ‖ counter ‖ index ‖ 0…).
const (
	DomainRoots   = 0x01
	DomainDerived = 0x02
)

// Keys is the expanded schedule of one pairing.
type Keys struct {
	Root  [32]byte    // kr
	MAC   [2][32]byte // per-direction AES-256-GCM keys for the mac tier
	Batch [2][32]byte // per-direction AES-256-GCM keys for the batched mac tier
	OTP   [2][32]byte // per-direction AES-256-CTR keys for the keystream tier
}

func expand(prk []byte, label string, out []byte) error {
	k, err := hkdf.Expand(sha256.New, prk, label, len(out))
	if err != nil {
		return fmt.Errorf("kdf: expanding %s: %w", label, err)
	}
	copy(out, k)
	clear(k)
	return nil
}

// Derive expands the 32-byte channel secret K_ch into the schedule.
func Derive(kch []byte) (*Keys, error) {
	if len(kch) != 32 {
		return nil, fmt.Errorf("kdf: channel secret is %d bytes, want 32", len(kch))
	}
	var k Keys
	var kp, kotp [32]byte
	defer clear(kp[:])
	defer clear(kotp[:])
	if err := expand(kch, LabelRoot, k.Root[:]); err != nil {
		return nil, err
	}
	if err := expand(kch, LabelFrame, kp[:]); err != nil {
		return nil, err
	}
	if err := expand(kch, LabelKeystream, kotp[:]); err != nil {
		return nil, err
	}
	for d := 0; d < 2; d++ {
		dir := string([]byte{byte('0' + d)})
		if err := expand(kp[:], LabelMACDir+dir, k.MAC[d][:]); err != nil {
			return nil, err
		}
		if err := expand(kp[:], LabelBatchDir+dir, k.Batch[d][:]); err != nil {
			return nil, err
		}
		if err := expand(kotp[:], LabelOTPDir+dir, k.OTP[d][:]); err != nil {
			return nil, err
		}
	}
	return &k, nil
}

// Wipe overwrites the schedule.
func (k *Keys) Wipe() { *k = Keys{} }

// PRF is AES-256 under kr, used as a PRF on domain-separated blocks. The
// expanded AES key lives inside crypto/aes and cannot be wiped from Go.
type PRF struct{ b cipher.Block }

// NewPRF keys the PRF with kr.
func NewPRF(kr *[32]byte) (*PRF, error) {
	b, err := aes.NewCipher(kr[:])
	if err != nil {
		return nil, fmt.Errorf("kdf: keying the root PRF: %w", err)
	}
	return &PRF{b: b}, nil
}

// Block computes AES_kr(domain ‖ counter(8, LE) ‖ index ‖ 0…) into out.
func (p *PRF) Block(domain byte, counter uint64, index byte, out *[16]byte) {
	var in [16]byte
	in[0] = domain
	binary.LittleEndian.PutUint64(in[1:9], counter)
	in[9] = index
	p.b.Encrypt(out[:], in[:])
}

// Roots derives both root seeds of the key at counter. Both modules of a
// pair compute the same roots; they are never transmitted.
func (p *PRF) Roots(counter uint64) (r0, r1 [16]byte) {
	p.Block(DomainRoots, counter, 0, &r0)
	p.Block(DomainRoots, counter, 1, &r1)
	return
}

// Derived returns the derived-mode values of the key at counter: α, party
// 0's share of α, β and party 0's share of β, each a full 64-bit word for
// the caller to reduce.
func (p *PRF) Derived(counter uint64) (alpha, alpha0, beta, beta0 uint64) {
	var a, b [16]byte
	p.Block(DomainDerived, counter, 0, &a)
	p.Block(DomainDerived, counter, 1, &b)
	alpha = binary.LittleEndian.Uint64(a[:8])
	alpha0 = binary.LittleEndian.Uint64(a[8:])
	beta = binary.LittleEndian.Uint64(b[:8])
	beta0 = binary.LittleEndian.Uint64(b[8:])
	clear(a[:])
	clear(b[:])
	return
}
