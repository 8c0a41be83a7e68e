package gates

import (
	"context"
	"errors"
	"sync"

	"github.com/kord-fss/kord/fss"
	"github.com/kord-fss/kord/host"
	"github.com/kord-fss/kord/module/msg"
)

// ModuleSource is the dealerless KeySource: it obtains every key from a
// pair of kord key-generation modules through their hosts
// (host.LocalPair). It is safe for concurrent use. Bound keys cross the host link once per batch in the
// chosen tier; derived keys cross nothing. No dealer ever holds α or β.
type ModuleSource struct {
	Pair *host.LocalPair
	// Tier protects bound-mode frames; 0 means the keystream tier.
	Tier msg.Tier
	// Ctx bounds every request; nil means context.Background().
	Ctx context.Context

	// mu serialises requests: the two hosts must see the parties' requests
	// in the same order, so concurrent gates share the pair one at a time.
	mu sync.Mutex
}

// NewModuleSource pairs two fresh software modules in process.
func NewModuleSource(ctx context.Context) (*ModuleSource, error) {
	lp, err := host.NewLocalPair(ctx, host.LocalOptions{})
	if err != nil {
		return nil, err
	}
	return &ModuleSource{Pair: lp, Tier: msg.Keystream, Ctx: ctx}, nil
}

// Close stops the in-process pair.
func (s *ModuleSource) Close() { s.Pair.Close() }

func (s *ModuleSource) ctx() context.Context {
	if s.Ctx == nil {
		return context.Background()
	}
	return s.Ctx
}

func (s *ModuleSource) tier() msg.Tier {
	if s.Tier == 0 {
		return msg.Keystream
	}
	return s.Tier
}

// SentBytes returns the bytes each party's host has sent to the other so
// far (frame bytes, as the parties count them).
func (s *ModuleSource) SentBytes() [2]uint64 {
	return [2]uint64{s.Pair.SentBytes(0), s.Pair.SentBytes(1)}
}

// Bound returns one bound key pair.
func (s *ModuleSource) Bound(p fss.Params, alpha, beta [2]uint64) (k [2]*fss.Key, err error) {
	ks, err := s.BoundBatch(p, [2][]uint64{{alpha[0]}, {alpha[1]}}, [2][]uint64{{beta[0]}, {beta[1]}})
	if err != nil {
		return k, err
	}
	return [2]*fss.Key{ks[0][0], ks[1][0]}, nil
}

// Derived returns one derived key pair with its α (and β) shares.
func (s *ModuleSource) Derived(p fss.Params, wantBeta bool) (k [2]*fss.Key, as, bs [2]uint64, err error) {
	ks, a, b, err := s.DerivedBatch(p, 1, wantBeta)
	if err != nil {
		return k, as, bs, err
	}
	return [2]*fss.Key{ks[0][0], ks[1][0]}, [2]uint64{a[0][0], a[1][0]}, [2]uint64{b[0][0], b[1][0]}, nil
}

// BoundBatch returns bound key pairs from the modules.
func (s *ModuleSource) BoundBatch(p fss.Params, alpha, beta [2][]uint64) ([2][]*fss.Key, error) {
	if len(alpha[0]) == 0 {
		return [2][]*fss.Key{{}, {}}, nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.Pair.BoundKeys(s.ctx(), s.tier(), p, alpha, beta)
}

// DerivedBatch returns derived key pairs (β = 1 unless wantBeta).
func (s *ModuleSource) DerivedBatch(p fss.Params, count int, wantBeta bool) (keys [2][]*fss.Key, as, bs [2][]uint64, err error) {
	if count == 0 {
		return
	}
	// β = 1 unless derived; the module refuses a public β beside
	// DeriveBeta, so it must be zero then.
	beta := 1 & mask(p.OutBits)
	if wantBeta {
		beta = 0
	}
	s.mu.Lock()
	out, err := s.Pair.DerivedKeys(s.ctx(), p, count, beta, wantBeta)
	s.mu.Unlock()
	if err != nil {
		return keys, as, bs, err
	}
	for b := 0; b < 2; b++ {
		if len(out[b]) != count {
			return keys, as, bs, errors.New("gates: module returned the wrong number of derived keys")
		}
		keys[b] = make([]*fss.Key, count)
		as[b] = make([]uint64, count)
		bs[b] = make([]uint64, count)
		for i, mk := range out[b] {
			keys[b][i], as[b][i], bs[b][i] = mk.Key, mk.AlphaShare, mk.BetaShare
		}
	}
	return keys, as, bs, nil
}
