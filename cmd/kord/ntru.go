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
	pub, _ := key.Public().MarshalBinary()
	priv, _ := key.MarshalBinary()
	if err := os.WriteFile(pubPath, pub, 0o644); err != nil {
		return badInput("writing public key: %v", err)
	}
	if err := os.WriteFile(privPath, priv, 0o600); err != nil {
		return badInput("writing private key: %v", err)
	}
	return nil
}

func runNtruEncrypt(cmd *cobra.Command, _ []string) error {
	keyPath, inPath, outPath := ntruPaths(cmd)
	blob, err := os.ReadFile(keyPath)
	if err != nil {
		return badInput("reading public key: %v", err)
	}
	pub, err := ntru.ParsePublicKey(blob)
	if err != nil {
		return badInput("public key %s: %v", keyPath, err)
	}
	msg, err := os.ReadFile(inPath)
	if err != nil {
		return badInput("reading input: %v", err)
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
	keyPath, inPath, outPath := ntruPaths(cmd)
	blob, err := os.ReadFile(keyPath)
	if err != nil {
		return badInput("reading private key: %v", err)
	}
	key, err := ntru.ParsePrivateKey(blob)
	if err != nil {
		return badInput("private key %s: %v", keyPath, err)
	}
	ct, err := os.ReadFile(inPath)
	if err != nil {
		return badInput("reading input: %v", err)
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

func ntruPaths(cmd *cobra.Command) (key, in, out string) {
	key, _ = cmd.Flags().GetString("key")
	in, _ = cmd.Flags().GetString("in")
	out, _ = cmd.Flags().GetString("out")
	return key, in, out
}
