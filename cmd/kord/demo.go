package main

import (
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/kord-fss/kord/cmd/kord/internal/cluster"
	"github.com/kord-fss/kord/cmd/kord/internal/demo"
	"github.com/kord-fss/kord/module"
	"github.com/kord-fss/kord/service"
)

func init() {
	rootCmd.AddCommand(demoCmd())
}

// demoOpts are the flags of `kord demo`.
type demoOpts struct {
	inProcess, json bool
	keys            int
	batch           int // keys per batch (both paths)
	inFlight        int // batches outstanding between the parties (process path)
	kem             string
	appLink         string // --app-link (process path)
	seed            uint64
	pairs           pairsOpts // --pairs, --fault, --stall, --png (demo_pairs.go)
}

// check validates every flag, whichever path the demo takes.
func (o demoOpts) check(cmd *cobra.Command) error {
	if o.keys < 1 {
		return badInput("--keys %d must be at least 1", o.keys)
	}
	if o.batch < 1 || o.batch > service.MaxCount {
		return badInput("--batch %d is outside 1..%d", o.batch, service.MaxCount)
	}
	if o.inFlight < 1 || o.inFlight > 1024 {
		return badInput("--in-flight %d is outside 1..1024", o.inFlight)
	}
	if err := checkKEM(o.kem); err != nil {
		return err
	}
	if err := o.pairs.check(cmd, o.inProcess); err != nil {
		return err
	}
	if err := cluster.CheckAppLink(o.appLink); err != nil {
		return badInput("%v", err)
	}
	if cmd.Flags().Changed("app-link") && o.inProcess {
		return badInput("--app-link is for the demo's party processes: leave out --in-process (whose application calls the hosts in process)")
	}
	if !o.inProcess {
		return nil
	}
	if cmd.Flags().Changed("peer-plaintext") {
		return badInput("--peer-plaintext is for the demo's party processes: leave out --in-process (which has no peer link)")
	}
	if cmd.Flags().Changed("in-flight") {
		return badInput("--in-flight (batches outstanding between the parties) is for the demo's party processes: leave out --in-process (whose hosts run one batch at a time); --batch sets the keys per batch")
	}
	return nil
}

// checkKEM refuses a pairing KEM the modules do not know ("" = default).
func checkKEM(kem string) error {
	if kem == "" || slices.Contains(module.KEMs(), kem) {
		return nil
	}
	return badInput("--kem %q: want one of %s", kem, strings.Join(module.KEMs(), ", "))
}

// demoCmd is `kord demo`: two modules and two hosts, many keys, every pair
// checked by evaluation.
func demoCmd() *cobra.Command {
	var o demoOpts
	cmd := &cobra.Command{
		Use:   "demo [--in-process] --keys N [--json]",
		Short: "Pair two modules, generate keys of every mode, tier, type and width through two hosts, verify every pair",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			batchDefault(cmd, &o.batch, !o.inProcess && o.appLink == "unix")
			if err := o.check(cmd); err != nil {
				return err
			}
			if len(o.pairs.ks) > 0 {
				return demoPairs(cmd, o) // demo_pairs.go
			}
			if !o.inProcess {
				return demoProcesses(cmd, o) // demo_processes.go
			}
			seed := o.seed
			if seed == 0 {
				seed = uint64(time.Now().UnixNano())
			}
			var progress io.Writer
			if !o.json {
				progress = cmd.ErrOrStderr()
			}
			rep, err := demo.InProcess(cmd.Context(), o.keys, o.batch, o.kem, seed, progress)
			if err != nil {
				return err
			}
			w := cmd.OutOrStdout()
			if o.json {
				if err := writeIndented(w, rep); err != nil {
					return err
				}
			} else {
				fmt.Fprintf(w, "%d pairs verified, %d failed; %d round per key; %.0f keys/s (dealer Gen %.0f keys/s)\n",
					rep.PairsVerified, rep.PairsFailed, rep.RoundsPerKey, rep.KeysPerSec, rep.DealerKeysPerSec)
				for _, k := range []string{"dpf-16-otp", "dpf-16-mac", "dpf-16-batchmac", "dpf-32-derived"} {
					note := ""
					switch k {
					case "dpf-16-batchmac":
						note = " (the default tier)"
					case "dpf-16-otp":
						note = " (opt-in: semi-honest hosts and network only)"
					}
					fmt.Fprintf(w, "  %-16s %g bytes per party per key%s\n", k, rep.WireBytesPerPartyPerKey[k], note)
				}
			}
			if rep.PairsFailed != 0 {
				return fmt.Errorf("demo: %d key pairs failed verification", rep.PairsFailed)
			}
			return nil
		},
	}
	f := cmd.Flags()
	f.BoolVar(&o.inProcess, "in-process", false, "run both modules and both hosts in this process")
	f.IntVar(&o.keys, "keys", 1000, "number of keys")
	f.IntVar(&o.batch, "batch", 0, fmt.Sprintf("keys per batch (1..%d), as kord party --batch (default as its: %d on --app-link unix, %d otherwise)", service.MaxCount, service.DefaultBatchSameHost, service.DefaultBatch))
	f.IntVar(&o.inFlight, "in-flight", service.DefaultInFlight, "without --in-process: batches outstanding between the parties (1..1024), as kord party --in-flight")
	f.StringVar(&o.appLink, "app-link", "unix", "without --in-process: how the demo's application reaches the parties (each pair's, with --pairs): unix (their Unix sockets, as on one host; whole slabs come as the modules' memfds) or tcp (TLS 1.3 with a client certificate, as a remote application)")
	f.StringVar(&o.kem, "kem", "", "pairing KEM: "+strings.Join(module.KEMs(), ", ")+" (default mlkem768)")
	f.BoolVar(&o.json, "json", false, "print the report as JSON")
	f.Uint64Var(&o.seed, "seed", 0, "seed of the demo's random requests (0 = from the clock)")
	f.Bool("peer-plaintext", false, "without --in-process: run the parties' peer link without TLS (default: mutual TLS 1.3 with certificates made for the run), to see what TLS costs")
	o.pairs.flags(f)
	return cmd
}
