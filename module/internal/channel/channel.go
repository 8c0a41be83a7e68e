// Package channel is the secure-channel unit of a module: it seals this
// module's one frame per key (or per batch) and opens the peer's, in three
// tiers — keystream (semi-honest network), mac and batched mac (malicious
// network). Each direction has its own key, so a module's own frame never
// opens as the peer's.
//
// Frame formats (docs/protocol.md):
//
//	keystream:  ⟨α⟩ ‖ ⟨β⟩ XOR keystream(K_otp,dir, counter)   ⌈ℓ/8⌉+⌈n/8⌉ bytes
//	mac:        nonce 12 ‖ counter 8 ‖ AES-GCM(⟨α⟩ ‖ ⟨β⟩) ‖ tag 16
//	batchmac:   nonce 12 ‖ counter 8 ‖ AES-GCM(frame_1 ‖ … ‖ frame_M) ‖ tag 16
//
// The associated data of both mac tiers binds the tier, direction, first
// counter, batch length and each frame's mode, type and widths.
//
// Nonces. The GCM nonce of a frame is its (first) counter: counter(8, LE)
// ‖ 0 0 0 0 (Nonce). Tier and direction have keys of their own, and the
// keys change at every session (kdf.DeriveSession), inside which the
// counters only grow, so no nonce repeats under one key. The nonce field
// stays on the wire (the envelope keeps its 36 bytes); Open refuses a
// frame whose nonce field is not the one its counter gives (ErrAuth).
package channel

import (
	"crypto/aes"
	"crypto/cipher"
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/kord-fss/kord/internal/prg"
	"github.com/kord-fss/kord/module/internal/kdf"
)

// Sizes of the mac envelope.
const (
	NonceSize  = 12
	CounterLen = 8
	TagSize    = 16
	HeaderSize = NonceSize + CounterLen
	Overhead   = HeaderSize + TagSize // 36
)

// Tier identifiers bound into the associated data.
const (
	TierKeystream byte = 1
	TierMAC       byte = 2
	TierBatchMAC  byte = 3
)

// Desc is the public shape of one frame: mode, type, widths and, for a
// payload vector, its group size.
type Desc struct {
	Mode, Type      byte
	InBits, OutBits int
	// Group is the number of β elements the frame carries: 0 or 1 for
	// one (the frame is then exactly what it was before vectors), 2..255
	// for a vector (llama keys, msg.Bulk.Group).
	Group int
}

func width(bits int) int { return (bits + 7) / 8 }

// g is the number of β elements of a frame of shape d.
func (d Desc) g() int { return max(d.Group, 1) }

// Size is the length of the frame's plaintext: ⌈ℓ/8⌉+G·⌈n/8⌉.
func (d Desc) Size() int { return width(d.InBits) + d.g()*width(d.OutBits) }

// Errors that open returns; the engine turns them into reject reasons.
var (
	ErrLength = errors.New("channel: frame length does not match the expected request")
	ErrAuth   = errors.New("channel: frame failed authentication")
	ErrRange  = errors.New("channel: share field has bits set above its width")
)

// PackVec appends ⟨α⟩ ‖ ⟨β_0⟩ ‖ … ‖ ⟨β_{G-1}⟩, little-endian, ⌈ℓ/8⌉ and
// G times ⌈n/8⌉ bytes; bs holds d's G elements (for G ≤ 1 it is Pack).
func PackVec(dst []byte, d Desc, a uint64, bs []uint64) []byte {
	dst = Pack(dst, Desc{InBits: d.InBits, OutBits: d.OutBits}, a, bs[0])
	var w [8]byte
	for _, b := range bs[1:d.g()] {
		binary.LittleEndian.PutUint64(w[:], b)
		dst = append(dst, w[:width(d.OutBits)]...)
	}
	clear(w[:])
	return dst
}

// UnpackVec reads one packed vector share (PackVec) into bs (G elements);
// src must be exactly d.Size() bytes.
func UnpackVec(src []byte, d Desc, bs []uint64) (a uint64, err error) {
	if len(src) != d.Size() || len(bs) < d.g() {
		return 0, ErrLength
	}
	wa, wb := width(d.InBits), width(d.OutBits)
	one := Desc{InBits: d.InBits, OutBits: d.OutBits}
	a, bs[0], err = Unpack(src[:wa+wb], one)
	if err != nil {
		return 0, err
	}
	var w [8]byte
	defer clear(w[:])
	for j, off := 1, wa+wb; j < d.g(); j, off = j+1, off+wb {
		copy(w[:], src[off:off+wb])
		bs[j] = binary.LittleEndian.Uint64(w[:])
		if bs[j]&^prg.Mask(d.OutBits) != 0 {
			return 0, ErrRange
		}
	}
	return a, nil
}

