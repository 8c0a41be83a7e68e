package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/kord-fss/kord/internal/kat"
	"github.com/kord-fss/kord/module/attack"
	"github.com/kord-fss/kord/module/msg"
	"github.com/spf13/cobra"
)

func init() {
	rootCmd.AddCommand(selftestCmd())
}

// selftestReport is the JSON form of `kord selftest --json`.
type selftestReport struct {
	KAT                kat.Result               `json:"kat"`
	Attacks            map[string]attack.Result `json:"attacks"`
	HonestAfterAttacks bool                     `json:"honest_after_attacks"`
	// AlphaOracle is the keystream-tier α-recovery attack (bit flips in
	// both frames, deliver-or-refuse as the outcome): the control with the
	// old retry rule, which must recover α, then kord's rule on the
	// keystream tier and the default authenticated tier, which must not.
	AlphaOracle []attack.OracleResult `json:"alpha_oracle"`
	// Seed is the attack seed used (drawn from the clock when --seed is
	// 0), so a failing run can be replayed with --seed.
	Seed uint64 `json:"seed"`
}

// oracleAlphas is how many secret points each α-oracle run attacks.
const oracleAlphas = 64

// selftestCmd is `kord selftest`: known answers, then a freshly paired
// module pair attacked class by class on the mac tier.
func selftestCmd() *cobra.Command {
	var (
		asJSON bool
		tries  int
		seed   uint64
	)
	cmd := &cobra.Command{
		Use:   "selftest [--json]",
		Short: "Known-answer test of the PRG and Gen, then attack a fresh module pair class by class",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if tries < 1 {
				return badInput("--tries %d must be at least 1", tries)
			}
			if seed == 0 {
				seed = uint64(time.Now().UnixNano())
			}
			rep := selftestReport{KAT: kat.Run(), Seed: seed}
			ar, err := attack.Run(cmd.Context(), tries, seed)
			if err != nil {
				return err
			}
			rep.Attacks, rep.HonestAfterAttacks = ar.Attacks, ar.HonestAfter
			oracleOK := true
			for _, o := range []struct {
				tier   msg.Tier
				policy attack.Policy
			}{{msg.Keystream, attack.Reuse}, {msg.Keystream, attack.Burn}, {msg.BatchMAC, attack.Burn}} {
				r, err := attack.Oracle(cmd.Context(), o.tier, o.policy, 32, oracleAlphas, seed)
				if err != nil {
					return err
				}
				rep.AlphaOracle = append(rep.AlphaOracle, *r)
				if o.policy == attack.Reuse {
					oracleOK = oracleOK && r.Recovered == r.Alphas // the control must see the oracle
				} else {
					oracleOK = oracleOK && !r.Leaks()
				}
			}
			w := cmd.OutOrStdout()
			if asJSON {
				enc := json.NewEncoder(w)
				enc.SetIndent("", "  ")
				if err := enc.Encode(rep); err != nil {
					return err
				}
			} else {
				fmt.Fprintf(w, "known answers: %d passed, %d failed\n", rep.KAT.Passed, rep.KAT.Failed)
				for _, f := range rep.KAT.Failures {
					fmt.Fprintf(w, "  FAIL %s\n", f)
				}
				for _, c := range attack.Classes {
					r := rep.Attacks[c]
					fmt.Fprintf(w, "%-20s tried %5d  accepted %d  counter moved %d  dispatched %d\n",
						c, r.Tried, r.Accepted, r.CounterMoved, r.Dispatched)
				}
				fmt.Fprintf(w, "honest key after attacks: %v\n", rep.HonestAfterAttacks)
				for _, r := range rep.AlphaOracle {
					fmt.Fprintf(w, "alpha oracle %-8s %-5s α %d  probes %4d  refused %4d  outcomes %4d (at most %2d per α)  α recovered %d\n",
						r.Tier, r.Policy, r.Alphas, r.Probes, r.Rejected, r.Outcomes, r.MaxOutcomesPerAlpha, r.Recovered)
				}
				fmt.Fprintf(w, "attack seed: %d\n", rep.Seed)
			}
			if rep.KAT.Failed != 0 {
				return errors.New("selftest: known-answer checks failed")
			}
			if !oracleOK {
				return errors.New("selftest: the α oracle leaked more than one outcome per α under kord's rule, or the control did not see it")
			}
			if !ar.Clean() {
				return errors.New("selftest: a forged frame got through, or the pair no longer works")
			}
			return nil
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the report as JSON")
	cmd.Flags().IntVar(&tries, "tries", 1000, "randomized tries per attack class")
	cmd.Flags().Uint64Var(&seed, "seed", 0, "seed of the attack randomness (0 = from the clock)")
	return cmd
}
