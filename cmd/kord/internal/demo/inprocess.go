// Package demo runs kord's demonstrations: the in-process demo (both
// modules and hosts in one process) and the multi-process demo (two
// modules and two parties as child processes on loopback, with the same
// workload run in process and by a dealer for comparison). Each returns a
// report; kord demo maps its flags to these calls and prints the report.
package demo

import (
	"context"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"time"

	"github.com/kord-fss/kord/fss"
	"github.com/kord-fss/kord/host"
	"github.com/kord-fss/kord/internal/prg"
	"github.com/kord-fss/kord/module/msg"
)

// InProcessReport is the JSON form of `kord demo --in-process --json`.
type InProcessReport struct {
	Keys                    int                `json:"keys"`
	PairsVerified           int                `json:"pairs_verified"`
	PairsFailed             int                `json:"pairs_failed"`
	RoundsPerKey            int                `json:"rounds_per_key"`
	RoundsPerKeyByTier      map[string]int     `json:"rounds_per_key_by_tier"`
	KeysPerSec              float64            `json:"keys_per_sec"`
	DealerKeysPerSec        float64            `json:"dealer_keys_per_sec"`
	WireBytesPerPartyPerKey map[string]float64 `json:"wire_bytes_per_party_per_key"`
	DealerBytesPerPartyKey  map[string]float64 `json:"dealer_bytes_per_party_per_key"`
	KeysByMode              map[string]int     `json:"keys_by_mode"`
	Batch                   int                `json:"batch"`
	KEM                     string             `json:"kem"`
}

// chunk is up to M keys of one mode, tier, type and width.
type chunk struct {
	mode   string // bound, consume, derived, dealer
	tier   msg.Tier
	typ    fss.Type
	l      int
	count  int
	tierID string // otp, mac, batchmac, derived, dealer
}

func chunks(keys, batch int, rng *rand.Rand) []chunk {
	type combo struct {
		mode   string
		tier   msg.Tier
		tierID string
	}
	var modes []combo
	for _, m := range []string{"bound", "consume"} {
		for _, t := range []msg.Tier{msg.Keystream, msg.MAC, msg.BatchMAC} {
			modes = append(modes, combo{m, t, t.String()})
		}
	}
	modes = append(modes, combo{"derived", msg.MAC, "derived"}, combo{"dealer", 0, "dealer"})
	var combos []chunk
	for _, m := range modes {
		for _, typ := range []fss.Type{fss.DPF, fss.DCF} {
			for _, l := range []int{8, 16, 32, 64} {
				combos = append(combos, chunk{mode: m.mode, tier: m.tier, tierID: m.tierID, typ: typ, l: l})
			}
		}
	}
	var chunks []chunk
	for i, c := range combos {
		n := keys / len(combos)
		if i < keys%len(combos) {
			n++
		}
		for n > 0 {
			c.count = min(n, batch)
			chunks = append(chunks, c)
			n -= c.count
		}
	}
	rng.Shuffle(len(chunks), func(i, j int) { chunks[i], chunks[j] = chunks[j], chunks[i] })
	return chunks
}

