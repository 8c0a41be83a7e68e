package main

import (
	"crypto/rand"
	"errors"
	"os"

	"github.com/kord-fss/kord/ntru"
	"github.com/spf13/cobra"
)

// The ntru command group: NTRUEncrypt-SVES key generation, encryption and
// decryption on binary files, in the reference key-blob format.

var ntruCmd = &cobra.Command{
	Use:   "ntru",
	Short: "NTRUEncrypt-SVES (IEEE 1363.1) keys, encryption and decryption",
}

var ntruKeygenCmd = &cobra.Command{
	Use:   "keygen --set ees1087ep1|ees1499ep1 --pub FILE --priv FILE",
	Short: "Generate a key pair and write the public and private key blobs",
	Args:  cobra.NoArgs,
	RunE:  runNtruKeygen,
}

var ntruEncryptCmd = &cobra.Command{
	Use:   "encrypt --key PUB --in FILE --out FILE",
	Short: "Encrypt a short file (at most 178 or 247 bytes) to a public key",
	Args:  cobra.NoArgs,
	RunE:  runNtruEncrypt,
}

var ntruDecryptCmd = &cobra.Command{
	Use:   "decrypt --key PRIV --in FILE --out FILE",
	Short: "Decrypt a ciphertext with a private key",
	Args:  cobra.NoArgs,
	RunE:  runNtruDecrypt,
}

func init() {
	ntruKeygenCmd.Flags().String("set", "ees1087ep1", "parameter set: ees1087ep1 or ees1499ep1")
	ntruKeygenCmd.Flags().String("pub", "", "output file for the public key blob")
	ntruKeygenCmd.Flags().String("priv", "", "output file for the private key blob")
	ntruKeygenCmd.Flags().Bool("force", false, "replace --pub and --priv if they exist")
	for _, c := range []*cobra.Command{ntruEncryptCmd, ntruDecryptCmd} {
		c.Flags().String("key", "", "key blob file")
		c.Flags().String("in", "", "input file")
		c.Flags().String("out", "", "output file")
		for _, f := range []string{"key", "in", "out"} {
			_ = c.MarkFlagRequired(f)
		}
	}
	for _, f := range []string{"pub", "priv"} {
		_ = ntruKeygenCmd.MarkFlagRequired(f)
	}
	ntruCmd.AddCommand(ntruKeygenCmd, ntruEncryptCmd, ntruDecryptCmd)
	rootCmd.AddCommand(ntruCmd)
}

func runNtruKeygen(cmd *cobra.Command, _ []string) error {
	name, _ := cmd.Flags().GetString("set")
	pubPath, _ := cmd.Flags().GetString("pub")
	privPath, _ := cmd.Flags().GetString("priv")
	set, err := ntru.ParamSetByName(name)
	if err != nil {
		return badInput("%v", err)
	}
	key, err := ntru.GenerateKey(rand.Reader, set)
	if err != nil {
		return err
	}
	force, _ := cmd.Flags().GetBool("force")
	// Neither file is replaced unless asked: a private key overwritten is
	// every ciphertext to it lost.
	for _, p := range []string{privPath, pubPath} {
		if _, err := os.Lstat(p); err == nil && !force {
			return badInput("%s already exists: keygen overwrites no key (give another path, or --force)", p)
		}
	}
	pub, _ := key.Public().MarshalBinary()
	priv, _ := key.MarshalBinary()
	if err := os.WriteFile(privPath, priv, 0o600); err != nil {
		return badInput("writing private key: %v", err)
	}
	if err := os.WriteFile(pubPath, pub, 0o644); err != nil {
		return badInput("writing public key: %v", err)
	}
	return nil
}

func runNtruEncrypt(cmd *cobra.Command, _ []string) error {
	pub, msg, outPath, err := ntruInputs(cmd, "public key", ntru.ParsePublicKey)
	if err != nil {
		return err
	}
	ct, err := pub.Encrypt(rand.Reader, msg)
	if errors.Is(err, ntru.ErrMessageTooLong) {
		return badInput("%v", err)
	}
	if err != nil {
		return err
	}
	if err := os.WriteFile(outPath, ct, 0o644); err != nil {
		return badInput("writing output: %v", err)
	}
	return nil
}

func runNtruDecrypt(cmd *cobra.Command, _ []string) error {
	key, ct, outPath, err := ntruInputs(cmd, "private key", ntru.ParsePrivateKey)
	if err != nil {
		return err
	}
	msg, err := key.Decrypt(ct)
	if err != nil {
		return badInput("%v (wrong key, or a corrupt or truncated ciphertext)", err)
	}
	if err := os.WriteFile(outPath, msg, 0o600); err != nil {
		return badInput("writing output: %v", err)
	}
	return nil
}

// ntruInputs reads and parses --key (what: "public key" or "private key")
// and reads --in; it returns them with --out.
func ntruInputs[K any](cmd *cobra.Command, what string, parse func([]byte) (K, error)) (key K, in []byte, outPath string, err error) {
	keyPath, _ := cmd.Flags().GetString("key")
	inPath, _ := cmd.Flags().GetString("in")
	outPath, _ = cmd.Flags().GetString("out")
	blob, err := os.ReadFile(keyPath)
	if err != nil {
		return key, nil, "", badInput("reading %s: %v", what, err)
	}
	if key, err = parse(blob); err != nil {
		return key, nil, "", badInput("%s %s: %v", what, keyPath, err)
	}
	if in, err = os.ReadFile(inPath); err != nil {
		return key, nil, "", badInput("reading input: %v", err)
	}
	return key, in, outPath, nil
}
