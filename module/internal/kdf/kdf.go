// Package kdf is the key schedule of a paired module: it expands the
// channel secret K_ch into the root key kr, the frame key kp, the keystream
// key K_otp and their per-direction subkeys; it derives each session's
// direction keys from K_ch and both modules' session challenges; and it
// derives per-key root seeds (bound to the key's counter, shape, α and β)
// and derived masks from kr. Every label and PRF domain is separated and
// listed in docs/protocol.md.
//
// Session keys. A module restored from its state file must never seal
// under a key it may have used before, so the frame and keystream keys are
// not fixed for the pairing: at every session start (the rollback witness
// exchange) both modules contribute a fresh 16-byte challenge, and
//
//	K_sess = HKDF-Expand(K_ch, "kord/v1/session", 32)      (held while paired)
//	PRK_s  = HKDF-Extract(salt = c0 ‖ c1, IKM = K_sess)     (c0: party 0's challenge)
//	kp_s   = HKDF-Expand(PRK_s, "kord/v1/kp", 32)
//	Kotp_s = HKDF-Expand(PRK_s, "kord/v1/otp", 32)
//
// with the direction subkeys drawn from kp_s and Kotp_s under the same
// labels as the pairing's. kr, and so every root and derived mask, stays
// the pairing's. Until its first session a freshly paired module uses the
// pairing's keys (Derive).
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
	LabelSession   = "kord/v1/session"
)

// PRF domains for the blocks AES_kr(domain ‖ counter ‖ index ‖ 0…).
// Domain 0x01 is retired: its blocks were the root seeds of the scheme
// before roots were bound to the key's inputs, and key shares made then
// carry them, so it is never used again.
const (
	DomainDerived = 0x02
	DomainPairTag = 0x03 // the pair-tag subkey k_tag (two blocks, index 0 and 1)
	DomainRootKey = 0x04 // the root subkey k_root (two blocks, index 0 and 1)
	// DomainDerivedKey is the subkey k_der of derived-mode α and β
	// (derived.go); the counter-only domains 0x02 and 0x06 that drew them
	// before are retired for draws.
	DomainDerivedKey = 0x08
)

// SessionChallengeSize is the size of each module's session challenge.
const SessionChallengeSize = 16

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
	if err := expand(kch, LabelRoot, k.Root[:]); err != nil {
		return nil, err
	}
	if err := k.directions(kch); err != nil {
		return nil, err
	}
	return &k, nil
}

// directions draws kp and K_otp from prk and the six direction keys from
// them, wiping kp and K_otp.
func (k *Keys) directions(prk []byte) error {
	var kp, kotp [32]byte
	defer clear(kp[:])
	defer clear(kotp[:])
	if err := expand(prk, LabelFrame, kp[:]); err != nil {
		return err
	}
	if err := expand(prk, LabelKeystream, kotp[:]); err != nil {
		return err
	}
	for d := 0; d < 2; d++ {
		dir := string([]byte{byte('0' + d)})
		if err := expand(kp[:], LabelMACDir+dir, k.MAC[d][:]); err != nil {
			return err
		}
		if err := expand(kp[:], LabelBatchDir+dir, k.Batch[d][:]); err != nil {
			return err
		}
		if err := expand(kotp[:], LabelOTPDir+dir, k.OTP[d][:]); err != nil {
			return err
		}
	}
	return nil
}

// SessionBase expands K_ch into K_sess, the key a paired module holds to
// derive each session's direction keys.
func SessionBase(kch []byte, out *[32]byte) error {
	if len(kch) != 32 {
		return fmt.Errorf("kdf: channel secret is %d bytes, want 32", len(kch))
	}
	return expand(kch, LabelSession, out[:])
}

