package main

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/kord-fss/kord/cmd/kord/internal/compare"
)

// kord compare: flags to compare.Run (issue 25).

func init() {
	var (
		asJSON         bool
		pngFile, bitsS string
		fitS, blockS   string
	)
	o := compare.DefaultConfig()
	cmd := &cobra.Command{
		Use:   "compare [--link lan|wan|1gbps|loopback] [--json] [--png FILE]",
		Short: "Dealerless 2PC key generation (OT-based baseline) vs kord on the same shaped link, every key verified",
		Long: `For DPF and DCF at each --bits width (n = ℓ), generate keys in this run
with both systems across the same emulated link (internal/netshape: the
two baseline parties, and kord's two hosts, each talk over one shaped
loopback TCP connection):

  baseline  baseline/twopc: the parties hold additive shares of α and β
            and run a level-by-level distributed Gen over IKNP OT
            (Chou–Orlandi base OTs on Curve25519), ≈ 3ℓ+4 exchanges per
            key, full-tree local work (O(2^ℓ) PRG calls per party); widths
            above --max-measured are extrapolated from a printed fit;
  kord      two freshly paired software modules in bound mode, tiers otp
            and mac: one exchange per key.

Then the gates' building blocks at --block-bits: each block's key
complement comes from each system through the gates' KeySource interface
(each call's same-shape keys at once: the baseline in lockstep, kord in one
exchange, kord's derived keys crossing nothing); --block-ops runs of one
operation each, every output checked against plaintext; the row charges
the key generation per operation.

Rounds, frame bytes sent per party (length prefixes not counted) and
seconds per key (median of the timed keys, one untimed key first; the
median because other load on a shared machine only adds outliers) for
both, their ratios, and Xing et al.'s published figures. On a shaped
link the extrapolation's per-leaf time comes from the same widths on an
unshaped session of the same run; the fits use each width's fastest key. Every key pair is verified by Eval at α, α±1,
0, 2^ℓ−1 and random points.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			var err error
			if o.Bits, err = parseBits("--bits", bitsS); err != nil {
				return err
			}
			if o.FitBits, err = parseBits("--fit-bits", fitS); err != nil {
				return err
			}
			if o.BlockBits, err = parseBits("--block-bits", blockS); err != nil {
				return err
			}
			if err := o.Check(); err != nil {
				return badInput("%v", err)
			}
			rep, err := compare.Run(cmd.Context(), o, cmd.ErrOrStderr())
			if err != nil {
				return err
			}
			if pngFile != "" {
				if err := rep.Draw(pngFile); err != nil {
					return fmt.Errorf("--png: %w", err)
				}
			}
			return rep.Write(cmd.OutOrStdout(), asJSON)
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.Link, "link", o.Link, "emulated link: loopback, lan, 1gbps or wan")
	f.BoolVar(&asJSON, "json", false, "print one JSON object")
	f.StringVar(&pngFile, "png", "", "also draw seconds per key to this PNG file")
	f.StringVar(&bitsS, "bits", "8,16,18,32", "input widths ℓ of the rows")
	f.StringVar(&fitS, "fit-bits", "12,20", "extra widths measured for the baseline's fit only")
	f.IntVar(&o.MaxMeasured, "max-measured", o.MaxMeasured, "widest ℓ the full-tree baseline runs; wider rows are extrapolated")
	f.IntVar(&o.BaselineKeys, "baseline-keys", o.BaselineKeys, "timed baseline keys per measured width")
	f.IntVar(&o.KordKeys, "kord-keys", o.KordKeys, "timed kord keys per row")
	f.StringVar(&blockS, "block-bits", "8", "widths at which the gates' building blocks are rows (\"\" for none)")
	f.IntVar(&o.BlockOps, "block-ops", o.BlockOps, "verified operations per block row")
	f.IntVar(&o.MaxBlockKeys, "max-block-keys", o.MaxBlockKeys, "skip blocks needing more keys per operation (PriLUT needs 2^ℓ; the baseline batches up to 256 in lockstep)")
	rootCmd.AddCommand(cmd)
}

// parseBits reads a comma-separated list of widths ("" is none).
func parseBits(flag, s string) ([]int, error) {
	var out []int
	for _, f := range strings.Split(s, ",") {
		if f = strings.TrimSpace(f); f == "" {
			continue
		}
		l, err := strconv.Atoi(f)
		if err != nil || l < 1 || l > 64 {
			return nil, badInput("%s: %q is not a width in 1..64", flag, f)
		}
		out = append(out, l)
	}
	return out, nil
}
