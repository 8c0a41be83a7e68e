// Package loadgen is the application side of kord's end-to-end runs (kord
// demo, kord chaos, kord bench deliver and the CLI tests): it builds both
// sites' key requests for a class of keys with the secrets it shares out,
// streams them to the two parties, and verifies every key pair it gets
// back against the function the pair must share.
package loadgen

import (
	"context"
	"fmt"
	mrand "math/rand/v2"
	"sync"
	"time"

	"github.com/kord-fss/kord/client"
	"github.com/kord-fss/kord/fss"
	"github.com/kord-fss/kord/internal/prg"
	"github.com/kord-fss/kord/module/msg"
	pb "github.com/kord-fss/kord/proto/kordpb"
)

// Class is one kind of key a load asks for.
type Class struct {
	Mode            msg.Mode // Bound, Derived or Consume
	Tier            msg.Tier // Bound and Consume: the frames' tier (0 for Derived)
	Type            fss.Type
	InBits, OutBits int
}

// Params is the shape of the class's keys.
func (k Class) Params() fss.Params {
	return fss.Params{Type: k.Type, InBits: k.InBits, OutBits: k.OutBits}
}

// TierID is the class's tier as reports name it: otp, mac, batchmac, or
// derived for derived mode.
func (k Class) TierID() string {
	if k.Mode == msg.Derived {
		return "derived"
	}
	return k.Tier.String() // the keystream tier's external name is "otp"
}

// Name is the report key <type>-<ℓ>-<tier>, tier otp/mac/batchmac/derived;
// consume adds "-consume".
func (k Class) Name() string {
	s := fmt.Sprintf("%v-%d-%s", k.Type, k.InBits, k.TierID())
	if k.Mode == msg.Consume {
		s += "-consume"
	}
	return s
}

// Truth is what the application knows of one request: α and β (bound,
// consume) or the public β (derived), and the points (consume).
type Truth struct {
	Alpha, Beta uint64
	Points      []uint64
}

// Requests builds both sites' requests for keys of class k, ids from
// base; derived requests carry up to 64 keys each.
func Requests(k Class, base uint64, keys int, rng *mrand.Rand) (reqs [2][]*pb.KeyRequest, truth []Truth) {
	return RequestsPer(k, base, keys, 64, rng)
}

// RequestsPer is Requests with up to perDerived keys per derived
// request (1..service.MaxCount).
func RequestsPer(k Class, base uint64, keys, perDerived int, rng *mrand.Rand) (reqs [2][]*pb.KeyRequest, truth []Truth) {
	p := k.Params()
	ma, mb := prg.Mask(p.InBits), prg.Mask(p.OutBits)
	id := base
	for keys > 0 {
		switch k.Mode {
		case msg.Derived:
			c := min(keys, perDerived)
			beta := rng.Uint64() & mb
			for b := 0; b < 2; b++ {
				reqs[b] = append(reqs[b], client.Derived(id, p, c, beta, false))
			}
			truth = append(truth, Truth{Beta: beta})
			keys -= c
		default:
			t := Truth{Alpha: rng.Uint64() & ma, Beta: rng.Uint64() & mb}
			if t.Beta == 0 {
				t.Beta = 1
			}
			a0, b0 := rng.Uint64()&ma, rng.Uint64()&mb
			if k.Mode == msg.Consume {
				t.Points = []uint64{t.Alpha, (t.Alpha + 1) & ma, (t.Alpha - 1) & ma, rng.Uint64() & ma}
				reqs[0] = append(reqs[0], client.Consume(id, k.Tier, p, a0, b0, t.Points))
				reqs[1] = append(reqs[1], client.Consume(id, k.Tier, p, (t.Alpha-a0)&ma, (t.Beta-b0)&mb, t.Points))
			} else {
				reqs[0] = append(reqs[0], client.Bound(id, k.Tier, p, a0, b0))
				reqs[1] = append(reqs[1], client.Bound(id, k.Tier, p, (t.Alpha-a0)&ma, (t.Beta-b0)&mb))
			}
			truth = append(truth, t)
			keys--
		}
		id++
	}
	return reqs, truth
}

