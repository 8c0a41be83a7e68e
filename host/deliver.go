package host

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"runtime"
	"time"

	"github.com/kord-fss/kord/fss"
	"github.com/kord-fss/kord/internal/prg"
	"github.com/kord-fss/kord/module/msg"
)

// benchBatch is the batch size (keys per submission) MeasureDelivered uses.
const benchBatch = 4096

// deliverer runs rounds of one LocalPair at one shape and mode and checks
// every pair it delivers, outside the clock.
type deliverer struct {
	lp   *LocalPair
	p    fss.Params
	tier msg.Tier // 0: derived mode
	n    int      // keys per round
	slab bool     // the slab API (DerivedSlab, BoundSlab), not the *fss.Key one
	rng  *rand.Rand

	alphas, betas [2][]uint64

	verified, failed int
	// clockCPU is cpuNow() when the last round's clock stopped (cpuNow
	// nil: not taken).
	clockCPU time.Duration
	cpuNow   func() time.Duration
}

// stop stops a round's clock.
func (d *deliverer) stop(start time.Time) time.Duration {
	el := time.Since(start)
	if d.cpuNow != nil {
		d.clockCPU = d.cpuNow()
	}
	return el
}

func newDeliverer(ctx context.Context, p fss.Params, mode msg.Mode, tier msg.Tier, n int, slab bool) (*deliverer, error) {
	d := &deliverer{p: p, n: n, slab: slab, rng: rand.New(rand.NewPCG(rand.Uint64(), rand.Uint64()))}
	switch mode {
	case msg.Derived:
	case msg.Bound:
		if tier != msg.Keystream && tier != msg.MAC && tier != msg.BatchMAC {
			return nil, fmt.Errorf("host: tier %v: want otp, mac or batchmac", tier)
		}
		d.tier = tier
	default:
		return nil, fmt.Errorf("host: mode %v: want derived or bound", mode)
	}
	if err := p.Validate(); err != nil {
		return nil, err
	}
	lp, err := NewLocalPair(ctx, LocalOptions{InFlight: n})
	if err != nil {
		return nil, err
	}
	d.lp = lp
	for b := range 2 {
		d.alphas[b], d.betas[b] = make([]uint64, slabBurst*n), make([]uint64, slabBurst*n)
	}
	return d, nil
}

func (d *deliverer) close() { d.lp.Close() }

// round delivers n key pairs and returns the time the delivery took (not
// counting the check) and the number of keys. The check's garbage is
// collected before it returns, so that it does not land on the next
// round's clock.
func (d *deliverer) round(ctx context.Context) (time.Duration, int, error) {
	defer runtime.GC()
	ma, mb := prg.Mask(d.p.InBits), prg.Mask(d.p.OutBits)
	if d.slab {
		return d.roundSlab(ctx)
	}
	if d.tier == 0 {
		start := time.Now()
		out, err := d.lp.DerivedKeys(ctx, d.p, d.n, 0, true)
		el := d.stop(start)
		if err != nil {
			return 0, 0, err
		}
		for i := range out[0] {
			a := (out[0][i].AlphaShare + out[1][i].AlphaShare) & ma
			be := (out[0][i].BetaShare + out[1][i].BetaShare) & mb
			d.check(out[0][i].Key, out[1][i].Key, a, be)
		}
		return el, d.n, nil
	}
	for i := range d.n {
		for b := range 2 {
			d.alphas[b][i], d.betas[b][i] = d.rng.Uint64()&ma, d.rng.Uint64()&mb
		}
	}
	as := [2][]uint64{d.alphas[0][:d.n], d.alphas[1][:d.n]}
	bs := [2][]uint64{d.betas[0][:d.n], d.betas[1][:d.n]}
	start := time.Now()
	keys, err := d.lp.BoundKeys(ctx, d.tier, d.p, as, bs)
	el := d.stop(start)
	if err != nil {
		return 0, 0, err
	}
	for i := range keys[0] {
		d.check(keys[0][i], keys[1][i], (d.alphas[0][i]+d.alphas[1][i])&ma, (d.betas[0][i]+d.betas[1][i])&mb)
	}
	return el, d.n, nil
}

// slabBurst is how many bulks roundSlab delivers back to back before it
// checks them, as an application streaming keys receives them.
const slabBurst = 4

