package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/kord-fss/kord/fss"
	"github.com/kord-fss/kord/host"
	"github.com/kord-fss/kord/internal/prg"
	"github.com/kord-fss/kord/module"
	"github.com/kord-fss/kord/module/msg"
	"github.com/kord-fss/kord/service"
)

func init() {
	rootCmd.AddCommand(demoCmd())
}

// demoReport is the JSON form of `kord demo --json`.
type demoReport struct {
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

// demoChunk is up to M keys of one mode, tier, type and width.
type demoChunk struct {
	mode   string // bound, consume, derived, dealer
	tier   msg.Tier
	typ    fss.Type
	l      int
	count  int
	tierID string // otp, mac, batchmac, derived, dealer
}

// demoOpts are the flags of `kord demo`.
type demoOpts struct {
	inProcess, json bool
	keys            int
	batch           int // keys per batch (both paths)
	inFlight        int // batches outstanding between the parties (process path)
	kem             string
	seed            uint64
}

// check validates every flag, whichever path the demo takes.
func (o demoOpts) check(cmd *cobra.Command) error {
	if o.keys < 1 {
		return badInput("--keys %d must be at least 1", o.keys)
	}
	if o.batch < 1 || o.batch > service.MaxCount {
		return badInput("--batch %d is outside 1..%d", o.batch, service.MaxCount)
	}
	if o.inFlight < 1 || o.inFlight > 1024 {
		return badInput("--in-flight %d is outside 1..1024", o.inFlight)
	}
	if err := checkKEM(o.kem); err != nil {
		return err
	}
	if !o.inProcess {
		return nil
	}
	if cmd.Flags().Changed("peer-plaintext") {
		return badInput("--peer-plaintext is for the demo's party processes: leave out --in-process (which has no peer link)")
	}
	if cmd.Flags().Changed("in-flight") {
		return badInput("--in-flight (batches outstanding between the parties) is for the demo's party processes: leave out --in-process (whose hosts run one batch at a time); --batch sets the keys per batch")
	}
	return nil
}

// checkKEM refuses a pairing KEM the modules do not know ("" = default).
func checkKEM(kem string) error {
	if kem == "" || slices.Contains(module.KEMs(), kem) {
		return nil
	}
	return badInput("--kem %q: want one of %s", kem, strings.Join(module.KEMs(), ", "))
}

// demoCmd is `kord demo`: two modules and two hosts, many keys, every pair
// checked by evaluation.
func demoCmd() *cobra.Command {
	var o demoOpts
	cmd := &cobra.Command{
		Use:   "demo [--in-process] --keys N [--json]",
		Short: "Pair two modules, generate keys of every mode, tier, type and width through two hosts, verify every pair",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := o.check(cmd); err != nil {
				return err
			}
			if !o.inProcess {
				return demoProcesses(cmd, o) // demo_processes.go
			}
			seed := o.seed
			if seed == 0 {
				seed = uint64(time.Now().UnixNano())
			}
			var progress io.Writer
			if !o.json {
				progress = cmd.ErrOrStderr()
			}
			rep, err := runDemo(cmd.Context(), o.keys, o.batch, o.kem, seed, progress)
			if err != nil {
				return err
			}
			w := cmd.OutOrStdout()
			if o.json {
				enc := json.NewEncoder(w)
				enc.SetIndent("", "  ")
				if err := enc.Encode(rep); err != nil {
					return err
				}
			} else {
				fmt.Fprintf(w, "%d pairs verified, %d failed; %d round per key; %.0f keys/s (dealer Gen %.0f keys/s)\n",
					rep.PairsVerified, rep.PairsFailed, rep.RoundsPerKey, rep.KeysPerSec, rep.DealerKeysPerSec)
				for _, k := range []string{"dpf-16-otp", "dpf-16-mac", "dpf-16-batchmac", "dpf-32-derived"} {
					note := ""
					switch k {
					case "dpf-16-batchmac":
						note = " (the default tier)"
					case "dpf-16-otp":
						note = " (opt-in: semi-honest hosts and network only)"
					}
					fmt.Fprintf(w, "  %-16s %g bytes per party per key%s\n", k, rep.WireBytesPerPartyPerKey[k], note)
				}
			}
			if rep.PairsFailed != 0 {
				return fmt.Errorf("demo: %d key pairs failed verification", rep.PairsFailed)
			}
			return nil
		},
	}
	f := cmd.Flags()
	f.BoolVar(&o.inProcess, "in-process", false, "run both modules and both hosts in this process")
	f.IntVar(&o.keys, "keys", 1000, "number of keys")
	f.IntVar(&o.batch, "batch", service.DefaultBatch, fmt.Sprintf("keys per batch (1..%d), as kord party --batch", service.MaxCount))
	f.IntVar(&o.inFlight, "in-flight", service.DefaultInFlight, "without --in-process: batches outstanding between the parties (1..1024), as kord party --in-flight")
	f.StringVar(&o.kem, "kem", "", "pairing KEM: "+strings.Join(module.KEMs(), ", ")+" (default mlkem768)")
	f.BoolVar(&o.json, "json", false, "print the report as JSON")
	f.Uint64Var(&o.seed, "seed", 0, "seed of the demo's random requests (0 = from the clock)")
	f.Bool("peer-plaintext", false, "without --in-process: run the parties' peer link without TLS (default: mutual TLS 1.3 with certificates made for the run), to see what TLS costs")
	return cmd
}

