package main

import (
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/kord-fss/kord/cmd/kord/internal/bench"
	"github.com/kord-fss/kord/internal/daemon"
	"github.com/kord-fss/kord/service"
)

// kord bench deliver: flags to bench.Deliver (issue 19).

func init() {
	var (
		o       bench.DeliverConfig
		asJSON  bool
		pngFile string
	)
	cmd := &cobra.Command{
		Use:   "deliver [--keys N] [--json] [--png FILE]",
		Short: "Verified key pairs delivered to an application, in process and through five processes, against raw BatchGen",
		Long: `For DPF-32 and DCF-32, each tier (otp, mac, batchmac) in bound mode and
derived mode, measure in one run:

  raw        fss.BatchGen on one worker, no transport, keys never leave
             the buffer: the fastest of six runs of --raw-time / 6, three
             before the row's delivered paths and three after;
  in-process two software modules and the two parties in this process
             (host.LocalPair: the daemons' session protocol over an
             in-process link) on the bulk path: 4096-key slab calls, each
             one request (one job) per party, whose slab is handed over
             whole and read in place (key views);
  processes  the five processes of ` + "`kord demo`" + ` (2 modules, 2 parties with a
             mutual-TLS peer link, this client on two streams), started once
             for all rows: requests of --batch keys each (bound: one bound
             bulk request, client.BoundBulk; derived: count), key pairs
             received by the application as client batches (key views over
             the received messages) over --app-link: by default the
             parties' Unix sockets, as a same-host application (tcp:
             TLS 1.3 over loopback, as a remote one; the JSON's app_link
             says which);
  floor      the transport floor: the row's key-share bytes (--keys keys
             per party, --batch keys a write) pushed for both parties at
             once over the sockets of the processes path, a Unix socket
             hop and an application hop (loopback TCP, or a Unix socket
             with --app-link unix) each, relayed and read in this process
             with nothing else done (JSON: floor_pairs_per_sec, and
             floor_ratio to raw Gen);
  slab       the five processes again (a second cluster unless --app-link
             slab), each party taking its module's bulk slabs as sealed
             memfds and handing each whole slab's memfd on to the
             application on its Unix socket, which reads the keys from it
             (kord party's default for such an application; JSON:
             slab_keys_per_sec, slab_ratio, slab_handed_messages;
             slab_note says what it covers). The processes column takes
             the slabs as bytes over the module socket
             (--module-slab-fds=false), unless --app-link slab, which
             measures the memfd path there too.

Both delivered paths first deliver one untimed chunk of every row (warm-up:
heap growth, first page faults, connections), then hand out --chunk keys at
a time; only the delivery is timed. Between chunks, outside the clock, every pair is verified:
Eval(0,k0,x) + Eval(1,k1,x) = f(x) at α, α±1 and a random point (derived:
at the α the two parties' shares add up to, with β checked as well). Each
rate is printed as keys/s and as its ratio to raw Gen of the same shape.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := o.Check(); err != nil {
				return badInput("%v", err)
			}
			// KORD_CPUPROFILE_DIR profiles this process (the application
			// and the in-process pair) as the daemons profile themselves.
			stop := daemon.Profile("bench")
			rep, err := bench.Deliver(cmd.Context(), o, cmd.ErrOrStderr())
			stop()
			if err != nil {
				return err
			}
			if pngFile != "" {
				if err := rep.Draw(pngFile); err != nil {
					return fmt.Errorf("--png: %w", err)
				}
			}
			if err := rep.Write(cmd.OutOrStdout(), asJSON); err != nil {
				return err
			}
			for _, r := range rep.Rows {
				if r.PairsFailed != 0 {
					return fmt.Errorf("bench deliver: %s-%d-%s: %d key pairs failed verification", r.Type, r.InBits, r.Tier, r.PairsFailed)
				}
			}
			return nil
		},
	}
	f := cmd.Flags()
	f.IntVar(&o.Keys, "keys", bench.DeliverDefaultKeys, "key pairs per row and delivered path")
	f.IntVar(&o.Batch, "batch", bench.DeliverDefaultBatch, fmt.Sprintf("keys per batch, for the parties and the in-process pair (1..%d)", service.MaxCount))
	f.IntVar(&o.InFlight, "in-flight", bench.DeliverDefaultInFlight, "batches outstanding between the parties (1..1024)")
	f.IntVar(&o.Chunk, "chunk", bench.DeliverDefaultChunk, "keys delivered between two verification pauses (the clock stops while the pairs are verified)")
	f.DurationVar(&o.RawTime, "raw-time", 300*time.Millisecond, "time of the raw BatchGen measurements per row (half before, half after the delivered paths)")
	f.BoolVar(&asJSON, "json", false, "print one JSON object")
	f.StringVar(&o.AppLink, "app-link", "unix", "how the application reaches the parties: unix (a Unix socket each, as on one host), tcp (loopback, TLS 1.3, as a remote application) or slab (unix, with each party taking its module's slabs as sealed memfds and handing them on: the processes columns then measure that path)")
	f.StringVar(&pngFile, "png", "", "draw delivered keys/s per path beside raw Gen, per row, to this PNG")
	benchCmd.AddCommand(cmd)
}
