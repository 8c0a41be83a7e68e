package main

import (
	"encoding/json"
	"io"
	"time"

	"github.com/spf13/cobra"

	"github.com/kord-fss/kord/cmd/kord/internal/bench"
	"github.com/kord-fss/kord/fss"
	"github.com/kord-fss/kord/internal/prg"
)

// benchCmd is the parent of the benchmark commands; other command files add
// their own subcommands to it.
var benchCmd = &cobra.Command{
	Use:   "bench",
	Short: "Measure kord's throughput against the raw AES kernel bound",
}

func init() {
	rootCmd.AddCommand(benchCmd)
	benchCmd.AddCommand(
		newBenchFSSCmd(bench.OpGen, "Batched key generation: K key pairs of one shape"),
		newBenchFSSCmd(bench.OpEval, "Batched evaluation: K keys, one point each"),
		newBenchFSSCmd(bench.OpEvalAll, "Full-domain evaluation: K keys over all 2^ℓ inputs"),
	)
}

// benchFSSOpts are the flags shared by bench gen, eval and evalall.
type benchFSSOpts struct {
	typ      string
	inBits   int
	outBits  int
	keys     int
	workers  int
	json     bool
	kernel   string
	duration time.Duration // kernel measurement time, each side of the run
	plot     string        // gen only: sweep and plot to this file
	profile  string        // gen only: "kord-v1" or "llama" (then both run)
}

func newBenchFSSCmd(op, short string) *cobra.Command {
	var o benchFSSOpts
	cmd := &cobra.Command{
		Use:   op,
		Short: short,
		Long: short + `.

Reports keys/s in total and per worker, the raw MMO kernel throughput in
blocks/s measured in the same run on the same number of workers (before and
after the timed work, averaged), and the ratio
keys/s × MMO blocks per key ÷ kernel blocks/s: the fraction of the AES bound
reached.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runBenchFSS(cmd.OutOrStdout(), cmd.ErrOrStderr(), op, o)
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.typ, "type", "dpf", "key type: dpf or dcf")
	f.IntVar(&o.inBits, "in-bits", 32, "input width ℓ (1..64; evalall at most 28)")
	f.IntVar(&o.outBits, "out-bits", 32, "output width n (1..64)")
	defKeys := map[string]int{bench.OpGen: 200000, bench.OpEval: 200000, bench.OpEvalAll: 4}[op]
	f.IntVar(&o.keys, "keys", defKeys, "number of keys")
	f.IntVar(&o.workers, "workers", 0, "goroutines (0 = GOMAXPROCS)")
	f.BoolVar(&o.json, "json", false, "print one JSON object")
	f.StringVar(&o.kernel, "kernel", "", "MMO kernel to use (default: the fastest; see prg kernels)")
	f.DurationVar(&o.duration, "kernel-time", 250*time.Millisecond, "kernel measurement time before and after the run")
	if op == bench.OpGen {
		f.StringVar(&o.plot, "plot", "", "instead of one run, sweep batch sizes and 1..workers and draw keys/s to this PNG (best of five runs per point)")
		f.StringVar(&o.profile, "profile", "kord-v1", "key profile: kord-v1, or llama (EzPC LLAMA's DCF; runs kord-v1 too and reports both)")
	}
	return cmd
}

// runBenchFSS checks the flags of bench gen/eval/evalall, runs bench.Run
// (or bench.GenSweep for gen --plot) and prints its report.
func runBenchFSS(stdout, stderr io.Writer, op string, o benchFSSOpts) error {
	p, err := parseParams(o.typ, o.inBits, o.outBits)
	if err != nil {
		return err
	}
	if o.keys < 1 {
		return badInput("--keys must be at least 1, got %d", o.keys)
	}
	if o.workers < 0 {
		return badInput("--workers must be 0 (GOMAXPROCS) or more, got %d", o.workers)
	}
	if o.duration <= 0 {
		return badInput("--kernel-time must be positive")
	}
	if op == bench.OpEvalAll && o.inBits > bench.MaxEvalAllBits {
		return badInput("--in-bits %d is too wide for evalall (at most %d)", o.inBits, bench.MaxEvalAllBits)
	}
	if o.kernel != "" {
		if err := prg.Use(o.kernel); err != nil {
			return badInput("--kernel: %v", err)
		}
	}
	if o.plot != "" {
		return bench.GenSweep(stdout, p, o.keys, bench.Workers(o.workers), o.plot)
	}
	switch o.profile {
	case "", bench.ProfileKordV1:
	case bench.ProfileLlama:
		if p.Type != fss.DCF {
			return badInput("--profile llama has only --type dcf")
		}
		if o.plot != "" {
			return badInput("--plot sweeps kord-v1 only; drop --profile llama")
		}
	default:
		return badInput("--profile: unknown key profile %q (want kord-v1 or llama)", o.profile)
	}
	c := bench.Config{Op: op, Params: p, Keys: o.keys, Workers: o.workers, KernelTime: o.duration, Profile: o.profile}
	if !o.json {
		c.Progress = stderr
	}
	res, err := bench.Run(c)
	if err != nil {
		return err
	}
	if o.json {
		return json.NewEncoder(stdout).Encode(res)
	}
	res.WriteText(stdout)
	return nil
}