// DeriveSession returns the direction keys of the session that c0 (party
// 0's challenge) and c1 (party 1's) start: see the package comment. Root
// is left zero; a session keeps the pairing's kr.
func DeriveSession(base *[32]byte, c0, c1 []byte) (*Keys, error) {
	if len(c0) != SessionChallengeSize || len(c1) != SessionChallengeSize {
		return nil, fmt.Errorf("kdf: session challenges are %d and %d bytes, want %d", len(c0), len(c1), SessionChallengeSize)
	}
	var salt [2 * SessionChallengeSize]byte
	copy(salt[:], c0)
	copy(salt[SessionChallengeSize:], c1)
	prk, err := hkdf.Extract(sha256.New, base[:], salt[:])
	if err != nil {
		return nil, fmt.Errorf("kdf: extracting the session key: %w", err)
	}
	defer clear(prk)
	var k Keys
	if err := k.directions(prk); err != nil {
		k.Wipe()
		return nil, err
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
	b    cipher.Block
	tag  cipher.Block // AES-256 under k_tag = AES_kr(tag domain, 0) ‖ AES_kr(tag domain, 1)
	root cipher.Block // AES-256 under k_root = AES_kr(root-key domain, 0) ‖ AES_kr(root-key domain, 1)
	in   [16]byte
	out  [16]byte

	// The same three keys for the batch forms (batch.go), many blocks a
	// call.
	bm, tagm, rootm multi
	scratch         []byte // DerivedBatch's blocks, wiped after each call

	der     cipher.Block // AES-256 under k_der (derived.go)
	derm    multi
	corrKey [32]byte // k_corr (corr.go)
}

// NewPRF keys the PRF with kr and derives the pair-tag and root subkeys
// from it.
func NewPRF(kr *[32]byte) (*PRF, error) {
	b, err := aes.NewCipher(kr[:])
	if err != nil {
		return nil, fmt.Errorf("kdf: keying the root PRF: %w", err)
	}
	p := &PRF{b: b}
	if p.bm, err = newMulti(kr); err != nil {
		return nil, err
	}
	if p.tag, p.tagm, err = p.subkey(DomainPairTag); err != nil {
		return nil, fmt.Errorf("kdf: keying the pair tag: %w", err)
	}
	if p.root, p.rootm, err = p.subkey(DomainRootKey); err != nil {
		return nil, fmt.Errorf("kdf: keying the root seeds: %w", err)
	}
	if p.der, p.derm, err = p.subkey(DomainDerivedKey); err != nil {
		return nil, fmt.Errorf("kdf: keying the derived masks: %w", err)
	}
	p.Block(DomainCorrKey, 0, 0, (*[16]byte)(p.corrKey[:16]))
	p.Block(DomainCorrKey, 0, 1, (*[16]byte)(p.corrKey[16:]))
	return p, nil
}

// subkey returns AES-256 keyed with AES_kr(domain, 0, 0) ‖ AES_kr(domain,
// 0, 1), as a block cipher and as a multi-block one.
func (p *PRF) subkey(domain byte) (cipher.Block, multi, error) {
	var k [32]byte
	defer clear(k[:])
	p.Block(domain, 0, 0, (*[16]byte)(k[:16]))
	p.Block(domain, 0, 1, (*[16]byte)(k[16:]))
	b, err := aes.NewCipher(k[:])
	if err != nil {
		return nil, nil, err
	}
	m, err := newMulti(&k)
	if err != nil {
		return nil, nil, err
	}
	return b, m, nil
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

// Roots derives both root seeds of the key at counter with the given
// shape, α and β: root_i is a two-block CBC-MAC under k_root (a PRF on
// these fixed-length inputs) of
//
//	counter(8, LE) ‖ mode ‖ type ‖ ℓ ‖ n ‖ i ‖ 0 0 0   then   α(8, LE) ‖ β(8, LE)
//
// for i = 0, 1. Both modules of a pair compute the same roots; they are
// never transmitted (each party's key share carries its own). Bound to
// everything the key's Gen takes, two keys at one counter that differ in
// any input — as a host restoring or cloning a state file could ask for —
// have independent roots, so their corrections cannot be compared.
func (p *PRF) Roots(counter uint64, mode, typ, inBits, outBits byte, alpha, beta uint64) (r0, r1 [16]byte) {
	r0 = p.rootSeed(counter, mode, typ, inBits, outBits, 0, alpha, beta)
	r1 = p.rootSeed(counter, mode, typ, inBits, outBits, 1, alpha, beta)
	p.wipe()
	return
}

// rootSeed computes root_index into a result, leaving p's blocks dirty.
func (p *PRF) rootSeed(counter uint64, mode, typ, inBits, outBits, index byte, alpha, beta uint64) [16]byte {
	x := p.in[:]
	clear(x)
	binary.LittleEndian.PutUint64(x[0:8], counter)
	x[8], x[9], x[10], x[11], x[12] = mode, typ, inBits, outBits, index
	p.root.Encrypt(x, x)
	binary.LittleEndian.PutUint64(x[0:8], binary.LittleEndian.Uint64(x[0:8])^alpha)
	binary.LittleEndian.PutUint64(x[8:16], binary.LittleEndian.Uint64(x[8:16])^beta)
	p.root.Encrypt(p.out[:], x)
	return p.out
}
