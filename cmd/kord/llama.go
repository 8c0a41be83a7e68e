package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/kord-fss/kord/internal/llamaexport"
)

func init() { rootCmd.AddCommand(llamaCmd()) }

func llamaCmd() *cobra.Command {
	c := &cobra.Command{Use: "llama", Short: "EzPC LLAMA interop: dealerless DCF keys in LLAMA's own files (docs/interop-llama.md)"}
	c.AddCommand(llamaExportCmd(), llamaVerifyCmd())
	return c
}

// llamaErr maps the package's bad-input errors to the CLI's.
func llamaErr(err error) error {
	if errors.Is(err, llamaexport.ErrBadInput) {
		return badInput("%v", err)
	}
	return err
}

func llamaExportCmd() *cobra.Command {
	var (
		c        llamaexport.Config
		betaS    string
		jsonFlag bool
	)
	cmd := &cobra.Command{
		Use:   "export --dir DIR --keys N --in-bits L --out-bits M [--beta B[,B2,...]] [--party0 ADDR --party1 ADDR]",
		Short: "Write N dealerless LLAMA DCF keys as server.dat/client.dat with each party's α shares",
		Long: `kord llama export asks two party daemons (--party0, --party1: their
application addresses) for N derived-mode DCF keys in the llama profile —
α drawn inside the two modules, the public payload --beta (default 1; a
comma-separated list B1,B2,... of up to 64 elements is a payload vector,
LLAMA's groupSize, from the in-process module pair) — or, without
addresses, an in-process module pair. It writes to DIR:

  server.dat, client.dat        each party's keys in LLAMA's layout, concatenated in request order
  server.shares, client.shares  each party's additive share of each α, one decimal per line
  params.json                   {"profile":"llama","type":"dcf","in_bits","out_bits","group","keys","beta"}

It refuses a --dir that is not empty (--force writes there anyway).

A LLAMA program reads server.dat (party 0, its SERVER) and client.dat
(party 1, its CLIENT) where its dealer's files were; each party masks its
inputs with its own .shares. docs/interop-llama.md has the details.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if c.OutBits < 1 || c.OutBits > 64 {
				return badInput("--out-bits %d is outside 1..64", c.OutBits)
			}
			vs, err := parseWords("--beta", betaS, c.OutBits)
			if err != nil {
				return err
			}
			if len(vs) == 1 {
				c.Beta = vs[0]
			} else {
				c.Betas = vs
			}
			rep, err := llamaexport.Export(cmd.Context(), c)
			if err != nil {
				return llamaErr(err)
			}
			if jsonFlag {
				return json.NewEncoder(cmd.OutOrStdout()).Encode(rep)
			}
			fmt.Fprintf(cmd.OutOrStdout(), "wrote %d llama DCF keys (Bin %d, Bout %d, %d bytes each) to %s from %s\n",
				rep.Keys, c.InBits, c.OutBits, rep.KeyBytes, rep.Dir, rep.Source)
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&c.Dir, "dir", "", "output directory (created if missing)")
	f.IntVar(&c.Keys, "keys", 0, "number of keys N")
	f.IntVar(&c.InBits, "in-bits", 0, "input width Bin, 1..64")
	f.IntVar(&c.OutBits, "out-bits", 0, "output width Bout, 1..64")
	f.StringVar(&betaS, "beta", "1", "the public payload β (below 2^Bout), or a vector B1,B2,... (up to 64 elements)")
	f.StringVar(&c.Party0, "party0", "", "party 0's application address (host:port or unix:///path); none: in-process module pair")
	f.StringVar(&c.Party1, "party1", "", "party 1's application address")
	f.BoolVar(&jsonFlag, "json", false, "print the report as JSON")
	f.BoolVar(&c.Force, "force", false, "write into --dir even if it is not empty (replacing an export there)")
	return cmd
}

func llamaVerifyCmd() *cobra.Command {
	var (
		dir   string
		betaS string
	)
	cmd := &cobra.Command{
		Use:   "verify --dir DIR [--beta B[,B2,...]]",
		Short: "Read an export back (sizes against params.json) and check every pair with LLAMA's evaluation",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if dir == "" {
				return badInput("--dir: no export directory given")
			}
			e, err := llamaexport.Read(dir)
			if err != nil {
				return llamaErr(err)
			}
			beta := e.Params.Beta
			if cmd.Flags().Changed("beta") || len(beta) == 0 {
				if beta, err = parseWords("--beta", betaS, e.Params.OutBits); err != nil {
					return err
				}
			}
			if len(beta) != e.Params.Group {
				return badInput("--beta has %d elements, the export's group (params.json) is %d", len(beta), e.Params.Group)
			}
			if err := e.VerifyVec(beta); err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "%d key pairs evaluate to %s·[x < α] with α = server share + client share\n", e.Params.Keys, strings.Trim(fmt.Sprint(beta), "[]"))
			return nil
		},
	}
	cmd.Flags().StringVar(&dir, "dir", "", "export directory")
	cmd.Flags().StringVar(&betaS, "beta", "1", "the payload to check the keys against (B1,B2,... for a vector); default: the β params.json records (1 for an export that records none)")
	return cmd
}
