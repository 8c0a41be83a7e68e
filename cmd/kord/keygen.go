package main

import (
	"encoding/hex"
	"fmt"
	"strconv"
	"strings"

	"github.com/kord-fss/kord/fss"
	"github.com/spf13/cobra"
)

func init() {
	rootCmd.AddCommand(keygenCmd(), evalCmd())
}

// keygenCmd is `kord keygen`: the trusted-dealer path, for vectors, tests
// and interoperability checks.
func keygenCmd() *cobra.Command {
	var (
		typ, alphaS, betaS, root0, root1, profile string
		inBits, outBits                           int
	)
	cmd := &cobra.Command{
		Use:   "keygen [--profile kord-v1|llama] --type dpf|dcf --in-bits L --out-bits N --alpha A --beta B[,B2,...] [--root0 HEX --root1 HEX]",
		Short: "Generate a DPF or DCF key pair as a dealer; prints key0 and key1 as hex, one per line",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			switch profile {
			case "", "kord-v1":
			case "llama":
				return keygenLlama(cmd.OutOrStdout(), typ, inBits, outBits, alphaS, betaS, root0, root1)
			default:
				return badInput("--profile: unknown key profile %q (want kord-v1 or llama)", profile)
			}
			p, err := parseParams(typ, inBits, outBits)
			if err != nil {
				return err
			}
			alpha, err := parseWord("--alpha", alphaS, inBits)
			if err != nil {
				return err
			}
			beta, err := parseWord("--beta", betaS, outBits)
			if err != nil {
				return err
			}
			var k0, k1 *fss.Key
			switch {
			case root0 == "" && root1 == "":
				k0, k1, err = fss.Gen(nil, p, alpha, beta)
			case root0 == "" || root1 == "":
				return badInput("give both --root0 and --root1, or neither")
			default:
				r0, err := parseRoot("--root0", root0)
				if err != nil {
					return err
				}
				r1, err := parseRoot("--root1", root1)
				if err != nil {
					return err
				}
				if err := distinctRoots(r0, r1); err != nil {
					return err
				}
				k0, k1, err = fss.GenWithRoots(p, alpha, beta, r0, r1)
				if err != nil {
					return badInput("%v", err)
				}
			}
			if err != nil {
				return err
			}
			for _, k := range []*fss.Key{k0, k1} {
				raw, err := k.MarshalBinary()
				if err != nil {
					return err
				}
				fmt.Fprintln(cmd.OutOrStdout(), hex.EncodeToString(raw))
			}
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&profile, "profile", "kord-v1", "key profile: kord-v1, or llama (EzPC LLAMA's DCF, its exact file layout; --beta may be a comma-separated vector)")
	f.StringVar(&typ, "type", "", "key type: dpf or dcf")
	f.IntVar(&inBits, "in-bits", 0, "input width ℓ (1..64)")
	f.IntVar(&outBits, "out-bits", 0, "output width n (1..64)")
	f.StringVar(&alphaS, "alpha", "", "the hidden point α (decimal, or 0x hex), below 2^ℓ")
	f.StringVar(&betaS, "beta", "", "the payload β (decimal, or 0x hex), below 2^n")
	f.StringVar(&root0, "root0", "", "party 0 root seed, 32 hex digits (default: random)")
	f.StringVar(&root1, "root1", "", "party 1 root seed, 32 hex digits (default: random)")
	for _, name := range []string{"type", "in-bits", "out-bits", "alpha", "beta"} {
		cmd.MarkFlagRequired(name)
	}
	return cmd
}

