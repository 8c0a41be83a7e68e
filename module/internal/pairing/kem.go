package pairing

import (
	"crypto/mlkem"
	"fmt"
	"io"
	"slices"
	"sync"
)

// KEM is the post-quantum half of the hybrid key agreement. Pairing always
// runs X25519 beside it and combines both shared secrets, so the pairing is
// secure while either one holds. Implementations register under a name.
type KEM interface {
	// Name is the registry name, e.g. "mlkem768".
	Name() string
	// GenerateKey returns a fresh decapsulation key and the encoded
	// encapsulation key to send.
	GenerateKey(rand io.Reader) (Decapsulator, []byte, error)
	// Encapsulate returns a shared secret and the ciphertext to send back.
	Encapsulate(rand io.Reader, encapsulationKey []byte) (shared, ciphertext []byte, err error)
}

// Decapsulator recovers the shared secret from a ciphertext.
type Decapsulator interface {
	Decapsulate(ciphertext []byte) ([]byte, error)
}

var (
	regMu    sync.RWMutex
	registry = map[string]KEM{}
)

// Register adds a KEM to the registry; a second KEM of the same name
// replaces the first.
func Register(k KEM) {
	regMu.Lock()
	defer regMu.Unlock()
	registry[k.Name()] = k
}

// Lookup returns the registered KEM called name.
func Lookup(name string) (KEM, error) {
	regMu.RLock()
	defer regMu.RUnlock()
	k, ok := registry[name]
	if !ok {
		return nil, fmt.Errorf("pairing: unknown KEM %q (have %v)", name, namesLocked())
	}
	return k, nil
}

// Names lists the registered KEMs, sorted.
func Names() []string {
	regMu.RLock()
	defer regMu.RUnlock()
	return namesLocked()
}

func namesLocked() []string {
	var n []string
	for k := range registry {
		n = append(n, k)
	}
	slices.Sort(n)
	return n
}

// DefaultKEM is the KEM a module uses unless configured otherwise.
const DefaultKEM = "mlkem768"

func init() { Register(mlkem768{}) }

// mlkem768 is ML-KEM-768 (FIPS 203) from crypto/mlkem. The decapsulation
// key is derived from a 64-byte seed (d ‖ z) read from rand;
// encapsulation draws its 32 bytes of randomness inside crypto/mlkem,
// which offers no derandomized form outside tests (the known-answer test
// swaps in crypto/mlkem/mlkemtest's through encapsulate768).
type mlkem768 struct{}

func (mlkem768) Name() string { return "mlkem768" }

func (mlkem768) GenerateKey(rand io.Reader) (Decapsulator, []byte, error) {
	var seed [mlkem.SeedSize]byte
	defer clear(seed[:])
	if _, err := io.ReadFull(rand, seed[:]); err != nil {
		return nil, nil, fmt.Errorf("pairing: ML-KEM-768 key: %w", err)
	}
	dk, err := mlkem.NewDecapsulationKey768(seed[:])
	if err != nil {
		return nil, nil, fmt.Errorf("pairing: ML-KEM-768 key: %w", err)
	}
	return mlkemDK{dk}, dk.EncapsulationKey().Bytes(), nil
}

// encapsulate768 is ML-KEM-768 encapsulation; rand is unused here (see
// mlkem768). Tests replace it with the derandomized form.
var encapsulate768 = func(_ io.Reader, ek *mlkem.EncapsulationKey768) (shared, ciphertext []byte, err error) {
	shared, ciphertext = ek.Encapsulate()
	return shared, ciphertext, nil
}

func (mlkem768) Encapsulate(rand io.Reader, ek []byte) ([]byte, []byte, error) {
	k, err := mlkem.NewEncapsulationKey768(ek)
	if err != nil {
		return nil, nil, fmt.Errorf("pairing: ML-KEM-768 encapsulation key: %w", err)
	}
	return encapsulate768(rand, k)
}

type mlkemDK struct{ dk *mlkem.DecapsulationKey768 }

func (d mlkemDK) Decapsulate(ct []byte) ([]byte, error) {
	ss, err := d.dk.Decapsulate(ct)
	if err != nil {
		return nil, fmt.Errorf("pairing: ML-KEM-768 ciphertext: %w", err)
	}
	return ss, nil
}
