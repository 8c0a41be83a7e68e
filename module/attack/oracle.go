package attack

import (
	"context"
	"fmt"
	mrand "math/rand/v2"

	"github.com/kord-fss/kord/fss"
	"github.com/kord-fss/kord/internal/prg"
	"github.com/kord-fss/kord/module/internal/channel"
	"github.com/kord-fss/kord/module/msg"
)

// The α oracle (security review, finding 1). A host or network that flips
// bit i of the α field of both frames of one key makes module 0 rebuild
// s0 + (s1 ⊕ 2^i) and module 1 rebuild (s0 ⊕ 2^i) + s1. The two rebuilt
// points are equal exactly when bit i of s0 equals bit i of s1, and so are
// the two modules' pair tags, which the party daemons compare before they
// deliver: deliver-or-refuse is the outcome. Host 0 knows s0, so every
// outcome on a sharing of α fixes one more bit of α (bit 0 directly, then
// bit i once the bits below it are known).
//
// Two things stand against it. On the authenticated tiers (mac, batchmac)
// a flipped frame fails authentication before anything is rebuilt: no
// tag, no outcome, and the honest host may submit the same shares again.
// On the keystream tier, which has no integrity, the honest host's rule
// is that shares behind an opened peer frame are spent: a pair whose tags
// disagree is never retried, and the application draws a fresh α (not a
// fresh sharing of the same α), so each α yields at most one outcome.
//
// Oracle plays that attack through nothing but the Device interface: the
// attacker is host 0 (it knows s0 and sees both frames), host 1 is honest
// and follows Policy.

// Policy is how the honest host treats shares whose pair did not pair.
type Policy int

const (
	// Burn is kord's rule: shares behind an opened peer frame are spent;
	// after a refusal the application draws a fresh α.
	Burn Policy = iota
	// Reuse is the rule before the fix: a refused pair goes back with the
	// same shares. Kept as the control that shows the attack works.
	Reuse
)

func (p Policy) String() string {
	if p == Reuse {
		return "reuse"
	}
	return "burn"
}

// OracleResult is the tally of one Oracle run.
type OracleResult struct {
	Tier   string `json:"tier"`
	Policy string `json:"policy"`
	// Alphas is how many secret points were attacked; Probes how many
	// tampered pairs the attacker pushed through the modules.
	Alphas int `json:"alphas"`
	Probes int `json:"probes"`
	// Rejected counts tampered frames a module refused (no tag, no
	// outcome); Outcomes counts tag comparisons of a tampered pair that
	// the attacker observed.
	Rejected int `json:"rejected"`
	Outcomes int `json:"outcomes"`
	// MaxOutcomesPerAlpha is the most outcomes one α gave the attacker.
	MaxOutcomesPerAlpha int `json:"max_outcomes_per_alpha"`
	// Recovered counts the α whose low ℓ−1 bits the attacker got right
	// from its outcomes (the top bit is never revealed: ±2^(ℓ−1) agree).
	Recovered int `json:"recovered"`
}

// Leaks reports whether the attacker learnt more than one tamper outcome
// for some α.
func (r OracleResult) Leaks() bool { return r.MaxOutcomesPerAlpha > 1 || r.Recovered > 0 }

// Oracle runs the attack on alphas secret points of ℓ = inBits bits on a
// fresh module pair, frames under tier, the honest host following policy.
func Oracle(ctx context.Context, tier msg.Tier, policy Policy, inBits, alphas int, seed uint64) (*OracleResult, error) {
	if inBits < 2 || inBits > 64 {
		return nil, fmt.Errorf("attack: oracle width %d is outside 2..64", inBits)
	}
	dev, err := NewPair(ctx)
	if err != nil {
		return nil, fmt.Errorf("attack: pairing: %w", err)
	}
	h := &harness{ctx: ctx, dev: dev, rng: mrand.New(mrand.NewPCG(seed, seed^0x6f7261636c65))}
	res := &OracleResult{Tier: tier.String(), Policy: policy.String(), Alphas: alphas}
	s := shape{typ: fss.DPF, l: inBits, n: 8}
	for a := 0; a < alphas; a++ {
		j := h.newJob(s)
		s0 := j.sh[0].AlphaShare
		var s1bits uint64 // bits of s1 the attacker has learnt
		outcomes := 0
		for i := 0; i < inBits-1; i++ {
			if policy == Burn && outcomes > 0 {
				// The honest host spent s1 on the last outcome: the
				// application has moved on to a fresh α.
				break
			}
			res.Probes++
			agree, observed, err := h.probe(tier, j, i)
			if err != nil {
				return nil, fmt.Errorf("attack: oracle α %d bit %d: %w", a, i, err)
			}
			if !observed {
				res.Rejected++
				continue
			}
			outcomes++
			// Agreement means bit i of s1 equals bit i of s0.
			bit := (s0 >> i) & 1
			if !agree {
				bit ^= 1
			}
			s1bits |= bit << i
		}
		res.Outcomes += outcomes
		res.MaxOutcomesPerAlpha = max(res.MaxOutcomesPerAlpha, outcomes)
		low := prg.Mask(inBits - 1)
		if outcomes == inBits-1 && (s0+s1bits)&low == j.alpha&low {
			res.Recovered++
		}
	}
	return res, nil
}

// probe pushes one key of job j through both modules with bit i of the α
// field flipped in both frames, as a malicious relay would, and reports
// whether the two pair tags agreed, or that a module refused a frame (no
// outcome). The tampered pair's counters are abandoned as an honest host
// does; the outputs are never handed to an application.
func (h *harness) probe(tier msg.Tier, j job, i int) (agree, observed bool, err error) {
	var f [2][]byte
	var c uint64
	for b := 0; b < 2; b++ {
		r, err := h.dev[b].Submit(h.ctx, &msg.SubmitRequest{Kind: msg.SubmitShares, Tier: tier, Shares: []msg.Share{j.sh[b]}})
		if err != nil {
			return false, false, err
		}
		if len(r.Frames) != 1 {
			return false, false, fmt.Errorf("module %d returned %d frames", b, len(r.Frames))
		}
		f[b], c = append([]byte(nil), r.Frames[0]...), r.FirstCounter
	}
	// Byte offset of the α field: the keystream frame is the field itself;
	// an envelope carries it after its header, under authentication.
	off := 0
	if tier != msg.Keystream {
		d := channel.Desc{InBits: j.s.l, OutBits: j.s.n}
		off = len(f[0]) - d.Size() - channel.TagSize
	}
	for b := 0; b < 2; b++ {
		f[b][off+i/8] ^= 1 << (i % 8)
	}
	var tags [2][msg.PairTagSize]byte
	opened := 0
	for b := 0; b < 2; b++ {
		r, err := h.dev[b].Submit(h.ctx, &msg.SubmitRequest{Kind: msg.SubmitPeerFrame, Frame: f[1-b]})
		if err != nil {
			return false, false, err
		}
		if !r.Accepted {
			continue
		}
		opened++
		cr, err := h.dev[b].Collect(h.ctx, &msg.CollectRequest{Counter: c})
		if err != nil {
			return false, false, err
		}
		clear(cr.Key)
		tags[b] = cr.PairTag
	}
	for b := 0; b < 2; b++ {
		if _, err := h.dev[b].Submit(h.ctx, &msg.SubmitRequest{Kind: msg.SubmitAbandon, Counter: c, Mismatch: opened == 2 && tags[0] != tags[1]}); err != nil {
			return false, false, err
		}
	}
	if opened < 2 {
		return false, false, nil
	}
	return tags[0] == tags[1], true, nil
}
