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
	DomainPairTag = 0x03 // the pair-tag subkey k_tag (two blocks, index 0 and 1)
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

// PRF is AES-256 under kr, used as a PRF on domain-separated blocks, and
// the pair-tag MAC under its subkey k_tag. The expanded AES keys live
// inside crypto/aes and cannot be wiped from Go.
//
// A PRF is not safe for concurrent use: it works in two blocks of its own
// (a buffer passed through the cipher.Block interface would be moved to
// the heap on every call, and left there, unwiped, holding root seeds),
// which it clears after each call.
type PRF struct {
	b   cipher.Block
	tag cipher.Block // AES-256 under k_tag = AES_kr(tag domain, 0) ‖ AES_kr(tag domain, 1)
	in  [16]byte
	out [16]byte
}

// NewPRF keys the PRF with kr and derives the pair-tag subkey from it.
func NewPRF(kr *[32]byte) (*PRF, error) {
	b, err := aes.NewCipher(kr[:])
	if err != nil {
		return nil, fmt.Errorf("kdf: keying the root PRF: %w", err)
	}
	p := &PRF{b: b}
	var kt [32]byte
	defer clear(kt[:])
	p.Block(DomainPairTag, 0, 0, (*[16]byte)(kt[:16]))
	p.Block(DomainPairTag, 0, 1, (*[16]byte)(kt[16:]))
	if p.tag, err = aes.NewCipher(kt[:]); err != nil {
		return nil, fmt.Errorf("kdf: keying the pair tag: %w", err)
	}
	return p, nil
}

// TagSize is the size of a pair tag.
const TagSize = 16

// PairTag is the tag both modules of a pair compute for the key at
// counter: a two-block CBC-MAC under k_tag (a PRF on these fixed-length
// inputs) of
//
//	counter(8, LE) ‖ mode ‖ type ‖ ℓ ‖ n ‖ 0…   then   α(8, LE) ‖ β(8, LE)
//
// — everything the dealer Gen of that key is a function of, its root
// seeds through the counter. Two modules' tags agree exactly when they
// generated the two shares of one key pair (up to a 2^-128 chance), and a
// tag, pseudorandom and never computed twice on one counter, tells a host
// nothing about α or β.
func (p *PRF) PairTag(counter uint64, mode, typ, inBits, outBits byte, alpha, beta uint64, out *[TagSize]byte) {
	x := p.in[:]
	clear(x)
	binary.LittleEndian.PutUint64(x[0:8], counter)
	x[8], x[9], x[10], x[11] = mode, typ, inBits, outBits
	p.tag.Encrypt(x, x)
	lo := binary.LittleEndian.Uint64(x[0:8]) ^ alpha
	hi := binary.LittleEndian.Uint64(x[8:16]) ^ beta
	binary.LittleEndian.PutUint64(x[0:8], lo)
	binary.LittleEndian.PutUint64(x[8:16], hi)
	p.tag.Encrypt(p.out[:], x)
	*out = p.out
	p.wipe()
}

// Block computes AES_kr(domain ‖ counter(8, LE) ‖ index ‖ 0…) into out.
func (p *PRF) Block(domain byte, counter uint64, index byte, out *[16]byte) {
	p.block(domain, counter, index)
	*out = p.out
	p.wipe()
}

// wipe clears the PRF's own blocks.
func (p *PRF) wipe() { p.in, p.out = [16]byte{}, [16]byte{} }

// block leaves AES_kr(domain ‖ counter(8, LE) ‖ index ‖ 0…) in p.out.
func (p *PRF) block(domain byte, counter uint64, index byte) {
	in := p.in[:]
	clear(in)
	in[0] = domain
	binary.LittleEndian.PutUint64(in[1:9], counter)
	in[9] = index
	p.b.Encrypt(p.out[:], in)
}

// Roots derives both root seeds of the key at counter. Both modules of a
// pair compute the same roots; they are never transmitted.
func (p *PRF) Roots(counter uint64) (r0, r1 [16]byte) {
	p.block(DomainRoots, counter, 0)
	r0 = p.out
	p.block(DomainRoots, counter, 1)
	r1 = p.out
	p.wipe()
	return
}

// Derived returns the derived-mode values of the key at counter: α, party
// 0's share of α, β and party 0's share of β, each a full 64-bit word for
// the caller to reduce.
func (p *PRF) Derived(counter uint64) (alpha, alpha0, beta, beta0 uint64) {
	p.block(DomainDerived, counter, 0)
	alpha = binary.LittleEndian.Uint64(p.out[:8])
	alpha0 = binary.LittleEndian.Uint64(p.out[8:])
	p.block(DomainDerived, counter, 1)
	beta = binary.LittleEndian.Uint64(p.out[:8])
	beta0 = binary.LittleEndian.Uint64(p.out[8:])
	p.wipe()
	return
}
