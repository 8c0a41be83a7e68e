package gates

import (
	"crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"io"

	"github.com/kord-fss/kord/fss"
)

// Material is one party's offline key material for a batch of operations
// of one gate. It is consumed by one Eval of the same gate and must not be
// reused: reusing a mask reveals the difference of two inputs, so a second
// Eval on the same material fails with ErrMaterial.
type Material interface {
	// Ops is the number of operations the material covers.
	Ops() int
}

// Gate is one building block. Gen runs the offline phase for both parties
// (in a deployment each party runs its half against its own
// key-generation module; here one call drives both through the
// KeySource); Eval is one party's online phase.
type Gate interface {
	// Name is the block's name as printed in the cost table: EQ, CMP, Mod,
	// TR, Ctn, DigDec, PubLUT, PriLUT, Approx, ReLU or DReLU.
	Name() string
	// Variant distinguishes versions of a block (e.g. public or secret
	// comparand); empty when there is one.
	Variant() string
	// InBits is ℓ, the width of the input ring Z_{2^ℓ}.
	InBits() int
	// Arity is the number of secret-shared inputs per operation.
	Arity() int
	// OutWidths gives, per output of one operation, the width of the ring
	// its additive shares live in.
	OutWidths() []int
	// Gen produces both parties' key material for ops operations. rnd is
	// the parties' local randomness (crypto/rand when nil).
	Gen(src KeySource, rnd io.Reader, ops int) ([2]Material, error)
	// Eval runs party p's online phase on its input shares (in[i] holds the
	// Arity shares of operation i, each mod 2^ℓ) and returns its output
	// shares (out[i][j] mod 2^OutWidths()[j]).
	Eval(p *Party, m Material, in [][]uint64) ([][]uint64, error)
	// Ref is the plaintext reference: the outputs for plaintext inputs.
	Ref(in []uint64) []uint64
	// Valid reports whether a plaintext input is in the block's domain.
	Valid(in []uint64) bool
}

// ErrMaterial is returned when key material does not fit the gate or batch.
var ErrMaterial = errors.New("gates: key material does not match the gate or batch")

// randWords draws count words of the given width from rnd.
func randWords(rnd io.Reader, count, bits int) ([]uint64, error) {
	if rnd == nil {
		rnd = rand.Reader
	}
	buf := make([]byte, 8*count)
	if _, err := io.ReadFull(rnd, buf); err != nil {
		return nil, fmt.Errorf("gates: local randomness: %w", err)
	}
	out := make([]uint64, count)
	for i := range out {
		out[i] = binary.LittleEndian.Uint64(buf[8*i:]) & mask(bits)
	}
	return out, nil
}

// ev evaluates k at x reduced to the key's input width (so it cannot fail).
func ev(k *fss.Key, x uint64) uint64 {
	v, _ := k.Eval(x & mask(k.Params().InBits))
	return v
}

// lt is 1{a < c} as a word.
func lt(a, c uint64) uint64 {
	if a < c {
		return 1
	}
	return 0
}

// pubCmp is party b's share of 1{x < c}·β for x ∈ Z_{2^bits}, given the
// opened x̂ = x + r and a DCF key at α = r with payload β (shares betaB of
// β; pass b for β = 1):
//
//	1{x < c} = 1{x̂−c < r} − 1{x̂ < r} + 1{x̂ < c}   (c ≤ 2^bits, any c ≥ 0)
//
// (the identity follows from comparing (x−c) mod 2^ℓ with x − c; it has no
// special case at c = 0, unlike LLAMA's pubcmp).
func pubCmp(k *fss.Key, bits int, xhat, c, betaB uint64) uint64 {
	u := (xhat - c) & mask(bits)
	return ev(k, u) - ev(k, xhat) + lt(xhat, c)*betaB
}

func checkBits(name string, l, lo, hi int) error {
	if l < lo || l > hi {
		return fmt.Errorf("gates: %s: width %d is outside %d..%d", name, l, lo, hi)
	}
	return nil
}

// oneShare is party b's share of the constant 1 (party 0 holds it).
func oneShare(b int) uint64 {
	if b == 0 {
		return 1
	}
	return 0
}

// checkBatch validates the shape of an Eval call.
func checkBatch(g Gate, m Material, in [][]uint64) error {
	if m == nil || m.Ops() != len(in) {
		return fmt.Errorf("%w: %s needs material for %d operations", ErrMaterial, g.Name(), len(in))
	}
	for i, x := range in {
		if len(x) != g.Arity() {
			return fmt.Errorf("gates: %s: operation %d has %d inputs, want %d", g.Name(), i, len(x), g.Arity())
		}
	}
	return nil
}

func checkParty(p *Party) error {
	if p == nil || p.Conn == nil || (p.B != 0 && p.B != 1) {
		return errors.New("gates: party must be 0 or 1 with a connection")
	}
	return nil
}

// openMasked is the online first step of every one-input block that masks
// its input with the operation's one mask: it checks the call and the
// material (keys key shares and one mask per operation) and opens
// x̂ = x + r mod 2^ℓ for every operation in one round.
func openMasked(g Gate, p *Party, mat Material, in [][]uint64, keys int) (batch, []uint64, error) {
	bits := g.InBits()
	return openOne(g, p, mat, in, keys, bits, func(x []uint64, r uint64) uint64 { return (x[0] + r) & mask(bits) })
}

// openOne is openMasked for any one opened value per operation: z(x, r)
// of width bits, from the operation's inputs x and its one mask r.
func openOne(g Gate, p *Party, mat Material, in [][]uint64, keys, bits int, z func(x []uint64, r uint64) uint64) (batch, []uint64, error) {
	if err := evalPre(g, p, mat, in); err != nil {
		return nil, nil, err
	}
	m, err := asBatch(mat, len(in), keys, 1)
	if err != nil {
		return nil, nil, err
	}
	zs := make([]uint64, len(in))
	for i, x := range in {
		zs[i] = z(x, m[i].r[0])
	}
	o, err := p.open([]int{bits}, zs)
	if err != nil {
		return nil, nil, err
	}
	return m, o[0], nil
}
