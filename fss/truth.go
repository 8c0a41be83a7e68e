package fss

import (
	"errors"
	"fmt"

	"github.com/kord-fss/kord/internal/prg"
)

// Truth is the plaintext function that a key pair of shape p for (α, β)
// shares: β at x = α for a DPF, β at every x < α for a DCF, and 0
// elsewhere. A pair is correct when Eval(k0, x) + Eval(k1, x), reduced to
// p.OutBits bits, equals Truth(p, α, β, x) for every x; tests and the
// delivery verifiers check exactly that. β is returned as given: pass it
// reduced to p.OutBits bits.
func Truth(p Params, alpha, beta, x uint64) uint64 {
	if p.Type == DPF && x == alpha || p.Type == DCF && x < alpha {
		return beta
	}
	return 0
}

// A KeyShare is one party's share of a key pair, parsed (*Key) or viewed
// in place (KeyView).
type KeyShare interface {
	Params() Params
	Party() int
	Eval(x uint64) (uint64, error)
}

// CheckPair evaluates k0 and k1 at each x of xs and returns nil if they
// are party 0's and party 1's shares of one shape p whose values add up,
// mod 2^p.OutBits, to Truth(p, α, β, x) at every x; otherwise an error
// that says where they do not.
func CheckPair(k0, k1 KeyShare, alpha, beta uint64, xs ...uint64) error {
	if missing(k0) || missing(k1) {
		return errors.New("fss: CheckPair: a key is missing")
	}
	p := k0.Params()
	if k1.Params() != p || k0.Party() != 0 || k1.Party() != 1 {
		return fmt.Errorf("fss: CheckPair: keys of party %d (%v) and party %d (%v), want party 0 and party 1 of one shape", k0.Party(), p, k1.Party(), k1.Params())
	}
	for _, x := range xs {
		y0, err0 := k0.Eval(x)
		y1, err1 := k1.Eval(x)
		if err := errors.Join(err0, err1); err != nil {
			return fmt.Errorf("fss: CheckPair: %v at x=%d: %w", p, x, err)
		}
		if got, want := (y0+y1)&prg.Mask(p.OutBits), Truth(p, alpha, beta, x); got != want {
			return fmt.Errorf("fss: %v pair for α=%d β=%d: the shares add to %d at x=%d, want %d", p, alpha, beta, got, x, want)
		}
	}
	return nil
}

// missing reports a nil share: no share at all, a nil *Key or an empty
// KeyView.
func missing(k KeyShare) bool {
	switch k := k.(type) {
	case nil:
		return true
	case *Key:
		return k == nil
	case KeyView:
		return k.IsZero()
	}
	return false
}
