// Package compare is `kord compare` (issue 25): the dealerless 2PC
// baseline (baseline/twopc) and kord (two paired software modules, bound
// mode, otp and mac tiers) generating the same DPF and DCF keys across the
// same shaped link (internal/netshape) in the same run, with rounds, bytes
// per party and seconds per key for both, their ratios, and Xing et al.'s
// published figures beside them. Every key of both systems is verified by
// Eval (fss.CheckPair). The baseline is a full-tree protocol; widths above
// Config.MaxMeasured are extrapolated from the measured widths by a
// non-negative least-squares fit (seconds = A·exchanges + C·2^ℓ) that the
// report prints.
package compare

import (
	"context"
	crand "crypto/rand"
	"errors"
	"fmt"
	"io"
	"math"
	mrand "math/rand/v2"
	"runtime"
	"slices"
	"time"

	"github.com/kord-fss/kord/baseline/twopc"
	"github.com/kord-fss/kord/fss"
	"github.com/kord-fss/kord/gates"
	"github.com/kord-fss/kord/host"
	"github.com/kord-fss/kord/internal/netshape"
	"github.com/kord-fss/kord/internal/prg"
	"github.com/kord-fss/kord/module/msg"
)

// Config is what kord compare measures.
type Config struct {
	Link string // netshape preset
	Bits []int  // rows' input widths ℓ (output width n = ℓ)
	// MaxMeasured is the widest ℓ the full-tree baseline runs; wider rows
	// are extrapolated. FitBits are extra widths measured only for the fit.
	MaxMeasured int
	FitBits     []int
	// BaselineKeys and KordKeys are the keys timed per measured row.
	BaselineKeys, KordKeys int
	// BlockBits are the widths at which the gates' building blocks are
	// rows (none when empty); BlockOps operations each, verified; blocks
	// needing more than MaxBlockKeys keys per operation are skipped.
	BlockBits              []int
	BlockOps, MaxBlockKeys int
}

// DefaultConfig is kord compare's default: ℓ ∈ {8,16,18,32}, the baseline
// measured up to ℓ = 20 (ℓ = 12 and 20 for the fit only).
func DefaultConfig() Config {
	return Config{Link: "loopback", Bits: []int{8, 16, 18, 32}, MaxMeasured: 20, FitBits: []int{12, 20},
		BaselineKeys: 5, KordKeys: 20, BlockBits: []int{8}, BlockOps: 2, MaxBlockKeys: twopc.MaxBatch}
}

// Check validates every field; its errors name kord compare's flags.
func (c Config) Check() error {
	if _, err := netshape.Preset(c.Link); err != nil {
		return fmt.Errorf("--link: %w", err)
	}
	if len(c.Bits) == 0 {
		return errors.New("--bits: no widths")
	}
	for _, l := range append(slices.Clone(c.Bits), c.FitBits...) {
		if l < 1 || l > 64 {
			return fmt.Errorf("--bits: %d is outside 1..64", l)
		}
	}
	for _, l := range c.BlockBits {
		if l < 2 || l > 32 {
			return fmt.Errorf("--block-bits: %d is outside 2..32", l)
		}
	}
	switch {
	case c.MaxMeasured < 1 || c.MaxMeasured > 26:
		return fmt.Errorf("--max-measured %d is outside 1..26 (the baseline expands the full tree: 2^ℓ seeds per party)", c.MaxMeasured)
	case c.BaselineKeys < 1 || c.BaselineKeys > 1000:
		return fmt.Errorf("--baseline-keys %d is outside 1..1000", c.BaselineKeys)
	case c.KordKeys < 1 || c.KordKeys > 100000:
		return fmt.Errorf("--kord-keys %d is outside 1..100000", c.KordKeys)
	case len(c.BlockBits) > 0 && (c.BlockOps < 1 || c.BlockOps > 64):
		return fmt.Errorf("--block-ops %d is outside 1..64", c.BlockOps)
	case len(c.BlockBits) > 0 && (c.MaxBlockKeys < 1 || c.MaxBlockKeys > 4096):
		return fmt.Errorf("--max-block-keys %d is outside 1..4096", c.MaxBlockKeys)
	}
	return nil
}

