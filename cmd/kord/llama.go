package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/kord-fss/kord/cmd/kord/internal/llamaexport"
	"github.com/kord-fss/kord/cmd/kord/internal/llamagates"
)

func init() { rootCmd.AddCommand(llamaCmd()) }

func llamaCmd() *cobra.Command {
	c := &cobra.Command{Use: "llama", Short: "EzPC LLAMA interop: dealerless DCF keys in LLAMA's own files (docs/interop-llama.md)"}
	c.AddCommand(llamaExportCmd(), llamaGatesCmd(), llamaVerifyCmd())
	return c
}

// llamaErr maps the package's bad-input errors to the CLI's.
func llamaErr(err error) error {
	if errors.Is(err, llamaexport.ErrBadInput) || errors.Is(err, llamagates.ErrBadInput) {
		return badInput("%v", err)
	}
	return err
}

func llamaExportCmd() *cobra.Command {
	var tlsf appTLSFlags
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
			if c.AppTLS, err = tlsf.files(); err != nil {
				return err
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
	tlsf.addBoth(f)
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
		Short: "Read an export or a gates directory back (sizes against params.json) and check it with LLAMA's evaluation",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if dir == "" {
				return badInput("--dir: no export directory given")
			}
			if g, err := llamagates.IsGates(dir); err != nil {
				return llamaErr(err)
			} else if g {
				if cmd.Flags().Changed("beta") {
					return badInput("--beta: a gates directory has no payload to check")
				}
				return verifyGates(cmd, dir)
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

func llamaGatesCmd() *cobra.Command {
	var (
		c        llamagates.Config
		jsonFlag bool
		tlsf     appTLSFlags
	)
	cmd := &cobra.Command{
		Use:   "gates --dir DIR --bits BW --relu N1 --ars N2 --shift S --maxpool N3 [--party0 ADDR --party1 ADDR]",
		Short: "Write dealerless LLAMA ReLU, ARS and MaxPool key packs as server.dat/client.dat with each party's mask shares",
		Long: `kord llama gates asks two party daemons (--party0, --party1: their
application addresses) for EzPC LLAMA gate key packs of width --bits
(8..64) — --relu ReLU packs, --ars arithmetic-shift (ScaleDown) packs by
--shift (1 ≤ S < BW), --maxpool pair-MaxPool packs — with the masks drawn
inside the two modules, or, without addresses, an in-process module pair.
It writes to DIR:

  server.dat, client.dat              each party's packs in LLAMA's layout: N1 ReLU, N2 ARS, N3 MaxPool; no header
  server.masks.json, client.masks.json each party's additive shares of the masks (decimal, mod 2^BW):
                                      {"relu":{"r_in":[…],"r_out":[…]},"ars":{…},"maxpool":{"r_in":[2·N3],"r_out":[N3]}}
  params.json                         {"profile":"llama","type":"gates","bits","relu","ars","shift","maxpool"}

docs/interop-llama.md has how a LLAMA program uses them.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			var err error
			if c.AppTLS, err = tlsf.files(); err != nil {
				return err
			}
			rep, err := llamagates.Write(cmd.Context(), c)
			if err != nil {
				return llamaErr(err)
			}
			if jsonFlag {
				return json.NewEncoder(cmd.OutOrStdout()).Encode(rep)
			}
			fmt.Fprintf(cmd.OutOrStdout(), "wrote %d llama gate packs (%d ReLU, %d ARS by %d, %d MaxPool; %d bits, %d bytes per .dat) to %s from %s\n",
				rep.Packs, c.Relu, c.Ars, c.Shift, c.MaxPool, c.Bits, rep.DatBytes, rep.Dir, rep.Source)
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&c.Dir, "dir", "", "output directory (created if missing)")
	f.IntVar(&c.Bits, "bits", 0, "the gates' width BW, 8..64")
	f.IntVar(&c.Relu, "relu", 0, "number of ReLU packs N1")
	f.IntVar(&c.Ars, "ars", 0, "number of ARS (ScaleDown) packs N2")
	f.IntVar(&c.Shift, "shift", 0, "the ARS shift S, 1 ≤ S < BW")
	f.IntVar(&c.MaxPool, "maxpool", 0, "number of pair-MaxPool packs N3")
	f.StringVar(&c.Party0, "party0", "", "party 0's application address (host:port or unix:///path); none: in-process module pair")
	f.StringVar(&c.Party1, "party1", "", "party 1's application address")
	tlsf.addBoth(f)
	f.BoolVar(&jsonFlag, "json", false, "print the report as JSON")
	return cmd
}

// verifyPoints is how many random masked inputs `kord llama verify`
// evaluates each gate pack at.
const verifyPoints = 8

func verifyGates(cmd *cobra.Command, dir string) error {
	f, err := llamagates.Read(dir)
	if err != nil {
		return llamaErr(err)
	}
	if err := f.Verify(verifyPoints); err != nil {
		return fmt.Errorf("kord llama verify: %w", err)
	}
	p := f.Params
	fmt.Fprintf(cmd.OutOrStdout(), "%d ReLU, %d ARS (shift %d) and %d MaxPool packs of %d bits evaluate to ReLU, the exact shift and the signed max at %d random masked inputs each\n",
		p.Relu, p.Ars, p.Shift, p.MaxPool, p.Bits, verifyPoints)
	return nil
}
