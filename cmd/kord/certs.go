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
		apps  []string
		valid time.Duration
	)
	cmd := &cobra.Command{
		Use:   "certs --dir DIR [--apps NAME[,NAME...]]",
		Short: "Make the peer link's and application API's TLS certificates: a fresh CA, a certificate and key for each party and each application",
		Long: `kord certs writes into --dir (created mode 0700 if needed; existing files
are never overwritten):

  ca.crt                   the CA certificate both parties trust (--tls-ca)
  party0.crt, party0.key   party 0's certificate and key (--tls-cert, --tls-key)
  party1.crt, party1.key   party 1's
  app-NAME.crt, app-NAME.key
                           with --apps, application NAME's client
                           certificate (URI kord-app:NAME) and key

Keys are ECDSA P-256, mode 0600. Party b's certificate carries the name
kord-party-b, which the other party requires by default (--tls-peer-name).
The CA's private key is discarded: nothing else can ever be issued under
this CA. To renew, run kord certs again and replace the files at both
sites. Copy ca.crt and party0.* to site 0 only, ca.crt and party1.* to
site 1 only, then delete --dir (see docs/operations.md).

The party certificates also serve the application API (kord party
--app-tls-cert partyB.crt --app-tls-key partyB.key --app-ca ca.crt);
applications present their app-NAME certificate, and NAME is their
identity. Both sites' applications of one computation use the same name,
so give both sites a copy of its files (kord pair needs the operator's:
--apps operator).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if dir == "" {
				return badInput("--dir is required")
			}
			if valid < time.Hour {
				return badInput("--valid %v: want at least 1h", valid)
			}
			for _, a := range apps {
				if err := peertls.CheckAppName(a); err != nil {
					return badInput("--apps: %v", err)
				}
			}
			if err := peertls.InitApps(dir, valid, apps); err != nil {
				return err
			}
			w := cmd.OutOrStdout()
			for b := 0; b < 2; b++ {
				f := peertls.PartyFiles(dir, b)
				fmt.Fprintf(w, "party %d (%s): --tls-cert %s --tls-key %s --tls-ca %s\n", b, peertls.PartyName(b), f.Cert, f.Key, f.CA)
			}
			for _, a := range apps {
				f := peertls.AppFiles(dir, a)
				fmt.Fprintf(w, "application %s: --app-tls-cert %s --app-tls-key %s --app-ca %s\n", a, f.Cert, f.Key, f.CA)
			}
			fmt.Fprintf(w, "valid until %s; the CA key was not kept\n", time.Now().Add(valid).UTC().Format(time.DateOnly))
			return nil
		},
	}
	cmd.Flags().StringVar(&dir, "dir", "", "directory to write the CA certificate and both parties' certificates and keys into")
	cmd.Flags().StringSliceVar(&apps, "apps", nil, "application names to issue client certificates for (comma-separated), e.g. operator,inference")
	cmd.Flags().DurationVar(&valid, "valid", peertls.DefaultValidity, "how long the certificates are valid")
	return cmd
}
