package main

// kord bench inflight: the fabric law fitted to the CPU batch engine
// (bench.Inflight).

import (
	"encoding/json"
	"fmt"
	"io"
	"time"

	"github.com/spf13/cobra"

	"github.com/kord-fss/kord/cmd/kord/internal/bench"
	"github.com/kord-fss/kord/internal/prg"
)

// inflightOpts are the flags of bench inflight.
type inflightOpts struct {
	typ     string
	inBits  int
	outBits int
	rounds  int
	minTime time.Duration
	json    bool
	png     string
	kernel  string
	// keysPerWorker are the M to sweep (nil: bench.InflightM).
	keysPerWorker []int
}

func init() {
	var o inflightOpts
	cmd := &cobra.Command{
		Use:   "inflight",
		Short: "Batched Gen keys/s against keys per worker, fitted to the fabric law",
		Long: `Measure batched key generation on one worker with M keys per worker
carried through the levels together (fss.BatchOptions.InFlight) for
M = 1, 2, 4, …, 256 (--keys-per-worker), and fit the fabric law
rate(M) = min(s·M, p) (fabric.FitLaw). The CPU is read as a fabric whose
cycle is one kernel-block slot (1 / the MMO kernel's blocks/s, measured in
the same run): W = p·C·L / kernel blocks/s is the effective number of AES
lanes (the fraction of the kernel bound reached past the knee) and
Leff = kernel blocks/s / (s·L) the slots one level of one key takes when it
is alone. Each round measures the kernel and every M once, in turn, so that
background load falls on all points alike; since load only slows a run
down, each point (and the kernel) is its fastest round; medians are in the
JSON too.
See docs/fabric.md, "The CPU engine under the same law".`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runBenchInflight(cmd.OutOrStdout(), o)
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.typ, "type", "dpf", "key type: dpf or dcf")
	f.IntVar(&o.inBits, "in-bits", 32, "input width ℓ (1..64)")
	f.IntVar(&o.outBits, "out-bits", 32, "output width n (1..64)")
	f.IntVar(&o.rounds, "rounds", 9, "measurements per M (the fastest is fitted)")
	f.DurationVar(&o.minTime, "time", 50*time.Millisecond, "minimum time of one measurement")
	f.BoolVar(&o.json, "json", false, "print one JSON object")
	f.StringVar(&o.png, "png", "", "draw keys/s against M and the fitted law to this PNG")
	f.StringVar(&o.kernel, "kernel", "", "MMO kernel to use (default: the fastest)")
	f.IntSliceVar(&o.keysPerWorker, "keys-per-worker", bench.InflightM, fmt.Sprintf("keys per worker M to sweep (comma-separated, at least two, each 1..%d)", bench.MaxKeysPerWorker))
	benchCmd.AddCommand(cmd)
}

// runBenchInflight checks the flags of bench inflight, runs bench.Inflight
// and prints its report.
func runBenchInflight(stdout io.Writer, o inflightOpts) error {
	p, err := parseParams(o.typ, o.inBits, o.outBits)
	if err != nil {
		return err
	}
	if o.rounds < 1 {
		return badInput("--rounds must be at least 1, got %d", o.rounds)
	}
	if o.minTime <= 0 {
		return badInput("--time must be positive")
	}
	if o.kernel != "" {
		if err := prg.Use(o.kernel); err != nil {
			return badInput("--kernel: %v", err)
		}
	}
	ms, err := bench.SweepM(o.keysPerWorker)
	if err != nil {
		return badInput("--keys-per-worker: %v", err)
	}
	res, err := bench.Inflight(bench.InflightConfig{Params: p, Rounds: o.rounds, MinTime: o.minTime, KeysPerWorker: ms, PNG: o.png})
	if err != nil {
		return err
	}
	if o.json {
		return json.NewEncoder(stdout).Encode(res)
	}
	res.WriteText(stdout)
	return nil
}
