package main

import (
	"errors"
	"fmt"
	"os"

	"github.com/spf13/cobra"

	"github.com/kord-fss/kord/module/provision"
)

func init() {
	c := &cobra.Command{Use: "secret", Short: "Provisioning secrets for kord module"}
	c.AddCommand(secretNewCmd())
	rootCmd.AddCommand(c)
}

func secretNewCmd() *cobra.Command {
	var out string
	cmd := &cobra.Command{
		Use:   "new [--out FILE]",
		Short: "Make a fresh 256-bit provisioning secret (kordsec1-…, with a checksum)",
		Long: `kord secret new draws 32 random bytes and writes them in the only form
kord module accepts: kordsec1- and 58 base32 characters, the last few a
checksum that catches a mistyped copy. Give the same secret to both modules
of a pair (--secret-file FILE or the environment KORD_SECRET), and remove it
once they are paired.

With --out the secret goes to a new file created mode 0600 (it refuses to
overwrite one); without, to standard output.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			s := provision.New()
			text, err := provision.Encode(s)
			clear(s)
			if err != nil {
				return err
			}
			if out == "" {
				_, err := fmt.Fprintln(cmd.OutOrStdout(), text)
				return err
			}
			f, err := provision.CreatePrivate(out)
			if errors.Is(err, os.ErrExist) {
				return badInput("--out %s exists; kord secret new does not overwrite a secret", out)
			}
			if err != nil {
				return badInput("--out: %v", err)
			}
			if _, err := fmt.Fprintln(f, text); err != nil {
				f.Close()
				return err
			}
			if err := f.Sync(); err != nil {
				f.Close()
				return err
			}
			return f.Close()
		},
	}
	cmd.Flags().StringVar(&out, "out", "", "write the secret to this new file (mode 0600) instead of standard output")
	return cmd
}