// CheckKeys evaluates a key pair at α, α±1 and a random point.
func CheckKeys(p fss.Params, key0, key1 *fss.Key, alpha, beta uint64, rng *mrand.Rand) bool {
	if key0 == nil || key1 == nil || key0.Params() != p || key1.Params() != p {
		return false
	}
	m := prg.Mask(p.InBits)
	return fss.CheckPair(key0, key1, alpha, beta, alpha, (alpha+1)&m, (alpha-1)&m, rng.Uint64()&m) == nil
}

// Verify checks both sites' replies to one request; it returns how
// many key pairs verified and failed.
func Verify(k Class, t Truth, r0, r1 *client.Reply, rng *mrand.Rand) (ok, bad int) {
	if r0 == nil || r1 == nil || r0.Err != nil || r1.Err != nil || len(r0.Shares) != len(r1.Shares) || len(r0.Shares) == 0 || r0.ID != r1.ID {
		return 0, 1
	}
	p := k.Params()
	ma, mb := prg.Mask(p.InBits), prg.Mask(p.OutBits)
	for i := range r0.Shares {
		s0, s1 := &r0.Shares[i], &r1.Shares[i]
		good := s0.Counter == s1.Counter
		switch k.Mode {
		case msg.Bound:
			good = good && CheckKeys(p, s0.Key, s1.Key, t.Alpha, t.Beta, rng)
		case msg.Derived:
			alpha := (s0.AlphaShare + s1.AlphaShare) & ma
			good = good && (s0.BetaShare+s1.BetaShare)&mb == t.Beta && CheckKeys(p, s0.Key, s1.Key, alpha, t.Beta, rng)
		case msg.Consume:
			good = good && len(s0.Evals) == len(t.Points) && len(s1.Evals) == len(t.Points)
			for j := 0; good && j < len(t.Points); j++ {
				good = (s0.Evals[j]+s1.Evals[j])&mb == fss.Truth(p, t.Alpha, t.Beta, t.Points[j])
			}
		}
		if good {
			ok++
		} else {
			bad++
		}
	}
	return ok, bad
}

// Stream sends both sites' requests on one stream each and collects the
// replies in order, with their keys parsed (client.Recv): what an
// application gets, and what host.LocalPair hands out in the in-process
// phase, so both timed paths end at parsed key shares. lat[i] is request
// i's latency at site 0.
func Stream(ctx context.Context, apps [2]*client.Client, reqs [2][]*pb.KeyRequest) (reps [2][]*client.Reply, lat []time.Duration, err error) {
	n := len(reqs[0])
	sent := make([]time.Time, n)
	lat = make([]time.Duration, n)
	var wg sync.WaitGroup
	var errs [4]error
	for b := 0; b < 2; b++ {
		st, e := apps[b].Stream(ctx)
		if e != nil {
			return reps, nil, e
		}
		reps[b] = make([]*client.Reply, 0, n)
		var mu sync.Mutex
		wg.Add(2)
		go func() {
			defer wg.Done()
			const chunk = 64
			for i := 0; i < n; i += chunk {
				rs := reqs[b][i:min(i+chunk, n)]
				if b == 0 {
					mu.Lock()
					now := time.Now()
					for k := range rs {
						sent[i+k] = now
					}
					mu.Unlock()
				}
				if e := st.SendBatch(rs); e != nil {
					errs[2*b] = e
					return
				}
			}
			st.CloseSend()
		}()
		go func() {
			defer wg.Done()
			for i := 0; i < n; i++ {
				r, e := st.Recv()
				if e != nil {
					errs[2*b+1] = e
					return
				}
				if b == 0 {
					mu.Lock()
					lat[i] = time.Since(sent[i])
					mu.Unlock()
				}
				reps[b] = append(reps[b], r)
			}
		}()
	}
	wg.Wait()
	for _, e := range errs {
		if e != nil {
			return reps, lat, e
		}
	}
	return reps, lat, nil
}
