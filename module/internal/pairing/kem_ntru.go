package pairing

import (
	"crypto/sha256"
	"fmt"
	"io"

	"github.com/kord-fss/kord/ntru"
)

func init() {
	for _, set := range ntru.ParamSets() {
		Register(ntruKEM{set: set})
	}
}

// ntruKEM makes NTRUEncrypt-SVES a KEM: the encapsulator encrypts 32
// random bytes m, and the shared secret is SHA-256 over a label, the
// parameter set, m, the ciphertext and the public key blob.
type ntruKEM struct{ set ntru.ParamSet }

func (k ntruKEM) Name() string { return "ntru-" + k.set.Name() }

func (k ntruKEM) GenerateKey(rand io.Reader) (Decapsulator, []byte, error) {
	sk, err := ntru.GenerateKey(rand, k.set)
	if err != nil {
		return nil, nil, fmt.Errorf("pairing: %s key: %w", k.Name(), err)
	}
	pub, err := sk.Public().MarshalBinary()
	if err != nil {
		return nil, nil, fmt.Errorf("pairing: %s public key: %w", k.Name(), err)
	}
	return ntruDK{k: k, sk: sk, pub: pub}, pub, nil
}

func (k ntruKEM) Encapsulate(rand io.Reader, ek []byte) ([]byte, []byte, error) {
	pk, err := ntru.ParsePublicKey(ek)
	if err != nil || pk.Set() != k.set {
		return nil, nil, fmt.Errorf("pairing: %s encapsulation key is malformed", k.Name())
	}
	var m [32]byte
	if _, err := io.ReadFull(rand, m[:]); err != nil {
		return nil, nil, fmt.Errorf("pairing: %s secret: %w", k.Name(), err)
	}
	defer clear(m[:])
	ct, err := pk.Encrypt(rand, m[:])
	if err != nil {
		return nil, nil, fmt.Errorf("pairing: %s encrypt: %w", k.Name(), err)
	}
	return k.shared(m[:], ct, ek), ct, nil
}

func (k ntruKEM) shared(m, ct, pub []byte) []byte {
	h := sha256.New()
	h.Write([]byte("kord/v1/pair/kem/" + k.Name()))
	h.Write(m)
	h.Write(ct)
	h.Write(pub)
	return h.Sum(nil)
}

type ntruDK struct {
	k   ntruKEM
	sk  *ntru.PrivateKey
	pub []byte
}

func (d ntruDK) Decapsulate(ct []byte) ([]byte, error) {
	m, err := d.sk.Decrypt(ct)
	if err != nil {
		return nil, fmt.Errorf("pairing: %s ciphertext: %w", d.k.Name(), err)
	}
	defer clear(m)
	if len(m) != 32 {
		return nil, fmt.Errorf("pairing: %s ciphertext holds %d bytes, want 32", d.k.Name(), len(m))
	}
	return d.k.shared(m, ct, d.pub), nil
}