// Row is one block, width, link and kord tier.
type Row struct {
	Block                 string  `json:"block"`
	InBits                int     `json:"in_bits"`
	Link                  string  `json:"link"`
	Tier                  string  `json:"tier"`
	BaselineRounds        int     `json:"baseline_rounds"`
	BaselineBytesPerParty uint64  `json:"baseline_bytes_per_party"`
	BaselineSeconds       float64 `json:"baseline_seconds"`
	KordRounds            int     `json:"kord_rounds"`
	KordBytesPerParty     uint64  `json:"kord_bytes_per_party"`
	KordSeconds           float64 `json:"kord_seconds"`
	// BytesRatio is baseline ÷ kord bytes; 0 when kord sent nothing (a
	// block whose keys are all derived: the ratio is unbounded).
	BytesRatio   float64 `json:"bytes_ratio"`
	TimeRatio    float64 `json:"time_ratio"`
	KeysVerified int     `json:"keys_verified"`
	Extrapolated bool    `json:"extrapolated,omitempty"`
}

// Published is a figure of Xing et al. (NDSS'25) as quoted in the KORD
// paper and issue 25, or from their cost formulas (gates.XingKeyCost).
type Published struct {
	Block   string  `json:"block"`
	InBits  int     `json:"in_bits"`
	Rounds  int     `json:"rounds"`
	Bytes   float64 `json:"bytes,omitempty"`
	LANSecs float64 `json:"lan_seconds,omitempty"`
	WANSecs float64 `json:"wan_seconds,omitempty"`
	Source  string  `json:"source"`
}

// Report is kord compare's output.
type Report struct {
	Link string `json:"link"`
	CPUs int    `json:"cpus"`
	// BaselineSetup is one baseline session's setup per party (256 base
	// OTs, both directions), paid once per session, not per key.
	BaselineSetupRounds int    `json:"baseline_setup_rounds"`
	BaselineSetupBytes  uint64 `json:"baseline_setup_bytes_per_party"`
	Rows                []Row  `json:"rows"`
	// Skipped names the blocks left out, with why.
	Skipped   []string    `json:"skipped_blocks,omitempty"`
	Fits      []Fit       `json:"fits"`
	Published []Published `json:"published"`
}

// published lists the quoted figures and the formula costs for the rows.
func published(bits []int) []Published {
	var out []Published
	for _, typ := range []fss.Type{fss.DPF, fss.DCF} {
		for _, l := range bits {
			pb := Published{Block: blockName(typ), InBits: l, Source: "Xing et al. formula: DPF 9ℓ+5 rounds, 18λℓ+5λ+13ℓ+2 bits; DCF 16ℓ+7 rounds"}
			if typ == fss.DPF {
				pb.Rounds = 9*l + 5
				pb.Bytes = float64(18*128*l+5*128+13*l+2) / 8
			} else {
				pb.Rounds = 16*l + 7
			}
			switch {
			case typ == fss.DPF && l == 8:
				pb.Bytes, pb.LANSecs, pb.WANSecs = 0.046e6, 0.050, 1.288
				pb.Source = "Xing et al. Tables II/III as quoted by KORD (0.046 MB; 10 Gbps/0.05 ms LAN, 40 Mbps/20 ms WAN); rounds from the formula"
			case typ == fss.DCF && l == 18:
				pb.Bytes, pb.LANSecs, pb.WANSecs = 0.310e6, 0.280, 5.247
				pb.Source = "Xing et al. Tables II/III as quoted by KORD (0.310 MB); rounds from the formula"
			}
			out = append(out, pb)
		}
	}
	return out
}

func blockName(t fss.Type) string {
	if t == fss.DPF {
		return "DPF"
	}
	return "DCF"
}

type measured struct {
	rounds   int
	bytes    uint64
	seconds  float64 // median per key
	fastest  float64 // fastest key: the fits use it, as load only slows a key down
	verified int
}

