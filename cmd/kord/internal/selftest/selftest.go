// Package selftest is kord selftest: the known-answer test of the PRG and
// Gen (internal/kat), then a freshly paired module pair attacked class by
// class on the mac tier and the α-oracle attack on the keystream and
// authenticated tiers (module/attack). Run returns a Report, the JSON kord
// selftest prints; Report.Err is its verdict.
package selftest

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/kord-fss/kord/internal/kat"
	"github.com/kord-fss/kord/module/attack"
	"github.com/kord-fss/kord/module/msg"
)

// OracleAlphas is how many secret points each α-oracle run attacks.
const OracleAlphas = 64

// oracleBits is the input width of the α-oracle runs.
const oracleBits = 32

// Report is the JSON form of `kord selftest --json`.
type Report struct {
	KAT                kat.Result               `json:"kat"`
	Attacks            map[string]attack.Result `json:"attacks"`
	HonestAfterAttacks bool                     `json:"honest_after_attacks"`
	// AlphaOracle is the keystream-tier α-recovery attack (bit flips in
	// both frames, deliver-or-refuse as the outcome): the control with the
	// old retry rule, which must recover α, then kord's rule on the
	// keystream tier and the default authenticated tier, which must not.
	AlphaOracle []attack.OracleResult `json:"alpha_oracle"`
	// Seed is the attack seed used, so a failing run can be replayed.
	Seed uint64 `json:"seed"`

	oracleOK     bool // the control saw the oracle and kord's rule did not leak
	attacksClean bool // no forged frame got through and the pair still works
}

// Run runs the known answers, then tries randomized tries per attack
// class and the three α-oracle runs, all from seed.
func Run(ctx context.Context, tries int, seed uint64) (*Report, error) {
	if tries < 1 {
		return nil, fmt.Errorf("selftest: %d tries, want at least 1", tries)
	}
	rep := &Report{KAT: kat.Run(), Seed: seed}
	ar, err := attack.Run(ctx, tries, seed)
	if err != nil {
		return nil, err
	}
	rep.Attacks, rep.HonestAfterAttacks, rep.attacksClean = ar.Attacks, ar.HonestAfter, ar.Clean()
	rep.oracleOK = true
	for _, o := range []struct {
		tier   msg.Tier
		policy attack.Policy
	}{{msg.Keystream, attack.Reuse}, {msg.Keystream, attack.Burn}, {msg.BatchMAC, attack.Burn}} {
		r, err := attack.Oracle(ctx, o.tier, o.policy, oracleBits, OracleAlphas, seed)
		if err != nil {
			return nil, err
		}
		rep.AlphaOracle = append(rep.AlphaOracle, *r)
		if o.policy == attack.Reuse {
			rep.oracleOK = rep.oracleOK && r.Recovered == r.Alphas // the control must see the oracle
		} else {
			rep.oracleOK = rep.oracleOK && !r.Leaks()
		}
	}
	return rep, nil
}

// Err is the report's verdict: nil if every check held, else the first
// that failed.
func (r *Report) Err() error {
	if r.KAT.Failed != 0 {
		return errors.New("selftest: known-answer checks failed")
	}
	if !r.oracleOK {
		return errors.New("selftest: the α oracle leaked more than one outcome per α under kord's rule, or the control did not see it")
	}
	if !r.attacksClean {
		return errors.New("selftest: a forged frame got through, or the pair no longer works")
	}
	return nil
}

// WriteText prints r as kord selftest does without --json.
func (r *Report) WriteText(w io.Writer) {
	fmt.Fprintf(w, "known answers: %d passed, %d failed\n", r.KAT.Passed, r.KAT.Failed)
	for _, f := range r.KAT.Failures {
		fmt.Fprintf(w, "  FAIL %s\n", f)
	}
	for _, c := range attack.Classes {
		a := r.Attacks[c]
		fmt.Fprintf(w, "%-20s tried %5d  accepted %d  counter moved %d  dispatched %d\n",
			c, a.Tried, a.Accepted, a.CounterMoved, a.Dispatched)
	}
	fmt.Fprintf(w, "honest key after attacks: %v\n", r.HonestAfterAttacks)
	for _, o := range r.AlphaOracle {
		// The reuse run is the control: the old retry rule, under which
		// the attack must recover every α (proof that it can); kord's
		// rule (burn) must recover none.
		role := "kord's rule: must recover no α"
		if o.Policy == attack.Reuse.String() {
			role = "control, the old rule: must recover every α"
		}
		fmt.Fprintf(w, "alpha oracle %-8s %-5s α %d  probes %4d  refused %4d  outcomes %4d (at most %2d per α)  α recovered %d  (%s)\n",
			o.Tier, o.Policy, o.Alphas, o.Probes, o.Rejected, o.Outcomes, o.MaxOutcomesPerAlpha, o.Recovered, role)
	}
	fmt.Fprintf(w, "attack seed: %d\n", r.Seed)
	fmt.Fprintln(w, r.Verdict())
}

// Verdict is the report's one-line verdict: "selftest: PASS", or
// "selftest: FAIL" and the first check that failed.
func (r *Report) Verdict() string {
	if err := r.Err(); err != nil {
		return "selftest: FAIL " + strings.TrimPrefix(err.Error(), "selftest: ")
	}
	return "selftest: PASS"
}
