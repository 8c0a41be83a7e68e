package gates

import (
	"fmt"

	"github.com/kord-fss/kord/fss"
)

// BatchSource is an optional extension of KeySource for sources that
// amortise a round trip over many keys (the module hosts submit up to
// their in-flight limit per round). Gates use it when the source has it.
type BatchSource interface {
	KeySource
	// BoundBatch returns one key pair per index i, bound to α = alpha[0][i] +
	// alpha[1][i] and β = beta[0][i] + beta[1][i]; keys[b][i] is party b's.
	BoundBatch(p fss.Params, alpha, beta [2][]uint64) (keys [2][]*fss.Key, err error)
	// DerivedBatch returns count derived key pairs (β = 1 unless wantBeta)
	// with each party's α and β shares.
	DerivedBatch(p fss.Params, count int, wantBeta bool) (keys [2][]*fss.Key, alphaShares, betaShares [2][]uint64, err error)
}

// boundN requests len(alpha[0]) bound key pairs, batched when possible.
func boundN(src KeySource, p fss.Params, alpha, beta [2][]uint64) ([2][]*fss.Key, error) {
	n := len(alpha[0])
	if len(alpha[1]) != n || len(beta[0]) != n || len(beta[1]) != n {
		return [2][]*fss.Key{}, fmt.Errorf("gates: bound batch shares differ in length")
	}
	if bs, ok := src.(BatchSource); ok {
		return bs.BoundBatch(p, alpha, beta)
	}
	out := [2][]*fss.Key{make([]*fss.Key, n), make([]*fss.Key, n)}
	for i := 0; i < n; i++ {
		k, err := src.Bound(p, [2]uint64{alpha[0][i], alpha[1][i]}, [2]uint64{beta[0][i], beta[1][i]})
		if err != nil {
			return out, err
		}
		out[0][i], out[1][i] = k[0], k[1]
	}
	return out, nil
}

// derivedN requests count derived key pairs, batched when possible.
func derivedN(src KeySource, p fss.Params, count int, wantBeta bool) (keys [2][]*fss.Key, as, bs [2][]uint64, err error) {
	if b, ok := src.(BatchSource); ok {
		return b.DerivedBatch(p, count, wantBeta)
	}
	for b := 0; b < 2; b++ {
		keys[b] = make([]*fss.Key, count)
		as[b] = make([]uint64, count)
		bs[b] = make([]uint64, count)
	}
	for i := 0; i < count; i++ {
		k, a, bt, err := src.Derived(p, wantBeta)
		if err != nil {
			return keys, as, bs, err
		}
		for b := 0; b < 2; b++ {
			keys[b][i], as[b][i], bs[b][i] = k[b], a[b], bt[b]
		}
	}
	return keys, as, bs, nil
}

// BoundBatch forwards to the wrapped source (batched when it can) and
// records the keys.
func (m *Meter) BoundBatch(p fss.Params, alpha, beta [2][]uint64) ([2][]*fss.Key, error) {
	for range alpha[0] {
		m.record(p, false)
	}
	return boundN(m.Src, p, alpha, beta)
}

// DerivedBatch forwards to the wrapped source (batched when it can) and
// records the keys.
func (m *Meter) DerivedBatch(p fss.Params, count int, wantBeta bool) ([2][]*fss.Key, [2][]uint64, [2][]uint64, error) {
	for range count {
		m.record(p, true)
	}
	return derivedN(m.Src, p, count, wantBeta)
}