// Run measures every row; progress goes to w.
func Run(ctx context.Context, c Config, w io.Writer) (*Report, error) {
	if err := c.Check(); err != nil {
		return nil, err
	}
	link, _ := netshape.Preset(c.Link)
	say := func(format string, a ...any) { fmt.Fprintf(w, format, a...) }
	rng := mrand.New(mrand.NewPCG(uint64(time.Now().UnixNano()), 0x636d70))
	say("compare: %s; baseline session setup (256 base OTs)… ", link)
	pr, err := twopc.NewPair(ctx, link, [2]io.Reader{})
	if err != nil {
		return nil, fmt.Errorf("baseline session: %w", err)
	}
	defer pr.Close()
	su := pr.S[0].SetupCost()
	if s1 := pr.S[1].SetupCost(); s1.Bytes > su.Bytes {
		su = s1
	}
	say("pairing kord's modules… ")
	kp, err := newKordPair(ctx, link)
	if err != nil {
		return nil, err
	}
	defer kp.close()
	say("done.\n")
	rep := &Report{Link: c.Link, CPUs: runtime.NumCPU(), BaselineSetupRounds: su.Rounds, BaselineSetupBytes: su.Bytes,
		Published: published(c.Bits)}
	widths := slices.Clone(c.Bits)
	for _, l := range c.FitBits {
		if !slices.Contains(widths, l) {
			widths = append(widths, l)
		}
	}
	slices.Sort(widths)
	var lpr *twopc.Pair
	for _, typ := range []fss.Type{fss.DPF, fss.DCF} {
		base := map[int]measured{}
		var fitPts [][2]float64
		for _, l := range widths {
			if l > c.MaxMeasured {
				continue
			}
			p := fss.Params{Type: typ, InBits: l, OutBits: l}
			say("  baseline %-8v ", p)
			m, err := measureBaseline(ctx, pr, p, c.BaselineKeys, rng)
			if err != nil {
				return nil, fmt.Errorf("baseline %v: %w", p, err)
			}
			say("%3d exchanges %8d B/party %9.4f s/key, %d keys verified\n", m.rounds, m.bytes, m.seconds, m.verified)
			base[l] = m
			fitPts = append(fitPts, [2]float64{float64(l), m.fastest})
		}
		fit, err := fitSeconds(typ, c.Link, fitPts)
		extrapolate := slices.ContainsFunc(c.Bits, func(l int) bool { return l > c.MaxMeasured })
		if err != nil && extrapolate {
			return nil, err
		}
		if err == nil && extrapolate && !link.Unshaped() {
			// On a shaped link the latency swamps the 2^ℓ term; take the
			// local work per leaf from the same widths on an unshaped
			// loopback session in this run, and fit only the per-exchange
			// time here.
			if lpr == nil {
				say("  (an unshaped loopback baseline session for the fit's local-work term)\n")
				if lpr, err = twopc.NewPair(ctx, netshape.Profile{Name: "loopback"}, [2]io.Reader{}); err != nil {
					return nil, fmt.Errorf("baseline loopback session: %w", err)
				}
				defer lpr.Close()
			}
			var loopPts [][2]float64
			for _, pt := range fitPts {
				p := fss.Params{Type: typ, InBits: int(pt[0]), OutBits: int(pt[0])}
				m, err := measureBaseline(ctx, lpr, p, c.BaselineKeys, rng)
				if err != nil {
					return nil, fmt.Errorf("baseline %v on loopback: %w", p, err)
				}
				loopPts = append(loopPts, [2]float64{pt[0], m.fastest})
			}
			loop, err := fitSeconds(typ, "loopback", loopPts)
			if err != nil {
				return nil, err
			}
			rep.Fits = append(rep.Fits, loop)
			fit = fitFixedLeaf(typ, c.Link, fitPts, loop.C)
		}
		if err == nil {
			rep.Fits = append(rep.Fits, fit)
		}
		for _, l := range c.Bits {
			p := fss.Params{Type: typ, InBits: l, OutBits: l}
			bm, ok := base[l]
			extra := !ok
			if extra {
				bm = measured{rounds: twopc.ExchangesPerKey(p), bytes: max(twopc.BytesPerKey(p, 0), twopc.BytesPerKey(p, 1)),
					seconds: fit.at(l)}
			}
			for _, tier := range []msg.Tier{msg.Keystream, msg.MAC} {
				say("  kord     %-8v %-4v ", p, tier)
				km, err := measureKord(ctx, kp, tier, p, c.KordKeys, rng)
				if err != nil {
					return nil, fmt.Errorf("kord %v %v: %w", p, tier, err)
				}
				say("%3d rounds    %8d B/party %9.6f s/key, %d keys verified\n", km.rounds, km.bytes, km.seconds, km.verified)
				rep.Rows = append(rep.Rows, Row{
					Block: blockName(typ), InBits: l, Link: c.Link, Tier: tier.String(),
					BaselineRounds: bm.rounds, BaselineBytesPerParty: bm.bytes, BaselineSeconds: round6(bm.seconds),
					KordRounds: km.rounds, KordBytesPerParty: km.bytes, KordSeconds: round6(km.seconds),
					BytesRatio: round2(float64(bm.bytes) / float64(km.bytes)), TimeRatio: round2(bm.seconds / km.seconds),
					KeysVerified: bm.verified + km.verified, Extrapolated: extra,
				})
			}
		}
	}
	if err := runBlocks(ctx, c, rep, pr, kp, say); err != nil {
		return nil, err
	}
	return rep, nil
}

