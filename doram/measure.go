package doram

import (
	"context"
	"math/rand/v2"
	"time"

	"github.com/kord-fss/kord/fss"
)

// Rates compares the key pairs a key source supplies per second with the
// key pairs the ORAM's accesses consume per second, at one address width.
type Rates struct {
	Source string `json:"source"`
	D      int    `json:"d"`
	Stash  int    `json:"stash"` // stash entries during the timed accesses
	// KeysPerAccess is 1 + Stash.
	KeysPerAccess int `json:"keys_per_access"`
	// SuppliedPerSec: key pairs (DPF d→64, bound mode) the source generates
	// per second, in batches.
	SuppliedPerSec float64 `json:"keys_supplied_per_sec"`
	// ConsumedPerSec: key pairs the accesses use per second of their local
	// evaluation work (both parties in parallel, keys already in hand).
	ConsumedPerSec float64 `json:"keys_consumed_per_sec"`
	AccessesPerSec float64 `json:"accesses_per_sec"`
	// Ratio is SuppliedPerSec / ConsumedPerSec; ≥ 1 means supply keeps up.
	Ratio float64 `json:"supply_over_consumption"`
}

// Measure fills an ORAM of width d with stash writes, then times key supply
// (batches of 64 pairs) and consumption (accesses), each for about minTime.
func Measure(ctx context.Context, d, stash int, src KeySource, minTime time.Duration) (*Rates, error) {
	rng := rand.New(rand.NewPCG(uint64(d), 99))
	rom := make([]uint64, 1<<uint(d))
	for i := range rom {
		rom[i] = rng.Uint64()
	}
	o, err := New(d, rom, stash, src)
	if err != nil {
		return nil, err
	}
	share := func(v uint64) [2]uint64 {
		r := rng.Uint64()
		return [2]uint64{r, v - r}
	}
	for o.StashLen() < stash {
		if _, err := o.Write(ctx, share(rng.Uint64()&mask(d)), share(rng.Uint64())); err != nil {
			return nil, err
		}
	}
	res := &Rates{Source: src.Name(), D: d, Stash: o.StashLen(), KeysPerAccess: o.KeysPerAccess()}

	// Supply.
	const batch = 64
	p := fss.Params{Type: fss.DPF, InBits: d, OutBits: 64}
	var alpha, beta [2][]uint64
	for b := 0; b < 2; b++ {
		alpha[b], beta[b] = make([]uint64, batch), make([]uint64, batch)
		for i := range alpha[b] {
			alpha[b][i], beta[b][i] = rng.Uint64()&mask(d), rng.Uint64()
		}
	}
	n, t0 := 0, time.Now()
	for n == 0 || time.Since(t0) < minTime {
		if _, err := src.BoundDPFs(ctx, p, alpha, beta); err != nil {
			return nil, err
		}
		n += batch
	}
	res.SuppliedPerSec = float64(n) / time.Since(t0).Seconds()

	// Consumption: keys fetched outside the timed region.
	var spent time.Duration
	accesses, keys := 0, 0
	for accesses == 0 || spent < minTime {
		idx := share(rng.Uint64() & mask(d))
		ks, masks, err := o.fetchKeys(ctx, idx)
		if err != nil {
			return nil, err
		}
		t := time.Now()
		if _, err := o.evaluate(idx, ks, masks); err != nil {
			return nil, err
		}
		spent += time.Since(t)
		accesses++
		keys += len(ks[0])
	}
	res.ConsumedPerSec = float64(keys) / spent.Seconds()
	res.AccessesPerSec = float64(accesses) / spent.Seconds()
	res.Ratio = res.SuppliedPerSec / res.ConsumedPerSec
	return res, nil
}