// InProcess is `kord demo --in-process`: both modules and both hosts in
// this process (host.LocalPair), keys of every mode, tier, type and width
// in chunks of up to batch, every pair verified; a dealer's Gen of the same
// shapes for comparison.
func InProcess(ctx context.Context, keys, batch int, kem string, seed uint64, progress io.Writer) (*InProcessReport, error) {
	rng := rand.New(rand.NewPCG(seed, seed>>1^0x64656d6f))
	lp, err := host.NewLocalPair(ctx, host.LocalOptions{KEM: kem, InFlight: batch})
	if err != nil {
		return nil, err
	}
	defer lp.Close()
	if kem == "" {
		kem = "mlkem768"
	}
	rep := &InProcessReport{
		Keys: keys, Batch: batch, KEM: kem,
		RoundsPerKeyByTier:      map[string]int{},
		WireBytesPerPartyPerKey: map[string]float64{},
		DealerBytesPerPartyKey:  map[string]float64{},
		KeysByMode:              map[string]int{},
	}
	bytesBy, keysBy := map[string]uint64{}, map[string]int{}
	var protoKeys, dealerKeys int
	var protoTime, dealerTime time.Duration
	done := 0
	for _, c := range chunks(keys, batch, rng) {
		p := fss.Params{Type: c.typ, InBits: c.l, OutBits: c.l}
		mask := prg.Mask(c.l)
		alphas, betas := make([]uint64, c.count), make([]uint64, c.count)
		name := fmt.Sprintf("%v-%d-%s", c.typ, c.l, c.tierID)
		var k0s, k1s []*fss.Key
		var evals [2][][]uint64
		var points [][]uint64
		var betaBad []bool // derived: the β shares did not add up to β
		switch c.mode {
		case "dealer":
			start := time.Now()
			for i := range alphas {
				alphas[i], betas[i] = rng.Uint64()&mask, rng.Uint64()&mask
				k0, k1, err := fss.Gen(nil, p, alphas[i], betas[i])
				if err != nil {
					return nil, err
				}
				k0s, k1s = append(k0s, k0), append(k1s, k1)
			}
			dealerTime += time.Since(start)
			dealerKeys += c.count
			rep.DealerBytesPerPartyKey[fmt.Sprintf("%v-%d", c.typ, c.l)] = float64(p.KeySize())
		default:
			var reqs [2][]host.Request
			mode := msg.Bound
			switch c.mode {
			case "consume":
				mode = msg.Consume
			case "derived":
				mode = msg.Derived
			}
			// Derived: a public β per chunk, as the process demo's requests
			// (loadgen.Requests) and its in-process phase use.
			dBeta := rng.Uint64() & mask
			for i := 0; i < c.count; i++ {
				var s [2]msg.Share
				for b := range s {
					s[b] = msg.Share{Mode: mode, Type: c.typ, InBits: c.l, OutBits: c.l}
				}
				var pts []uint64
				if mode == msg.Derived {
					s[0].Beta, s[1].Beta = dBeta, dBeta
					betas[i] = dBeta
				} else {
					alphas[i], betas[i] = rng.Uint64()&mask, rng.Uint64()&mask
					a0, b0 := rng.Uint64()&mask, rng.Uint64()&mask
					s[0].AlphaShare, s[0].BetaShare = a0, b0
					s[1].AlphaShare, s[1].BetaShare = (alphas[i]-a0)&mask, (betas[i]-b0)&mask
					if mode == msg.Consume {
						pts = probePoints(rng, alphas[i], mask)
						points = append(points, pts)
					}
				}
				for b := range s {
					reqs[b] = append(reqs[b], host.Request{Share: s[b], Points: pts})
				}
			}
			sent := lp.SentBytes(0)
			sent1 := lp.SentBytes(1)
			rounds := lp.Rounds()
			start := time.Now()
			res, err := lp.Generate(ctx, c.tier, reqs)
			if err != nil {
				return nil, err
			}
			protoTime += time.Since(start)
			protoKeys += c.count
			d0, d1 := lp.SentBytes(0)-sent, lp.SentBytes(1)-sent1
			bytesBy[name] += max(d0, d1)
			keysBy[name] += c.count
			r := int(lp.Rounds() - rounds)
			rep.RoundsPerKeyByTier[c.tierID] = max(rep.RoundsPerKeyByTier[c.tierID], r)
			rep.RoundsPerKey = max(rep.RoundsPerKey, r)
			for i := range res[0] {
				if mode == msg.Derived {
					alphas[i] = (res[0][i].AlphaShare + res[1][i].AlphaShare) & mask
					// The β shares must add up to the public β.
					betaBad = append(betaBad, (res[0][i].BetaShare+res[1][i].BetaShare)&mask != dBeta)
				}
				if mode == msg.Consume {
					evals[0] = append(evals[0], res[0][i].Evals)
					evals[1] = append(evals[1], res[1][i].Evals)
					continue
				}
				k0s, k1s = append(k0s, res[0][i].Key), append(k1s, res[1][i].Key)
			}
		}
		for i := 0; i < c.count; i++ {
			ok := true
			if c.mode == "consume" {
				ok = checkEvals(p, alphas[i], betas[i], points[i], evals[0][i], evals[1][i])
			} else {
				ok = checkKeys(p, k0s[i], k1s[i], alphas[i], betas[i], probePoints(rng, alphas[i], mask)) &&
					(i >= len(betaBad) || !betaBad[i])
				k0s[i].Wipe()
				k1s[i].Wipe()
			}
			if ok {
				rep.PairsVerified++
			} else {
				rep.PairsFailed++
			}
		}
		rep.KeysByMode[c.mode] += c.count
		done += c.count
		if progress != nil {
			fmt.Fprintf(progress, "\rdemo: %d/%d keys, %d verified, %d failed", done, keys, rep.PairsVerified, rep.PairsFailed)
		}
	}
	if progress != nil {
		fmt.Fprintln(progress)
	}
	for k, b := range bytesBy {
		rep.WireBytesPerPartyPerKey[k] = math.Round(float64(b)/float64(keysBy[k])*1000) / 1000
	}
	if protoTime > 0 {
		rep.KeysPerSec = math.Round(float64(protoKeys) / protoTime.Seconds())
	}
	if dealerTime > 0 {
		rep.DealerKeysPerSec = math.Round(float64(dealerKeys) / dealerTime.Seconds())
	}
	return rep, nil
}

// probePoints returns α, α±1 and two random points.
func probePoints(rng *rand.Rand, alpha, mask uint64) []uint64 {
	return []uint64{alpha, (alpha + 1) & mask, (alpha - 1) & mask, rng.Uint64() & mask, rng.Uint64() & mask}
}

func checkKeys(p fss.Params, k0, k1 *fss.Key, alpha, beta uint64, pts []uint64) bool {
	if k0 == nil || k0.Params() != p {
		return false
	}
	return fss.CheckPair(k0, k1, alpha, beta, pts...) == nil
}

func checkEvals(p fss.Params, alpha, beta uint64, pts, e0, e1 []uint64) bool {
	if len(e0) != len(pts) || len(e1) != len(pts) {
		return false
	}
	for i, x := range pts {
		if (e0[i]+e1[i])&prg.Mask(p.OutBits) != fss.Truth(p, alpha, beta, x) {
			return false
		}
	}
	return true
}