// runBlocks adds a row per gate block, width and tier (blocks.go).
func runBlocks(ctx context.Context, c Config, rep *Report, pr *twopc.Pair, kp *kordPair, say func(string, ...any)) error {
	for _, l := range c.BlockBits {
		gs, err := gates.StandardGates(l, nil)
		if err != nil {
			return fmt.Errorf("gates at ℓ = %d: %w", l, err)
		}
		for _, g := range gs {
			name := gateName(g)
			shapes, err := complement(g)
			if err != nil {
				return fmt.Errorf("%s at ℓ = %d: %w", name, l, err)
			}
			if len(shapes) > c.MaxBlockKeys {
				rep.Skipped = append(rep.Skipped, fmt.Sprintf("%s ℓ=%d: %d keys per operation > --max-block-keys %d", name, l, len(shapes), c.MaxBlockKeys))
				continue
			}
			rep.Published = append(rep.Published, publishedBlock(name, l, shapes))
			say("  baseline %-14s ℓ=%-2d %d keys/op ", name, l, len(shapes))
			bsrc := &meteredSource{src: &baselineSource{ctx: ctx, pr: pr, rnd: crand.Reader}}
			bm, err := blockCost(g, bsrc, false, func() [2]uint64 {
				return [2]uint64{pr.S[0].Counters().Bytes, pr.S[1].Counters().Bytes}
			}, func() int { return pr.S[0].Counters().Rounds }, c.BlockOps)
			if err != nil {
				return fmt.Errorf("baseline %s at ℓ = %d: %w", name, l, err)
			}
			say("%3d exchanges %7d B/party %8.4f s/op\n", bm.rounds, bm.bytes, bm.seconds)
			for _, tier := range []msg.Tier{msg.Keystream, msg.MAC} {
				ksrc := &meteredSource{src: &kordSource{ctx: ctx, kp: kp, tier: tier}}
				km, err := blockCost(g, ksrc, false, func() [2]uint64 {
					return kp.sent()
				}, kp.rounds, c.BlockOps)
				if err != nil {
					return fmt.Errorf("kord %s at ℓ = %d, %v: %w", name, l, tier, err)
				}
				say("  kord     %-14s ℓ=%-2d %-4v %3d rounds    %7d B/party %8.6f s/op\n", name, l, tier, km.rounds, km.bytes, km.seconds)
				row := Row{Block: name, InBits: l, Link: c.Link, Tier: tier.String(),
					BaselineRounds: bm.rounds, BaselineBytesPerParty: bm.bytes, BaselineSeconds: round6(bm.seconds),
					KordRounds: km.rounds, KordBytesPerParty: km.bytes, KordSeconds: round6(km.seconds),
					TimeRatio: round2(bm.seconds / km.seconds), KeysVerified: bm.verified + km.verified}
				if km.bytes > 0 {
					row.BytesRatio = round2(float64(bm.bytes) / float64(km.bytes))
				}
				rep.Rows = append(rep.Rows, row)
			}
		}
	}
	return nil
}

