package main

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/kord-fss/kord/gates"
	"github.com/spf13/cobra"
)

func init() {
	blocks := &cobra.Command{
		Use:   "blocks",
		Short: "FSS building blocks (gates) on dealerless keys",
	}
	blocks.AddCommand(blocksTableCmd())
	rootCmd.AddCommand(blocks)
}

// blocksTableCmd is `kord blocks table`: it runs every gate over loopback
// TCP with keys from a pair of in-process key-generation modules, verifies
// the outputs against plaintext, and prints the measured costs beside Xing
// et al.'s formulas and KORD's published sizes.
func blocksTableCmd() *cobra.Command {
	var (
		asJSON, dealer bool
		bitsS          string
		ops            int
	)
	cmd := &cobra.Command{
		Use:   "table [--json] [--bits 8,16,18,32,64] [--ops N] [--dealer]",
		Short: "Measure offline and online cost per block and width, verifying every row in this run",
		Long: `Runs every block (EQ, CMP, Mod, TR, Ctn, DigDec, PubLUT, PriLUT, Approx,
ReLU, DReLU) at each width between two parties over loopback TCP.

Offline: keys come from a freshly paired pair of software key-generation
modules (or, with --dealer, from the trusted-dealer baseline). The offline
column is the module protocol's wire bytes per party per operation for
the keys the block actually requested (keystream tier: ⌈ℓ/8⌉+⌈n/8⌉ per
bound key, 0 per derived key); "link" is what the host link carried.
Online: bytes each party wrote to its TCP socket per operation (frame
headers included) and the number of rounds. A row is verified only if its
check (exhaustive at ℓ = 8, random plus edge inputs above) passed now.
Xing et al.'s dealerless cost is summed over the same complement from
their published formulas; DCF bits are unpublished (-).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			var bits []int
			for _, f := range strings.Split(bitsS, ",") {
				l, err := strconv.Atoi(strings.TrimSpace(f))
				if err != nil || l < 1 || l > 64 {
					return badInput("--bits: %q is not a width in 1..64", f)
				}
				bits = append(bits, l)
			}
			if ops < 1 || ops > 1<<16 {
				return badInput("--ops %d is outside 1..65536", ops)
			}
			o := gates.TableOptions{Bits: bits, Ops: ops}
			if !dealer {
				src, err := gates.NewModuleSource(context.Background())
				if err != nil {
					return fmt.Errorf("pairing key-generation modules: %w", err)
				}
				defer src.Close()
				o.Source, o.LinkBytes, o.SourceName = src, func() [2]uint64 { return src.SentBytes() }, "modules"
			}
			rows, err := gates.Measure(o)
			if err != nil {
				return err
			}
			out := cmd.OutOrStdout()
			if asJSON {
				if err := writeIndented(out, rows); err != nil {
					return err
				}
			} else {
				tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', 0)
				fmt.Fprintln(tw, "block\tℓ\tvariant\toffline B/party\tlink B\tonline B/party\trounds\tXing rounds\tXing bits\tKORD B\tverified\tkeys per op")
				for _, r := range rows {
					link, xb, kp := "-", "-", "-"
					if r.OfflineLinkBytes != nil {
						link = fmt.Sprintf("%.1f", *r.OfflineLinkBytes)
					}
					if r.XingBits != nil {
						xb = strconv.FormatInt(*r.XingBits, 10)
					}
					if r.KordPublished != nil {
						kp = strconv.Itoa(*r.KordPublished)
					}
					v := strconv.FormatBool(r.Verified)
					if r.Error != "" {
						v += " (" + r.Error + ")"
					}
					fmt.Fprintf(tw, "%s\t%d\t%s\t%.1f\t%s\t%.2f\t%d\t%d\t%s\t%s\t%s\t%s\n", r.Block, r.InBits, r.Variant,
						r.OfflineWireBytes, link, r.OnlineBytes, r.OnlineRounds, r.XingRounds, xb, kp, v, strings.Join(r.Keys, " + "))
				}
				if err := tw.Flush(); err != nil {
					return err
				}
			}
			for _, r := range rows {
				if !r.Verified {
					return fmt.Errorf("%s at ℓ=%d failed its check: %s", r.Block, r.InBits, r.Error)
				}
			}
			return nil
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print a JSON list of rows")
	cmd.Flags().BoolVar(&dealer, "dealer", false, "use the trusted-dealer baseline instead of the modules")
	cmd.Flags().StringVar(&bitsS, "bits", "8,16,18,32,64", "comma-separated input widths")
	cmd.Flags().IntVar(&ops, "ops", 256, "operations per random check (ℓ > 8)")
	return cmd
}
