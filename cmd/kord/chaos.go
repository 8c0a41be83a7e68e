package main

import (
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/kord-fss/kord/cmd/kord/internal/chaos"
	"github.com/kord-fss/kord/cmd/kord/internal/cluster"
)

func init() { rootCmd.AddCommand(chaosCmd()) }

func chaosCmd() *cobra.Command {
	var (
		trials   int
		duration time.Duration
		seed     uint64
		asJSON   bool
		kill     string
		appLink  string
	)
	cmd := &cobra.Command{
		Use:   "chaos crash|rollback|network|soak",
		Short: "Fault tests against real module and party processes",
		Long: `kord chaos runs two modules and two parties as child processes (peer link
with mutual TLS, certificates made for the run) and attacks them:

  crash     kill -9 a daemon (--kill all, modules or parties), a whole site
            (--kill site: site 0 or 1's module and party together, chosen
            at random per trial from --seed) or both parties
            (--kill both-parties) at random points of a stream and restart
            what was killed (--trials, 20 in CI, 200 for the long run); the
            application at a killed party's site resends the ids it has no
            answer for. Checks no counter rollback, no rollback alarm
            (rollbacks_detected: nothing was restored), no keystream
            position used twice (keystream_positions_reused), no
            mismatched pair delivered (pairs_mismatched), no orphaned share
            (keys at one site with neither its twin at the other nor a void
            notice: orphaned_shares), and that the stream resumes; counts
            shares voided after delivery (voided_after_delivery) and
            reports per kind killed the time from the restart to the first
            new pair (recovery_ms: n, median, p90, max)
  rollback  restore a module's state file from an older copy; the module must
            detect it from its peer's witness and resynchronise forward
  network   a fault proxy between the parties that delays, partitions, resets
            and corrupts the peer connection (--duration); checks no
            mismatched pair and that the stream heals
  soak      a sustained stream for --duration reporting keys/s and RSS

Exit status 1 if any check fails.`,
		ValidArgs: []string{"crash", "rollback", "network", "soak"},
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) != 1 {
				return badInput("give one test: crash, rollback, network or soak (kord chaos --help says what each does)")
			}
			if seed == 0 {
				seed = uint64(time.Now().UnixNano())
			}
			var progress io.Writer
			if !asJSON {
				progress = cmd.ErrOrStderr()
			}
			if err := cluster.CheckAppLink(appLink); err != nil {
				return err
			}
			unix := appLink == "unix"
			ctx := cmd.Context()
			var rep *chaos.Report
			var err error
			switch args[0] {
			case "crash":
				if trials < 1 {
					return badInput("--trials must be at least 1")
				}
				if !slices.Contains([]string{"all", "modules", "parties", "site", "both-parties"}, kill) {
					return badInput("--kill %q: want all, modules, parties, site or both-parties", kill)
				}
				rep, err = chaos.Crash(ctx, trials, kill, seed, unix, progress)
			case "rollback":
				rep, err = chaos.Rollback(ctx, seed, unix)
			case "network":
				rep, err = chaos.Network(ctx, duration, seed, unix, progress)
			case "soak":
				rep, err = chaos.Soak(ctx, duration, seed, unix, progress)
			default:
				return badInput("unknown test %q (want crash, rollback, network or soak)", args[0])
			}
			if err != nil {
				return err
			}
			if err := writeIndented(cmd.OutOrStdout(), rep); err != nil {
				return err
			}
			if !rep.OK {
				return fmt.Errorf("chaos %s: %s", args[0], strings.Join(rep.Problems, "; "))
			}
			return nil
		},
	}
	f := cmd.Flags()
	f.IntVar(&trials, "trials", 20, "crash: number of kill -9 trials")
	f.DurationVar(&duration, "duration", 10*time.Second, "network, soak: how long")
	f.Uint64Var(&seed, "seed", 0, "random seed (0 = from the clock)")
	f.BoolVar(&asJSON, "json", false, "no progress on stderr")
	f.StringVar(&appLink, "app-link", "unix", "how the load (an application on this host) reaches the parties: unix (their Unix sockets, keys of whole slabs handed on as memfds: the same-host path) or tcp (TLS 1.3 with a client certificate, as a remote application); the JSON's app_link says which, slabs_handed how many messages came as memfds")
	f.StringVar(&kill, "kill", "all", "crash: what to kill: all, modules or parties (one daemon a trial), site (site 0 or 1's module and party together, at random) or both-parties")
	return cmd
}
