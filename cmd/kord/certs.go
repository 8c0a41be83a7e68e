package main

import (
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/kord-fss/kord/internal/peertls"
)

func init() { rootCmd.AddCommand(certsCmd()) }

func certsCmd() *cobra.Command {
	var (
		dir   string
		valid time.Duration
	)
	cmd := &cobra.Command{
		Use:   "certs --dir DIR",
		Short: "Make the peer link's TLS certificates: a fresh CA and a certificate and key for each party",
		Long: `kord certs writes into --dir (created mode 0700 if needed; existing files
are never overwritten):

  ca.crt                   the CA certificate both parties trust (--tls-ca)
  party0.crt, party0.key   party 0's certificate and key (--tls-cert, --tls-key)
  party1.crt, party1.key   party 1's

Keys are ECDSA P-256, mode 0600. Party b's certificate carries the name
kord-party-b, which the other party requires by default (--tls-peer-name).
The CA's private key is discarded: nothing else can ever be issued under
this CA. To renew, run kord certs again and replace the files at both
sites. Copy ca.crt and party0.* to site 0 only, ca.crt and party1.* to
site 1 only, then delete --dir (see docs/operations.md).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if dir == "" {
				return badInput("--dir is required")
			}
			if valid < time.Hour {
				return badInput("--valid %v: want at least 1h", valid)
			}
			if err := peertls.Init(dir, valid); err != nil {
				return err
			}
			w := cmd.OutOrStdout()
			for b := 0; b < 2; b++ {
				f := peertls.PartyFiles(dir, b)
				fmt.Fprintf(w, "party %d (%s): --tls-cert %s --tls-key %s --tls-ca %s\n", b, peertls.PartyName(b), f.Cert, f.Key, f.CA)
			}
			fmt.Fprintf(w, "valid until %s; the CA key was not kept\n", time.Now().Add(valid).UTC().Format(time.DateOnly))
			return nil
		},
	}
	cmd.Flags().StringVar(&dir, "dir", "", "directory to write the CA certificate and both parties' certificates and keys into")
	cmd.Flags().DurationVar(&valid, "valid", peertls.DefaultValidity, "how long the certificates are valid")
	return cmd
}
