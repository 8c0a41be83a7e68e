// Command kord is the command-line interface of kord: dealerless FSS key
// generation, evaluation, the services, benchmarks and tools.
//
// Each command group lives in its own file and registers itself on rootCmd
// from an init function there. The commands map flags to calls: the work
// is in the library and in internal/ (daemon start-up, the process
// cluster, the load generator, the fault runs, the demos).
package main

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strings"

	"github.com/spf13/cobra"

	"github.com/kord-fss/kord/internal/daemon"
)

var rootCmd = &cobra.Command{
	Use:           "kord",
	Short:         "Dealerless function-secret-sharing keys (DPF, DCF) from paired key-generation modules",
	SilenceUsage:  true,
	SilenceErrors: true,
}

// usageError marks bad input from the user; kord exits with status 2 for
// it. It is the daemons' start-up's type (flags, environment, config
// file), so that one type carries bad input wherever it is found.
type usageError = daemon.UsageError

// badInput wraps a formatted message as a usage error (exit status 2).
func badInput(format string, args ...any) error { return daemon.BadInput(format, args...) }

func main() {
	rootCmd.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return usageError{Err: err} })
	rejectUnknownSubcommands(rootCmd)
	err := rootCmd.Execute()
	if err == nil {
		return
	}
	fmt.Fprintln(os.Stderr, "kord:", oncePrefixes(err.Error()))
	var ue usageError
	// A file the user named that is not there is bad input wherever it
	// is met: one exit status for it in every command.
	if errors.As(err, &ue) || isCobraUsage(err) || errors.Is(err, fs.ErrNotExist) {
		os.Exit(2)
	}
	os.Exit(1)
}

// isCobraUsage reports errors cobra raises for unknown commands or arguments.
func isCobraUsage(err error) bool {
	msg := err.Error()
	for _, p := range []string{"unknown command", "unknown flag", "unknown shorthand", "accepts ", "requires at least", "required flag"} {
		if strings.Contains(msg, p) {
			return true
		}
	}
	return false
}

// rejectUnknownSubcommands makes every command group below root (a command
// with subcommands and no action of its own) fail with exit status 2 on an
// unknown subcommand. Cobra's default prints the group's help and exits 0,
// so a typo in a script would pass silently. With no argument a group still
// prints its help.
func rejectUnknownSubcommands(c *cobra.Command) {
	for _, sub := range c.Commands() {
		rejectUnknownSubcommands(sub)
	}
	if c == rootCmd || !c.HasSubCommands() || c.Run != nil || c.RunE != nil {
		return
	}
	c.Args = cobra.ArbitraryArgs
	c.RunE = func(cmd *cobra.Command, args []string) error {
		if len(args) > 0 {
			return badInput("unknown command %q for %q", args[0], cmd.CommandPath())
		}
		return cmd.Help()
	}
}

// oncePrefixes drops a context prefix that repeats the one before it
// ("module: module: not paired" is "module: not paired") and a leading
// "kord: " (main prints its own). Layers that each name themselves are
// kept; only the exact repeats go.
func oncePrefixes(msg string) string {
	msg = strings.TrimPrefix(msg, "kord: ")
	parts := strings.Split(msg, ": ")
	out := parts[:1]
	for _, p := range parts[1:] {
		if p == out[len(out)-1] {
			continue
		}
		out = append(out, p)
	}
	return strings.Join(out, ": ")
}
