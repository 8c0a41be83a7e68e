package main

import (
	"time"

	"github.com/spf13/cobra"

	"github.com/kord-fss/kord/cmd/kord/internal/selftest"
)

func init() {
	rootCmd.AddCommand(selftestCmd())
}

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
			rep, err := selftest.Run(cmd.Context(), tries, seed)
			if err != nil {
				return err
			}
			if err := writeReport(cmd.OutOrStdout(), asJSON, rep); err != nil {
				return err
			}
			return rep.Err()
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the report as JSON")
	cmd.Flags().IntVar(&tries, "tries", 1000, "randomized tries per attack class")
	cmd.Flags().Uint64Var(&seed, "seed", 0, "seed of the attack randomness (0 = from the clock)")
	return cmd
}