// Pack appends ⟨α⟩ ‖ ⟨β⟩, little-endian, ⌈ℓ/8⌉ and ⌈n/8⌉ bytes.
func Pack(dst []byte, d Desc, a, b uint64) []byte {
	var w [8]byte
	binary.LittleEndian.PutUint64(w[:], a)
	dst = append(dst, w[:width(d.InBits)]...)
	binary.LittleEndian.PutUint64(w[:], b)
	dst = append(dst, w[:width(d.OutBits)]...)
	clear(w[:])
	return dst
}

// Unpack reads one packed share pair; src must be exactly d.Size() bytes.
func Unpack(src []byte, d Desc) (a, b uint64, err error) {
	if len(src) != d.Size() {
		return 0, 0, ErrLength
	}
	wa := width(d.InBits)
	var w [8]byte
	copy(w[:], src[:wa])
	a = binary.LittleEndian.Uint64(w[:])
	clear(w[:])
	copy(w[:], src[wa:])
	b = binary.LittleEndian.Uint64(w[:])
	clear(w[:])
	if a&^prg.Mask(d.InBits) != 0 || b&^prg.Mask(d.OutBits) != 0 {
		return 0, 0, ErrRange
	}
	return a, b, nil
}

// Channel holds the per-direction ciphers of one pairing for one party.
//
// A Channel is not safe for concurrent use: it works in buffers of its own
// (a buffer passed through the cipher interfaces would be moved to the
// heap on every call), and clears those that held secrets after each call.
type Channel struct {
	party int
	otp   [2]cipher.Block
	otpm  [2]*kdf.Multi // the same keys, many blocks a call (bulk frames)
	mac   [2]cipher.AEAD
	batch [2]cipher.AEAD

	in, out [16]byte // keystream blocks
	blocks  []byte   // a bulk's keystream blocks; cleared after each call
	ad      []byte   // associated data (public)
	nonce   [NonceSize]byte
}

// Nonce is the GCM nonce of the frame whose (first) counter is counter:
// counter(8, LE) ‖ 0 0 0 0.
func Nonce(counter uint64) (n [NonceSize]byte) {
	binary.LittleEndian.PutUint64(n[:8], counter)
	return n
}

// New keys a channel for party (0 or 1) from the schedule.
func New(k *kdf.Keys, party int) (*Channel, error) {
	if party != 0 && party != 1 {
		return nil, fmt.Errorf("channel: party %d is not 0 or 1", party)
	}
	c := &Channel{party: party}
	for d := 0; d < 2; d++ {
		var err error
		if c.otp[d], err = aes.NewCipher(k.OTP[d][:]); err != nil {
			return nil, fmt.Errorf("channel: keystream key: %w", err)
		}
		if c.otpm[d], err = kdf.NewMulti(&k.OTP[d]); err != nil {
			return nil, fmt.Errorf("channel: keystream key: %w", err)
		}
		if c.mac[d], err = newGCM(k.MAC[d][:]); err != nil {
			return nil, err
		}
		if c.batch[d], err = newGCM(k.Batch[d][:]); err != nil {
			return nil, err
		}
	}
	return c, nil
}

func newGCM(key []byte) (cipher.AEAD, error) {
	b, err := aes.NewCipher(key)
	if err != nil {
		return nil, fmt.Errorf("channel: frame key: %w", err)
	}
	g, err := cipher.NewGCM(b)
	if err != nil {
		return nil, fmt.Errorf("channel: frame key: %w", err)
	}
	return g, nil
}

// keystream returns the two keystream words for (dir, counter), masked to
// the widths so the frame's unused high bits stay zero.
func (c *Channel) keystream(dir int, counter uint64, d Desc) (ka, kb uint64) {
	binary.LittleEndian.PutUint64(c.in[:8], counter)
	c.otp[dir].Encrypt(c.out[:], c.in[:])
	ka = binary.LittleEndian.Uint64(c.out[:8]) & prg.Mask(d.InBits)
	kb = binary.LittleEndian.Uint64(c.out[8:]) & prg.Mask(d.OutBits)
	c.in, c.out = [16]byte{}, [16]byte{}
	return
}

// SealKeystream returns this party's keystream-tier frame for counter.
func (c *Channel) SealKeystream(counter uint64, d Desc, a, b uint64) []byte {
	return c.SealKeystreamTo(make([]byte, 0, d.Size()), counter, d, a, b)
}

