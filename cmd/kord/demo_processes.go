package main

import (
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/kord-fss/kord/cmd/kord/internal/cluster"
	"github.com/kord-fss/kord/cmd/kord/internal/demo"
	"github.com/kord-fss/kord/internal/daemon"
	"github.com/kord-fss/kord/module"
	"github.com/kord-fss/kord/service"
)

func init() {
	var (
		keys, batch, inFlight int
		asJSON                bool
		seed                  uint64
		kem, appLink          string
	)
	cmd := &cobra.Command{
		Use:    "demo-processes",
		Short:  "The multi-process demo (what `kord demo` runs without --in-process)",
		Hidden: true,
		Args:   cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := checkKEM(kem); err != nil {
				return err
			}
			if err := cluster.CheckAppLink(appLink); err != nil {
				return badInput("%v", err)
			}
			batchDefault(cmd, &batch, appLink == "unix")
			return processDemoMain(cmd, keys, batch, inFlight, kem, appLink, seed, asJSON)
		},
	}
	f := cmd.Flags()
	f.IntVar(&keys, "keys", 1000, "number of keys")
	f.IntVar(&batch, "batch", 0, "keys per batch (default as kord demo's)")
	f.IntVar(&inFlight, "in-flight", service.DefaultInFlight, "batches outstanding between the parties")
	f.StringVar(&appLink, "app-link", "unix", "how the application reaches the parties: unix or tcp (as kord demo)")
	f.StringVar(&kem, "kem", "", "pairing KEM: "+strings.Join(module.KEMs(), ", ")+" (default mlkem768)")
	f.BoolVar(&asJSON, "json", false, "print the report as JSON")
	f.Uint64Var(&seed, "seed", 0, "seed of the demo's random requests (0 = from the clock)")
	f.Bool("peer-plaintext", false, "run the parties' peer link without TLS (default: mutual TLS 1.3 with certificates made for the run)")
	rootCmd.AddCommand(cmd)
}

// processDemoMain runs and prints the multi-process demo.
func processDemoMain(cmd *cobra.Command, keys, batch, inFlight int, kem, appLink string, seed uint64, asJSON bool) error {
	if keys < 1 {
		return badInput("--keys %d must be at least 1", keys)
	}
	if batch < 1 || batch > service.MaxCount || inFlight < 1 || inFlight > 1024 {
		return badInput("--batch must be 1..%d and --in-flight 1..1024", service.MaxCount)
	}
	if seed == 0 {
		seed = uint64(time.Now().UnixNano())
	}
	defer daemon.StartProcess("demo", 0)()
	var progress io.Writer
	if !asJSON {
		progress = cmd.ErrOrStderr()
	}
	plaintext, _ := cmd.Flags().GetBool("peer-plaintext")
	rep, err := demo.Processes(cmd.Context(), keys, batch, inFlight, kem, seed, plaintext, appLink == "unix", progress)
	if err != nil {
		return err
	}
	if err := demo.PrintProcesses(cmd.OutOrStdout(), rep, asJSON); err != nil {
		return err
	}
	if rep.PairsFailed != 0 {
		return fmt.Errorf("demo: %d key pairs failed verification", rep.PairsFailed)
	}
	return nil
}

// demoProcesses is `kord demo` without --in-process (called from demo.go,
// which has checked the flags): --batch keys per batch, --in-flight
// batches outstanding, as kord party takes them.
func demoProcesses(cmd *cobra.Command, o demoOpts) error {
	return processDemoMain(cmd, o.keys, o.batch, o.inFlight, o.kem, o.appLink, o.seed, o.json)
}
