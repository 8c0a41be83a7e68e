package main

import (
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/kord-fss/kord/cmd/kord/internal/chaos"
)

func init() { rootCmd.AddCommand(chaosCmd()) }

func chaosCmd() *cobra.Command {
	var (
		trials   int
		duration time.Duration
		seed     uint64
		asJSON   bool
		kill     string
	)
	cmd := &cobra.Command{
		Use:   "chaos crash|rollback|network|soak",
		Short: "Fault tests against real module and party processes",
		Long: `kord chaos runs two modules and two parties as child processes (peer link
with mutual TLS, certificates made for the run) and attacks them:

  crash     kill -9 a daemon (--kill all, modules or parties) at random
            points of a stream and restart it (--trials, 20 in CI, 200 for
            the long run); the application at a killed party's site resends
            the ids it has no answer for. Checks no counter rollback, no
            rollback alarm (rollbacks_detected: nothing was restored), no
            keystream position used twice (module journals), no mismatched
            pair delivered, no orphaned share (keys at one site only), and
            that the stream resumes; reports per daemon the time from its
            restart to the first new pair (recovery_ms: median, p90, max)
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
			ctx := cmd.Context()
			var rep *chaos.Report
			var err error
			switch args[0] {
			case "crash":
				if trials < 1 {
					return badInput("--trials must be at least 1")
				}
				if kill != "all" && kill != "modules" && kill != "parties" {
					return badInput("--kill %q: want all, modules or parties", kill)
				}
				rep, err = chaos.Crash(ctx, trials, kill, seed, progress)
			case "rollback":
				rep, err = chaos.Rollback(ctx, seed)
			case "network":
				rep, err = chaos.Network(ctx, duration, seed, progress)
			case "soak":
				rep, err = chaos.Soak(ctx, duration, seed, progress)
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
	f.StringVar(&kill, "kill", "all", "crash: which daemons to kill: all, modules or parties")
	return cmd
}