func demoChunks(keys, batch int, rng *rand.Rand) []demoChunk {
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
	var combos []demoChunk
	for _, m := range modes {
		for _, typ := range []fss.Type{fss.DPF, fss.DCF} {
			for _, l := range []int{8, 16, 32, 64} {
				combos = append(combos, demoChunk{mode: m.mode, tier: m.tier, tierID: m.tierID, typ: typ, l: l})
			}
		}
	}
	var chunks []demoChunk
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

func runDemo(ctx context.Context, keys, batch int, kem string, seed uint64, progress io.Writer) (*demoReport, error) {
	rng := rand.New(rand.NewPCG(seed, seed>>1^0x64656d6f))
	lp, err := host.NewLocalPair(ctx, host.LocalOptions{KEM: kem, InFlight: batch})
	if err != nil {
		return nil, err
	}
	defer lp.Close()
	if kem == "" {
		kem = "mlkem768"
	}
	rep := &demoReport{
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
	for _, c := range demoChunks(keys, batch, rng) {
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
			d := &fss.Dealer{}
			start := time.Now()
			for i := range alphas {
				alphas[i], betas[i] = rng.Uint64()&mask, rng.Uint64()&mask
				k0, k1, err := d.Deal(p, alphas[i], betas[i])
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
						pts = demoPoints(rng, alphas[i], mask)
						points = append(points, pts)
					}
				}
				for b := range s {
					reqs[b] = append(reqs[b], host.Request{Share: s[b], Points: pts})
				}
			}
			sent := lp.Links[0].SentBytes()
			sent1 := lp.Links[1].SentBytes()
			rounds := lp.Hosts[0].Rounds()
			start := time.Now()
			res, err := lp.Generate(ctx, c.tier, reqs)
			if err != nil {
				return nil, err
			}
			protoTime += time.Since(start)
			protoKeys += c.count
			d0, d1 := lp.Links[0].SentBytes()-sent, lp.Links[1].SentBytes()-sent1
			bytesBy[name] += max(d0, d1)
			keysBy[name] += c.count
			r := int(lp.Hosts[0].Rounds() - rounds)
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
				ok = demoCheckEvals(p, alphas[i], betas[i], points[i], evals[0][i], evals[1][i])
			} else {
				ok = demoCheckKeys(p, k0s[i], k1s[i], alphas[i], betas[i], demoPoints(rng, alphas[i], mask)) &&
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

// demoPoints returns α, α±1 and two random points.
func demoPoints(rng *rand.Rand, alpha, mask uint64) []uint64 {
	return []uint64{alpha, (alpha + 1) & mask, (alpha - 1) & mask, rng.Uint64() & mask, rng.Uint64() & mask}
}

func demoCheckKeys(p fss.Params, k0, k1 *fss.Key, alpha, beta uint64, pts []uint64) bool {
	if k0 == nil || k0.Params() != p {
		return false
	}
	return fss.CheckPair(k0, k1, alpha, beta, pts...) == nil
}

func demoCheckEvals(p fss.Params, alpha, beta uint64, pts, e0, e1 []uint64) bool {
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