// SealKeystreamTo is SealKeystream appending the frame to dst.
func (c *Channel) SealKeystreamTo(dst []byte, counter uint64, d Desc, a, b uint64) []byte {
	ka, kb := c.keystream(c.party, counter, d)
	return Pack(dst, d, a^ka, b^kb)
}

// OpenKeystream decrypts the peer's keystream-tier frame for counter. The
// tier has no integrity: any frame of the right length and range opens.
func (c *Channel) OpenKeystream(counter uint64, d Desc, frame []byte) (a, b uint64, err error) {
	a, b, err = Unpack(frame, d)
	if err != nil {
		return 0, 0, err
	}
	ka, kb := c.keystream(1-c.party, counter, d)
	return a ^ ka, b ^ kb, nil
}

func (c *Channel) aead(tier byte, dir int) (cipher.AEAD, error) {
	switch tier {
	case TierMAC:
		return c.mac[dir], nil
	case TierBatchMAC:
		return c.batch[dir], nil
	}
	return nil, fmt.Errorf("channel: tier %d has no AEAD", tier)
}

// AD is the associated data of a mac-tier envelope.
func AD(tier byte, dir int, counter uint64, ds []Desc) []byte {
	return appendAD(make([]byte, 0, 32+4*len(ds)), tier, dir, counter, ds)
}

// appendAD appends AD(tier, dir, counter, ds) to ad.
func appendAD(ad []byte, tier byte, dir int, counter uint64, ds []Desc) []byte {
	ad = append(ad, "kord/v1/frame"...)
	ad = append(ad, tier, byte(dir))
	ad = binary.LittleEndian.AppendUint64(ad, counter)
	ad = binary.LittleEndian.AppendUint32(ad, uint32(len(ds)))
	for _, d := range ds {
		if d.Group > 1 {
			// A payload vector: the mode byte's top bit (modes are 1..3)
			// says that the group size follows, so the encoding stays
			// unambiguous and a one-element frame's bytes are unchanged.
			ad = append(ad, d.Mode|0x80, d.Type, byte(d.InBits), byte(d.OutBits), byte(d.Group))
			continue
		}
		ad = append(ad, d.Mode, d.Type, byte(d.InBits), byte(d.OutBits))
	}
	return ad
}

// EnvelopeSize is the length of a mac-tier envelope over ds.
func EnvelopeSize(ds []Desc) int {
	n := Overhead
	for _, d := range ds {
		n += d.Size()
	}
	return n
}

// Seal returns this party's mac-tier envelope over plain (the packed share
// pairs of ds, in order) at the first counter, under the nonce Nonce(counter).
// The caller must not seal twice at one counter under one channel.
func (c *Channel) Seal(tier byte, counter uint64, ds []Desc, plain []byte) ([]byte, error) {
	return c.SealTo(make([]byte, 0, EnvelopeSize(ds)), tier, counter, ds, plain)
}

// SealTo is Seal appending the envelope to dst; with room for it in dst
// (EnvelopeSize(ds) bytes) it allocates nothing.
func (c *Channel) SealTo(dst []byte, tier byte, counter uint64, ds []Desc, plain []byte) ([]byte, error) {
	g, err := c.aead(tier, c.party)
	if err != nil {
		return nil, err
	}
	c.nonce = Nonce(counter) // (a local would be moved to the heap by the AEAD interface)
	dst = append(dst, c.nonce[:]...)
	dst = binary.LittleEndian.AppendUint64(dst, counter)
	c.ad = appendAD(c.ad[:0], tier, c.party, counter, ds)
	return g.Seal(dst, c.nonce[:], plain, c.ad), nil
}

// EnvelopeCounter reads the counter field of an envelope after checking its
// length against ds. It authenticates nothing.
func EnvelopeCounter(frame []byte, ds []Desc) (uint64, error) {
	if len(frame) != EnvelopeSize(ds) {
		return 0, ErrLength
	}
	return binary.LittleEndian.Uint64(frame[NonceSize:HeaderSize]), nil
}

// Open authenticates and decrypts the peer's envelope over ds at counter,
// returning the plaintext. A frame whose counter field is not counter, or
// whose nonce field is not Nonce(counter), fails (ErrAuth) before GCM
// runs. On any failure nothing is returned.
func (c *Channel) Open(tier byte, counter uint64, ds []Desc, frame []byte) ([]byte, error) {
	return c.OpenTo(nil, tier, counter, ds, frame)
}

