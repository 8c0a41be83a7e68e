package main

import (
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/kord-fss/kord/client"
	"github.com/kord-fss/kord/cmd/kord/internal/demo"
	"github.com/kord-fss/kord/internal/daemon"
)

// pairsOpts are `kord demo`'s flags for a pair group (issue 24).
type pairsOpts struct {
	ks    []int
	fault string
	stall time.Duration
	png   string
	link  bool
}

func (p *pairsOpts) flags(f *pflag.FlagSet) {
	f.IntSliceVar(&p.ks, "pairs", nil, "run K module pairs behind one client pool per site (K, or K1,K2,... to run each in turn): aggregate and per-pair keys/s, every pair verified")
	f.StringVar(&p.fault, "fault", "", "with --pairs: kill -9 pair 0's module0 or module1 once a third of the keys are delivered, and carry on with the other pairs")
	f.DurationVar(&p.stall, "stall", 3*time.Second, "with --pairs: a pair with requests outstanding and no reply for this long is taken down and its requests asked again elsewhere")
	f.BoolVar(&p.link, "link-bytes", false, "with --pairs: relay each pair's peer link through a counter and report its bytes per key (the relay costs CPU)")
	f.StringVar(&p.png, "png", "", "with --pairs: draw aggregate and per-pair keys/s against K to this PNG file")
}

// check validates the pair-group flags.
func (p pairsOpts) check(cmd *cobra.Command, inProcess bool) error {
	f := cmd.Flags()
	if len(p.ks) == 0 {
		for _, name := range []string{"fault", "stall", "png", "link-bytes"} {
			if f.Changed(name) {
				return badInput("--%s is for a pair group: give --pairs K", name)
			}
		}
		if f.Changed("pairs") {
			return badInput("--pairs needs at least one K")
		}
		return nil
	}
	if inProcess {
		return badInput("--pairs runs module pairs as processes: leave out --in-process")
	}
	for _, k := range p.ks {
		if k < 1 || k > client.MaxPoolPairs {
			return badInput("--pairs %d is outside 1..%d", k, client.MaxPoolPairs)
		}
	}
	if p.fault != "" {
		if !slices.Contains(demo.Faults, p.fault) {
			return badInput("--fault %q: want one of %s", p.fault, strings.Join(demo.Faults, ", "))
		}
		if slices.Min(p.ks) < 2 {
			return badInput("--fault needs --pairs of at least 2 (one pair to kill, one to carry on)")
		}
	}
	if p.stall <= 0 {
		return badInput("--stall %v must be positive", p.stall)
	}
	return nil
}

// demoPairs is `kord demo --pairs K[,K...]` (flags checked by demo.go).
func demoPairs(cmd *cobra.Command, o demoOpts) error {
	seed := o.seed
	if seed == 0 {
		seed = uint64(time.Now().UnixNano())
	}
	defer daemon.StartProcess("demo", 0)()
	var progress io.Writer
	if !o.json {
		progress = cmd.ErrOrStderr()
	}
	plaintext, _ := cmd.Flags().GetBool("peer-plaintext")
	sw, err := demo.PairsRuns(cmd.Context(), o.pairs.ks, demo.PairsOptions{Keys: o.keys, Batch: o.batch, InFlight: o.inFlight, KEM: o.kem,
		Seed: seed, Plaintext: plaintext, Fault: o.pairs.fault, Stall: o.pairs.stall, LinkBytes: o.pairs.link,
		AppUnix: o.appLink == "unix"}, progress)
	if err != nil {
		return err
	}
	if err := demo.PrintPairs(cmd.OutOrStdout(), sw, o.json); err != nil {
		return err
	}
	if o.pairs.png != "" {
		if err := demo.PlotPairs(o.pairs.png, sw); err != nil {
			return err
		}
	}
	for _, r := range sw.Runs {
		if r.PairsFailed != 0 || r.Lost != 0 {
			return fmt.Errorf("demo: %d pairs: %d key pairs failed verification, %d lost", r.Pairs, r.PairsFailed, r.Lost)
		}
	}
	return nil
}
