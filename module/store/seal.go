package store

import (
	"bytes"
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"

	bolt "go.etcd.io/bbolt"

	"github.com/kord-fss/kord/module/provision"
)

// Sealing. With BoltOptions.SealKey, the pairing (its channel secret K_ch)
// is stored AES-256-GCM sealed under that key, in a record of its own:
//
//	sealVersion ‖ party ‖ len(KEM) ‖ KEM ‖ nonce (12) ‖ GCM(K_ch)
//
// with additional data sealLabel ‖ party ‖ len(KEM) ‖ KEM, so the party
// and KEM cannot be swapped under a sealed secret. A state file is either
// sealed or not, and that never changes silently:
//
//   - a sealed file opened without a key, or with another key, is refused
//     (never read as clear text);
//   - an unsealed file that already holds a pairing, opened with a key, is
//     refused rather than sealed in place: bbolt leaves freed pages on
//     disk, so the clear secret would survive a rewrite. To seal, pair
//     afresh with new state files and the key.
//
// The key comes from outside the host's reach in principle (a KMS or a
// TPM unseal step writes it for the module to read at start); a stolen
// state file alone is then useless.

// SealKeySize is the length of a seal key.
const SealKeySize = 32

const (
	sealVersion = 1
	sealLabel   = "kord/v1/module/pairing-seal"
)

var keyPairingSealed = []byte("pairing-sealed")

// ErrSeal marks a state file and seal key that do not go together.
var ErrSeal = errors.New("store: pairing seal")

var errUnsealedWithKey = fmt.Errorf("%w: the state file holds an unsealed pairing but a seal key was given; it is not sealed in place (the clear secret would stay in the file's free pages): start without --seal-key-file, or pair afresh with new state files and the key", ErrSeal)

// BoltOptions configure OpenBoltWith.
type BoltOptions struct {
	// Window is the counters reserved per commit (0: DefaultWindow).
	Window uint64
	// SealKey, if set, is a SealKeySize-byte key the pairing secret is
	// sealed under. The store keeps its own copy (wiped by Close).
	SealKey []byte
}

// ParseSealKey accepts a seal key as SealKeySize raw bytes or as hex
// (2·SealKeySize digits, surrounding white space ignored).
func ParseSealKey(raw []byte) ([]byte, error) {
	if len(raw) == SealKeySize {
		return append([]byte(nil), raw...), nil
	}
	t := bytes.TrimSpace(raw)
	if len(t) == 2*SealKeySize {
		k := make([]byte, SealKeySize)
		if _, err := hex.Decode(k, t); err == nil {
			return k, nil
		}
		clear(k)
	}
	return nil, fmt.Errorf("%w: a seal key is %d raw bytes or %d hex digits (e.g. head -c %d /dev/urandom > FILE; chmod 600 FILE)", ErrSeal, SealKeySize, 2*SealKeySize, SealKeySize)
}

// ReadSealKeyFile reads a seal key from a private file (mode 0600 or
// 0400, owned by this user, not a symbolic link).
func ReadSealKeyFile(path string) ([]byte, error) {
	return provision.ReadParsed("--seal-key-file", path, ParseSealKey)
}

func sealKeyCopy(k []byte) ([]byte, error) {
	if k == nil {
		return nil, nil
	}
	if len(k) != SealKeySize {
		return nil, fmt.Errorf("%w: seal key is %d bytes, want %d", ErrSeal, len(k), SealKeySize)
	}
	return append([]byte(nil), k...), nil
}

func sealAEAD(key []byte) cipher.AEAD {
	blk, err := aes.NewCipher(key)
	if err != nil {
		panic(err) // key length checked by sealKeyCopy
	}
	g, err := cipher.NewGCM(blk)
	if err != nil {
		panic(err)
	}
	return g
}

// sealHeader is sealVersion ‖ party ‖ len(KEM) ‖ KEM.
func sealHeader(party int, kem string) []byte {
	h := []byte{sealVersion, byte(party), byte(len(kem))}
	return append(h, kem...)
}

func sealAD(header []byte) []byte { return append([]byte(sealLabel), header[1:]...) }

// sealPairing returns the sealed record of p (validated by the caller).
func sealPairing(key []byte, p Pairing) []byte {
	h := sealHeader(p.Party, p.KEM)
	out := append(h, make([]byte, 12)...)
	nonce := out[len(h):]
	rand.Read(nonce)
	return sealAEAD(key).Seal(out, nonce, p.Secret, sealAD(h))
}

// unsealPairing opens a sealed record.
func unsealPairing(key, v []byte) (*Pairing, error) {
	if key == nil {
		return nil, fmt.Errorf("%w: the state file's pairing is sealed; start the module with the same --seal-key-file", ErrSeal)
	}
	if len(v) < 3 || v[0] != sealVersion || v[1] > 1 || len(v) < 3+int(v[2])+12+16+1 {
		return nil, fmt.Errorf("%w: malformed sealed pairing record", ErrSeal)
	}
	hl := 3 + int(v[2])
	h, nonce, ct := v[:hl], v[hl:hl+12], v[hl+12:]
	secret, err := sealAEAD(key).Open(nil, nonce, ct, sealAD(h))
	if err != nil {
		return nil, fmt.Errorf("%w: the sealed pairing does not open under this key: the wrong --seal-key-file, or the state file was altered", ErrSeal)
	}
	return &Pairing{Party: int(v[1]), KEM: string(v[3:hl]), Secret: secret}, nil
}

// checkSeal refuses, at open, a state file and key that do not go
// together (see above), so a module fails at start, not at first use.
func (b *Bolt) checkSeal(path string, bk *bolt.Bucket) error {
	sealed, plain := bk.Get(keyPairingSealed), bk.Get(keyPairing)
	switch {
	case sealed != nil && plain != nil:
		return fmt.Errorf("%w: %s holds both a sealed and an unsealed pairing record", ErrSeal, path)
	case sealed != nil:
		p, err := unsealPairing(b.sealKey, sealed)
		if err != nil {
			return fmt.Errorf("%w (%s)", err, path)
		}
		clear(p.Secret)
	case plain != nil && b.sealKey != nil:
		return fmt.Errorf("%w (%s)", errUnsealedWithKey, path)
	}
	return nil
}