// evalCmd is `kord eval`: one key share at one point.
func evalCmd() *cobra.Command {
	var (
		keyHex, xS, profile    string
		inBits, outBits, party int
	)
	cmd := &cobra.Command{
		Use:   "eval --key HEX --x X [--profile llama --in-bits L --out-bits N --party B]",
		Short: "Evaluate one key share at x; prints the output share as an unsigned decimal",
		Long: `kord eval evaluates one key share at x and prints the output share
as an unsigned decimal. A kord-v1 key (kord keygen, the daemons) carries
its shape. A LLAMA key (kord keygen --profile llama, kord llama export)
does not: give --profile llama with its --in-bits, --out-bits and the
--party whose key it is (0: the server's, 1: the client's); the payload
group G follows from the key's length, and the G output shares are
printed on one line.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			raw, err := hex.DecodeString(strings.TrimSpace(keyHex))
			if err != nil {
				return badInput("--key is not valid hex: %v", err)
			}
			switch profile {
			case "llama":
				return evalLlama(cmd.OutOrStdout(), raw, xS, inBits, outBits, party)
			case "", "kord-v1":
			default:
				return badInput("--profile: unknown key profile %q (want kord-v1 or llama)", profile)
			}
			for _, f := range []string{"in-bits", "out-bits", "party"} {
				if cmd.Flags().Changed(f) {
					return badInput("--%s is for --profile llama: a kord-v1 key carries its shape", f)
				}
			}
			k, err := fss.ParseKey(raw)
			if err != nil {
				return badInput("--key: %v (a LLAMA key, from kord keygen --profile llama or kord llama export, needs --profile llama --in-bits L --out-bits N --party B)", err)
			}
			x, err := parseWord("--x", xS, k.Params().InBits)
			if err != nil {
				return err
			}
			y, err := k.Eval(x)
			if err != nil {
				return badInput("%v", err)
			}
			fmt.Fprintln(cmd.OutOrStdout(), y)
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&keyHex, "key", "", "a serialized key share, hex")
	f.StringVar(&xS, "x", "", "the input point (decimal, or 0x hex), below 2^ℓ")
	f.StringVar(&profile, "profile", "kord-v1", "the key's profile: kord-v1 or llama")
	f.IntVar(&inBits, "in-bits", 0, "--profile llama: the key's input width Bin")
	f.IntVar(&outBits, "out-bits", 0, "--profile llama: the key's output width Bout")
	f.IntVar(&party, "party", -1, "--profile llama: whose key it is, 0 (server) or 1 (client)")
	cmd.MarkFlagRequired("key")
	cmd.MarkFlagRequired("x")
	return cmd
}

// parseParams checks the --type, --in-bits and --out-bits flags of a
// command and returns the key shape they name.
func parseParams(typ string, inBits, outBits int) (fss.Params, error) {
	t, err := fss.ParseType(typ)
	if err != nil {
		return fss.Params{}, badInput("--type: unknown key type %q (want dpf or dcf)", typ)
	}
	if inBits < 1 || inBits > 64 {
		return fss.Params{}, badInput("--in-bits %d is outside 1..64", inBits)
	}
	if outBits < 1 || outBits > 64 {
		return fss.Params{}, badInput("--out-bits %d is outside 1..64", outBits)
	}
	return fss.Params{Type: t, InBits: inBits, OutBits: outBits}, nil
}

// parseWord parses an unsigned integer that must fit in bits bits.
func parseWord(flag, s string, bits int) (uint64, error) {
	v, err := strconv.ParseUint(strings.TrimSpace(s), 0, 64)
	if err != nil {
		return 0, badInput("%s %q is not an unsigned 64-bit integer", flag, s)
	}
	if bits < 64 && v>>uint(bits) != 0 {
		return 0, badInput("%s %d does not fit in %d bits (must be below 2^%d)", flag, v, bits, bits)
	}
	return v, nil
}

// parseRoot parses a 16-byte root seed given as 32 hex digits.
func parseRoot(flag, s string) ([16]byte, error) {
	var r [16]byte
	raw, err := hex.DecodeString(s)
	if err != nil {
		return r, badInput("%s is not valid hex: %v", flag, err)
	}
	if len(raw) != 16 {
		return r, badInput("%s must be 32 hex digits (16 bytes), got %d bytes", flag, len(raw))
	}
	copy(r[:], raw)
	return r, nil
}

// distinctRoots refuses two equal root seeds: both keys would then expand
// the same seeds with equal control bits, and their correction words
// would spell out α to anyone holding both shares' difference.
func distinctRoots(r0, r1 [16]byte) error {
	if r0 == r1 {
		return badInput("--root0 and --root1 are equal: the two keys would have equal seeds and equal control bits and would reveal α; give two different roots, or neither (random ones)")
	}
	return nil
}