// roundSlab is round over the slab API: slabBurst bulks delivered back
// to back, then every pair checked (each key parsed from the slabs),
// outside the clock.
func (d *deliverer) roundSlab(ctx context.Context) (time.Duration, int, error) {
	ma, mb := prg.Mask(d.p.InBits), prg.Mask(d.p.OutBits)
	var slabs [slabBurst][2]*msg.Slab
	defer func() {
		for _, s := range slabs {
			d.lp.Release(s)
		}
	}()
	var el time.Duration
	for j := range slabBurst {
		var err error
		if d.tier == 0 {
			start := time.Now()
			slabs[j], err = d.lp.DerivedSlab(ctx, d.p, d.n, 0, true)
			el += d.stop(start)
		} else {
			var as, bs [2][]uint64
			for b := range 2 {
				as[b], bs[b] = d.alphas[b][j*d.n:(j+1)*d.n], d.betas[b][j*d.n:(j+1)*d.n]
				for i := range d.n {
					as[b][i], bs[b][i] = d.rng.Uint64()&ma, d.rng.Uint64()&mb
				}
			}
			start := time.Now()
			slabs[j], err = d.lp.BoundSlab(ctx, d.tier, d.p, as, bs)
			el += d.stop(start)
		}
		if err != nil {
			return 0, 0, err
		}
	}
	for j, s := range slabs {
		for i := range s[0].N {
			var a, be uint64
			if d.tier == 0 {
				a, be = (s[0].AlphaShares[i]+s[1].AlphaShares[i])&ma, (s[0].BetaShares[i]+s[1].BetaShares[i])&mb
			} else {
				x := j*d.n + i
				a, be = (d.alphas[0][x]+d.alphas[1][x])&ma, (d.betas[0][x]+d.betas[1][x])&mb
			}
			k0, err0 := fss.ParseKey(s[0].Key(i))
			k1, err1 := fss.ParseKey(s[1].Key(i))
			if err0 != nil || err1 != nil {
				d.failed++
				continue
			}
			d.check(k0, k1, a, be)
		}
	}
	return el, slabBurst * d.n, nil
}

// check verifies one pair at α, its neighbours and a random point, and
// wipes both keys.
func (d *deliverer) check(k0, k1 *fss.Key, alpha, beta uint64) {
	defer func() {
		if k0 != nil {
			k0.Wipe()
		}
		if k1 != nil {
			k1.Wipe()
		}
	}()
	if k0 == nil || k0.Params() != d.p {
		d.failed++
		return
	}
	ma := prg.Mask(d.p.InBits)
	if fss.CheckPair(k0, k1, alpha, beta, alpha, (alpha-1)&ma, (alpha+1)&ma, d.rng.Uint64()&ma) != nil {
		d.failed++
		return
	}
	d.verified++
}

// MeasureDelivered measures the rate at which an application receives
// key pairs of shape params from a fresh LocalPair (both software modules
// and hosts in this process) at its best settings: mode is msg.Derived
// (random α and β drawn inside the modules; tier is ignored) or msg.Bound
// (shares of random α and β drawn here, frames under tier), n the number
// of key pairs to deliver (rounded up to whole rounds: four bulks of up to
// 4096 keys, delivered back to back, then checked). Every pair is checked
// outside the clock — Eval(0,k0,x)+Eval(1,k1,x) = f(x) at α, α±1 and a
// random point — and counted in verified or failed; keysPerSec counts
// only the delivery. The application receives its keys as slabs
// (LocalPair.DerivedSlab, BoundSlab): the keys at a fixed stride, to be
// viewed in place.
func MeasureDelivered(ctx context.Context, params fss.Params, mode msg.Mode, tier msg.Tier, n int) (keysPerSec float64, verified, failed int, err error) {
	if n <= 0 {
		return 0, 0, 0, errors.New("host: MeasureDelivered needs n > 0")
	}
	d, err := newDeliverer(ctx, params, mode, tier, min(n, benchBatch), true)
	if err != nil {
		return 0, 0, 0, err
	}
	defer d.close()
	// One round unclocked: first-use costs (buffers, generators).
	if _, _, err := d.round(ctx); err != nil {
		return 0, d.verified, d.failed, err
	}
	d.verified, d.failed = 0, 0
	var clock time.Duration
	keys := 0
	for keys < n {
		el, k, err := d.round(ctx)
		if err != nil {
			return 0, d.verified, d.failed, err
		}
		clock += el
		keys += k
	}
	return float64(keys) / clock.Seconds(), d.verified, d.failed, nil
}
