package ntru

import (
	"errors"
	"fmt"
	"io"
)

// ErrDecryption is the one error Decrypt returns for every invalid
// ciphertext, whatever the check that failed.
var ErrDecryption = errors.New("ntru: decryption failed")

// ErrMessageTooLong is returned by Encrypt for a message above the set's
// maximum length.
var ErrMessageTooLong = errors.New("ntru: message too long")

// maxEncryptTries bounds the retries on a fresh b after a failed dm0 check;
// one retry is already rare, so hitting the bound means a broken rand.
const maxEncryptTries = 64

// encTrace holds every intermediate value of one encryption attempt.
type encTrace struct {
	mbin, sData, r4, packedE []byte
	mtrin, mask, mPrime      []uint8  // trits 0, 1, 2 (= −1)
	r                        []uint16 // dr +1 indices, then dr −1 indices
	bigR, e                  []uint16 // mod q
	ok                       bool     // m′ passed the dm0 check
}

// Encrypt encrypts msg (at most Set().MaxMessageLen() bytes; empty is
// allowed) with randomness from rand. The ciphertext is
// Set().CiphertextSize() bytes.
func (k *PublicKey) Encrypt(rand io.Reader, msg []byte) ([]byte, error) {
	if len(msg) > k.p.maxMsg {
		return nil, fmt.Errorf("%w: %d bytes, %s allows %d", ErrMessageTooLong, len(msg), k.p.name, k.p.maxMsg)
	}
	b := make([]byte, k.p.db/8)
	for try := 0; try < maxEncryptTries; try++ {
		if _, err := io.ReadFull(rand, b); err != nil {
			return nil, errors.New("ntru: reading randomness: " + err.Error())
		}
		if t := k.encrypt(msg, b); t.ok {
			return t.packedE, nil
		}
	}
	return nil, errors.New("ntru: encryption kept failing the dm0 check; is the randomness source broken?")
}

// encrypt runs one SVES encryption attempt with the given b.
func (k *PublicKey) encrypt(msg, b []byte) *encTrace {
	p := k.p
	t := &encTrace{}
	t.mbin = p.buildMbin(b, msg)
	t.mtrin = make([]uint8, p.n)
	bitsToTrits(t.mtrin, t.mbin)
	t.sData = k.sData(msg, b)
	t.r, _ = p.blindingIndices(t.sData)
	t.bigR = make([]uint16, p.n)
	sparseMul(t.bigR, k.hImg, k.hNeg, t.r[:p.dr], t.r[p.dr:])
	t.r4 = packMod4(t.bigR)
	t.mask = p.mask(t.r4)
	t.mPrime = make([]uint8, p.n)
	var cnt [3]int
	for i := range t.mPrime {
		v := addMod3(t.mtrin[i], t.mask[i])
		t.mPrime[i] = v
		cnt[v]++
	}
	t.ok = cnt[0] >= p.dm0 && cnt[1] >= p.dm0 && cnt[2] >= p.dm0
	t.e = make([]uint16, p.n)
	for i, v := range t.mPrime {
		t.e[i] = (t.bigR[i] + tritToQ(v)) & qMask
	}
	t.packedE = packQ(t.e)
	return t
}

// buildMbin returns b ‖ len(m) ‖ m ‖ zero padding.
func (p *params) buildMbin(b, msg []byte) []byte {
	out := make([]byte, p.mbinLen())
	copy(out, b)
	out[len(b)] = byte(len(msg))
	copy(out[len(b)+1:], msg)
	return out
}

// sData returns OID ‖ m ‖ b ‖ the first pkLen/8 bytes of packed h.
func (k *PublicKey) sData(msg, b []byte) []byte {
	out := make([]byte, 0, 3+len(msg)+len(b)+k.p.pkLen/8)
	out = append(out, k.p.oid[:]...)
	out = append(out, msg...)
	out = append(out, b...)
	return append(out, k.packedH[:k.p.pkLen/8]...)
}

// addMod3 adds trits in the 0, 1, 2 representation without branches.
func addMod3(a, b uint8) uint8 {
	s := a + b                // 0..4
	ge := (uint8(2) - s) >> 7 // 1 iff s >= 3
	return s - 3*ge
}

// subMod3 returns a − b for trits in the 0, 1, 2 representation.
func subMod3(a, b uint8) uint8 { return addMod3(a, addMod3(b, b)) }

// tritToQ maps a trit (0, 1, 2 = −1) to its value mod q: 0, 1, q − 1.
func tritToQ(t uint8) uint16 { return uint16(t&1) | -uint16(t>>1)&qMask }
