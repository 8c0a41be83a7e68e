package main

// kord fabric: the KORD fabric model (package fabric, run by
// cmd/kord/internal/fabricrun) from the command line.

import (
	"errors"
	"math"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	"github.com/kord-fss/kord/cmd/kord/internal/fabricrun"
	"github.com/kord-fss/kord/fabric"
)

var fabricCmd = &cobra.Command{
	Use:   "fabric",
	Short: "Provision a KORD key-generation fabric: cycle-level simulation and the analytical model",
	Long: `Simulate the GGM fabric of a KORD-style engine (M key slots, W pipelined
AES-MMO lanes, FCFS scheduler) and compare it with KORD's closed form:
the array saturates at M* = W·Leff/c keys in flight, past which
keys/s = fmax·W/(c·ℓ). See docs/fabric.md.`,
}

func init() {
	fabricCmd.AddCommand(newFabricSweepCmd(), newFabricSimulateCmd())
	rootCmd.AddCommand(fabricCmd)
}

func newFabricSweepCmd() *cobra.Command {
	var (
		asJSON bool
		png    string
		keys   int
	)
	cmd := &cobra.Command{
		Use:   "sweep",
		Short: "Sweep M ∈ {1,2,4,8,12,16,24,32} for DPF W=4 and unified W=8; reproduce KORD's figures",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if keys < 1 || keys > fabricrun.MaxSweepKeys {
				return badInput("--keys %d: want 1..%d", keys, fabricrun.MaxSweepKeys)
			}
			if png != "" && !strings.EqualFold(filepath.Ext(png), ".png") {
				return badInput("--png %q: want a file name ending in .png", png)
			}
			rep, err := fabricrun.Sweep(keys, png)
			if err != nil {
				return err
			}
			return writeReport(cmd.OutOrStdout(), asJSON, rep)
		},
	}
	f := cmd.Flags()
	f.BoolVar(&asJSON, "json", false, "print JSON")
	f.StringVar(&png, "png", "", "draw the utilization curve (Figure 7) to FILE, and the mixed capacity line to FILE with _capacity before .png")
	f.IntVar(&keys, "keys", fabric.SweepKeys, "keys of 32 levels in each simulated stream (256 reproduces KORD's figures)")
	return cmd
}

func newFabricSimulateCmd() *cobra.Command {
	var (
		c       fabricrun.SimConfig
		asJSON  bool
		modeArg string
	)
	cmd := &cobra.Command{
		Use:   "simulate",
		Short: "Simulate one fabric configuration and compare it with the model",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			switch {
			case !(c.FmaxMHz > 0) || math.IsInf(c.FmaxMHz, 0):
				return badInput("--fmax %v: want a clock in MHz > 0", c.FmaxMHz)
			case c.Keys < 1 || c.Keys > fabricrun.MaxSimKeys:
				return badInput("--keys %d: want 1..%d", c.Keys, fabricrun.MaxSimKeys)
			case c.Bits < 1 || c.Bits > fabricrun.MaxSimBits:
				return badInput("--bits %d: want 1..%d", c.Bits, fabricrun.MaxSimBits)
			case int64(c.Keys)*int64(c.Bits) > fabricrun.MaxSimLevels:
				return badInput("--keys × --bits = %d levels: at most %d per run", int64(c.Keys)*int64(c.Bits), fabricrun.MaxSimLevels)
			}
			c.Mode = strings.ToLower(modeArg)
			switch c.Mode {
			case fabricrun.ModeDPF, fabricrun.ModeDCF:
			case fabricrun.ModeMixed:
				if !(c.DCF >= 0 && c.DCF <= 1) {
					return badInput("--dcf-fraction %v: want 0..1", c.DCF)
				}
			default:
				return badInput("--mode %q: want dpf, dcf or mixed", modeArg)
			}
			rep, err := fabricrun.Simulate(c)
			var bad *fabricrun.ConfigError
			if errors.As(err, &bad) {
				return badInput("%v", err)
			}
			if err != nil {
				return err
			}
			return writeReport(cmd.OutOrStdout(), asJSON, rep)
		},
	}
	f := cmd.Flags()
	f.IntVar(&c.W, "W", 4, "AES lanes")
	f.IntVar(&c.M, "M", 12, "key slots (keys in flight)")
	f.IntVar(&c.Latency, "latency", fabric.DefaultPipeline, "AES-MMO pipeline depth in stages (Leff = latency + turnaround)")
	f.IntVar(&c.Turnaround, "turnaround", fabric.DefaultTurnaround, "scheduler turnaround cycles")
	f.IntVar(&c.Bits, "bits", fabric.DefaultLevels, "ℓ: levels per key (domain bits)")
	f.StringVar(&modeArg, "mode", "dpf", "request stream: dpf, dcf or mixed")
	f.Float64Var(&c.DCF, "dcf-fraction", 0.5, "share of DCF keys in a mixed stream")
	f.BoolVar(&c.Unified, "unified", false, "unified DPF/DCF engine: issue DPF levels as 8 calls, like DCF")
	f.Float64Var(&c.FmaxMHz, "fmax", fabric.FmaxDPFOnlyW8/1e6, "clock in MHz")
	f.IntVar(&c.Keys, "keys", fabric.SweepKeys, "keys in the request stream")
	f.BoolVar(&asJSON, "json", false, "print JSON")
	return cmd
}
