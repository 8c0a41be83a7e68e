package main

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/kord-fss/kord/cmd/kord/internal/bench"
	"github.com/kord-fss/kord/internal/daemon"
	"github.com/kord-fss/kord/service"
)

// kord bench resnet18-keys: flags to bench.ResNetKeys (issue 22).

func init() {
	var (
		o      bench.ResNetKeysConfig
		asJSON bool
	)
	cmd := &cobra.Command{
		Use:   "resnet18-keys [--fraction F] [--json]",
		Short: "Every DCF key of one private ResNet-18 inference through the five processes, against KORD and a trusted dealer",
		Long: `Takes the key inventory of one ResNet-18 inference at ImageNet shape
(kord infer inventory --model resnet18: the ReLU, max-pool and truncation
keys of kord's layer protocols, ℓ = 32, scale 10) and streams every key
through the five processes of ` + "`kord demo`" + ` (2 modules, 2 party daemons,
this client), as derived-mode requests (α, and β for the ReLU payload
keys, drawn inside the modules; nothing bound crosses between the sites).
Reports keys/s, seconds, the ratio to KORD's 1.14 s on its fabric and to
LLAMA's dealer (18.54 s), and a trusted dealer generating the same keys
with fss.BatchGen on every core of this machine in the same run.

Keys are streamed --chunk at a time; between chunks, outside the clock,
--verify pairs of the chunk are evaluated (Eval(0,k0,x)+Eval(1,k1,x) =
β·1{x<α} at α, α±1 and a random point) and the chunk is released, so the
client never holds more than one chunk. --fraction runs that share of
every key kind (the report extrapolates the whole inventory's time).
Then the linear layers' correlations go through the same processes
(client.Correlation requests, derived in the modules): every layer's
weight mask once (the session, timed apart) and one evaluation's input
correlations (correlation_seconds); the fully connected layer's Z = A·R is
checked from both parties' shares.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			batchDefault(cmd, &o.Batch, o.AppLink == "unix")
			if err := o.Check(); err != nil {
				return badInput("%v", err)
			}
			// KORD_CPUPROFILE_DIR profiles this process (the client) as
			// the daemons profile themselves.
			stopProfile := daemon.Profile("bench-resnet18-keys")
			rep, err := bench.ResNetKeys(context.Background(), o, cmd.ErrOrStderr())
			stopProfile()
			if err != nil {
				return err
			}
			if err := rep.Write(cmd.OutOrStdout(), asJSON); err != nil {
				return err
			}
			if rep.VerifyFailed != 0 {
				return fmt.Errorf("bench resnet18-keys: %d key pairs failed verification", rep.VerifyFailed)
			}
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.Model, "model", "resnet18", "resnet18 (ImageNet shape) or resnet18-s<side>-w<width>-c<classes>")
	f.Float64Var(&o.Fraction, "fraction", 1, "share of every key kind to run, in (0, 1]")
	f.IntVar(&o.Chunk, "chunk", 65536, "keys streamed between two verification pauses")
	f.IntVar(&o.PerReq, "per-request", 1024, "keys per derived request")
	f.IntVar(&o.Batch, "batch", 0, fmt.Sprintf("the parties' keys per batch (1..%d; default as kord party's: %d on --app-link unix, %d on tcp)", service.MaxCount, service.DefaultBatchSameHost, service.DefaultBatch))
	f.IntVar(&o.InFlight, "in-flight", bench.DeliverDefaultInFlight, "the parties' batches outstanding (1..1024)")
	f.IntVar(&o.Verify, "verify", 64, "key pairs verified per chunk, outside the clock")
	f.BoolVar(&o.NoDealer, "no-dealer", false, "skip the trusted dealer's generation")
	f.BoolVar(&o.NoCorr, "no-correlations", false, "skip the linear layers' correlations")
	f.StringVar(&o.AppLink, "app-link", "unix", "how this client reaches the parties: unix (a same-host application on their Unix-socket API) or tcp (a remote application, TLS over TCP)")
	f.BoolVar(&asJSON, "json", false, "print one JSON object")
	benchCmd.AddCommand(cmd)
}