// OpenTo is Open appending the plaintext to dst (the caller clears it);
// with room for it in dst it allocates nothing.
func (c *Channel) OpenTo(dst []byte, tier byte, counter uint64, ds []Desc, frame []byte) ([]byte, error) {
	g, err := c.aead(tier, 1-c.party)
	if err != nil {
		return nil, err
	}
	got, err := EnvelopeCounter(frame, ds)
	if err != nil {
		return nil, err
	}
	if got != counter {
		return nil, ErrAuth
	}
	if c.nonce = Nonce(counter); [NonceSize]byte(frame[:NonceSize]) != c.nonce {
		return nil, ErrAuth
	}
	c.ad = appendAD(c.ad[:0], tier, 1-c.party, counter, ds)
	plain, err := g.Open(dst, frame[:NonceSize], frame[HeaderSize:], c.ad)
	if err != nil {
		return nil, ErrAuth
	}
	return plain, nil
}

// keystreamBulk leaves the keystream blocks for (dir, first+i, j), i < n,
// j < g, in c.blocks (which the caller clears): block i·g+j is the
// encryption of counter(8, LE) ‖ j(8, LE). Block j = 0 is a one-element
// frame's (α's word and β's); a payload vector's element j ≥ 1 takes the
// low word of block j.
func (c *Channel) keystreamBulk(dir int, first uint64, n, g int) []byte {
	if cap(c.blocks) < 16*n*g {
		c.blocks = make([]byte, 16*n*g)
	}
	ks := c.blocks[:16*n*g]
	for i := range n {
		for j := range g {
			b := ks[16*(i*g+j) : 16*(i*g+j+1)]
			binary.LittleEndian.PutUint64(b[:8], first+uint64(i))
			binary.LittleEndian.PutUint64(b[8:], uint64(j))
		}
	}
	c.otpm[dir].Encrypt(ks)
	return ks
}

// SealKeystreamBulk appends this party's keystream-tier frames for the
// share pairs (a[i], b[i]) at counters first, first+1, … to dst: the
// bytes SealKeystreamTo appends for each, with the keystream drawn in one
// multi-block call.
//
// With a payload vector (d.Group ≥ 2) b holds len(a)·G elements, key i's
// at b[i·G:], and each frame carries them all (PackVec).
func (c *Channel) SealKeystreamBulk(dst []byte, first uint64, d Desc, a, b []uint64) []byte {
	g := d.g()
	ks := c.keystreamBulk(c.party, first, len(a), g)
	defer clear(ks)
	ma, mb := prg.Mask(d.InBits), prg.Mask(d.OutBits)
	one := Desc{InBits: d.InBits, OutBits: d.OutBits}
	var w [8]byte
	defer clear(w[:])
	for i := range a {
		x := ks[16*i*g : 16*(i*g+1)]
		dst = Pack(dst, one, a[i]^binary.LittleEndian.Uint64(x[:8])&ma, b[i*g]^binary.LittleEndian.Uint64(x[8:])&mb)
		for j := 1; j < g; j++ {
			y := ks[16*(i*g+j):]
			binary.LittleEndian.PutUint64(w[:], b[i*g+j]^binary.LittleEndian.Uint64(y[:8])&mb)
			dst = append(dst, w[:width(d.OutBits)]...)
		}
	}
	return dst
}

// OpenKeystreamBulk decrypts the peer's keystream-tier frames for counters
// first, first+1, …, concatenated in frame (len(a) of them, d.Size()
// bytes each), into a and b; it fails (ErrLength, ErrRange) as
// OpenKeystream would on the first bad one, leaving a and b for the
// caller to wipe.
//
// With a payload vector (d.Group ≥ 2) b receives len(a)·G elements.
func (c *Channel) OpenKeystreamBulk(first uint64, d Desc, frame []byte, a, b []uint64) error {
	n, sz, g := len(a), d.Size(), d.g()
	if len(frame) != n*sz || len(b) < n*g {
		return ErrLength
	}
	ks := c.keystreamBulk(1-c.party, first, n, g)
	defer clear(ks)
	ma, mb := prg.Mask(d.InBits), prg.Mask(d.OutBits)
	for i := range n {
		x, err := UnpackVec(frame[i*sz:(i+1)*sz], d, b[i*g:(i+1)*g])
		if err != nil {
			return err
		}
		k := ks[16*i*g : 16*(i*g+1)]
		a[i], b[i*g] = x^binary.LittleEndian.Uint64(k[:8])&ma, b[i*g]^binary.LittleEndian.Uint64(k[8:])&mb
		for j := 1; j < g; j++ {
			y := ks[16*(i*g+j):]
			b[i*g+j] ^= binary.LittleEndian.Uint64(y[:8]) & mb
		}
	}
	return nil
}