func round6(x float64) float64 { return math.Round(x*1e6) / 1e6 }
func round2(x float64) float64 { return math.Round(x*100) / 100 }

// checkPoints are α, α ± 1, 0, 2^ℓ − 1 and four random points.
func checkPoints(p fss.Params, alpha uint64, rng *mrand.Rand) []uint64 {
	m := prg.Mask(p.InBits)
	xs := []uint64{alpha, (alpha + 1) & m, (alpha - 1) & m, 0, m}
	for range 4 {
		xs = append(xs, rng.Uint64()&m)
	}
	return xs
}

// shares draws α, β and additive shares of each.
func shares(p fss.Params, rng *mrand.Rand) (alpha, beta uint64, as, bs [2]uint64) {
	ma, mb := prg.Mask(p.InBits), prg.Mask(p.OutBits)
	alpha, beta = rng.Uint64()&ma, rng.Uint64()&mb
	as[0], bs[0] = rng.Uint64()&ma, rng.Uint64()&mb
	as[1], bs[1] = (alpha-as[0])&ma, (beta-bs[0])&mb
	return
}

// measureBaseline runs keys distributed Gens one after another (one
// untimed first), verifying each pair, and returns the median time per
// key (robust to bursts of load from other processes on a shared
// machine) and the larger party's rounds and bytes.
func measureBaseline(ctx context.Context, pr *twopc.Pair, p fss.Params, keys int, rng *mrand.Rand) (measured, error) {
	var m measured
	var times []time.Duration
	for i := -1; i < keys; i++ {
		alpha, beta, as, bs := shares(p, rng)
		t0 := time.Now()
		k, cost, err := pr.Gen(ctx, p, as, bs)
		el := time.Since(t0)
		if err != nil {
			return m, err
		}
		if err := fss.CheckPair(k[0], k[1], alpha, beta, checkPoints(p, alpha, rng)...); err != nil {
			return m, fmt.Errorf("baseline key failed verification: %w", err)
		}
		m.verified++
		m.rounds = max(cost[0].Rounds, cost[1].Rounds)
		m.bytes = max(cost[0].Bytes, cost[1].Bytes)
		if i >= 0 {
			times = append(times, el)
		}
	}
	m.seconds = median(times).Seconds()
	m.fastest = slices.Min(times).Seconds()
	return m, nil
}

// measureKord generates keys bound keys one at a time (one untimed
// first), each one exchange of the hosts over the shaped link, verifying
// every pair; the time is the median per key.
func measureKord(ctx context.Context, kp *kordPair, tier msg.Tier, p fss.Params, keys int, rng *mrand.Rand) (measured, error) {
	var m measured
	var times []time.Duration
	for i := -1; i < keys; i++ {
		alpha, beta, as, bs := shares(p, rng)
		var reqs [2]host.Request
		for b := range 2 {
			reqs[b] = host.Request{Share: msg.Share{Mode: msg.Bound, Type: p.Type, InBits: p.InBits, OutBits: p.OutBits,
				AlphaShare: as[b], BetaShare: bs[b]}}
		}
		r0, s0 := kp.rounds(), kp.sent()
		t0 := time.Now()
		res, err := kp.generateN(ctx, tier, [2][]host.Request{{reqs[0]}, {reqs[1]}})
		el := time.Since(t0)
		if err != nil {
			return m, err
		}
		if err := fss.CheckPair(res[0][0].Key, res[1][0].Key, alpha, beta, checkPoints(p, alpha, rng)...); err != nil {
			return m, fmt.Errorf("kord key failed verification: %w", err)
		}
		m.verified++
		m.rounds = kp.rounds() - r0
		s1 := kp.sent()
		m.bytes = max(s1[0]-s0[0], s1[1]-s0[1])
		if i >= 0 {
			times = append(times, el)
		}
	}
	m.seconds = median(times).Seconds()
	return m, nil
}

// median of a non-empty list (the mean of the middle two for an even
// count).
func median(ts []time.Duration) time.Duration {
	s := slices.Clone(ts)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}
