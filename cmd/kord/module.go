package main

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/kord-fss/kord/module"
	"github.com/kord-fss/kord/module/socket"
	"github.com/kord-fss/kord/module/store"
)

func init() { rootCmd.AddCommand(moduleCmd()) }

// minSecret is the shortest provisioning secret a module accepts
// (module/internal/pairing.MinSecret, which this package cannot import).
const minSecret = 16

// readSecret reads the provisioning secret from a file (hex or raw bytes;
// the file must not be accessible to group or others).
func readSecret(path string) ([]byte, error) {
	st, err := os.Stat(path)
	if err != nil {
		return nil, badInput("--secret-file: %v", err)
	}
	if st.Mode().Perm()&0o077 != 0 {
		return nil, badInput("--secret-file %s is %v; it must be readable by its owner only (chmod 600)", path, st.Mode().Perm())
	}
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, badInput("--secret-file: %v", err)
	}
	if h, err := hex.DecodeString(strings.TrimSpace(string(raw))); err == nil {
		clear(raw)
		return h, nil
	}
	return raw, nil
}

func moduleCmd() *cobra.Command {
	var (
		party                      int
		sock, state, secret, kem   string
		secretHex, journal, logLvl string
		window                     uint64
	)
	cmd := &cobra.Command{
		Use:   "module --party B --socket PATH --state FILE --secret-file FILE",
		Short: "Run a key-generation module as its own process, serving its host on a local Unix socket",
		Long: `kord module runs one site's sealed key-generation module. It listens only
on a local Unix socket (mode 0600) for its host (kord party), and keeps its
pairing secret, counters and replay high-water marks in a bbolt state file
(mode 0600); it refuses to start if that file is readable or writable by
group or others. A module restarted from its state file is paired but
locked: it emits nothing until its host has run the rollback witness with
the peer module (automatic on every party session).

The provisioning secret (the same for both modules of a pair, at least 16
bytes) is needed for pairing: --secret-file (hex or raw, mode 0600) or the
environment KORD_SECRET (hex).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := svcConfigure(cmd); err != nil {
				return err
			}
			prefault, err := svcPrefaultMiB(cmd)
			if err != nil {
				return err
			}
			logLvl, _ = cmd.Flags().GetString("log-level")
			// The module's engine names its party in each of its own log
			// lines; base goes to it, log (with the party) everywhere else,
			// so no line carries "party" twice.
			base, err := svcLogger(logLvl, "component", "module")
			if err != nil {
				return err
			}
			log := base.With("party", party)
			if party != 0 && party != 1 {
				return badInput("--party %d: want 0 or 1", party)
			}
			if sock == "" || state == "" {
				return badInput("--socket and --state are required")
			}
			var sec []byte
			switch {
			case secret != "":
				if sec, err = readSecret(secret); err != nil {
					return err
				}
			case secretHex != "":
				if sec, err = hex.DecodeString(secretHex); err != nil {
					return badInput("--secret / KORD_SECRET: not hex")
				}
			}
			// An unpaired module needs the secret; refuse a short one before
			// the state file is created, so a failed start leaves nothing.
			if _, err := os.Stat(state); errors.Is(err, os.ErrNotExist) && len(sec) < minSecret {
				n := len(sec)
				clear(sec)
				if n == 0 {
					return badInput("an unpaired module needs the provisioning secret: --secret-file FILE or KORD_SECRET (hex, at least %d bytes)", minSecret)
				}
				return badInput("provisioning secret is %d bytes (a hex file counts its decoded bytes), want at least %d", n, minSecret)
			}
			st, err := store.OpenBolt(state, window)
			if errors.Is(err, store.ErrPermissions) {
				return badInput("%v", err)
			}
			if err != nil {
				return err
			}
			defer st.Close()
			dev, err := module.OpenDurable(module.Config{Party: party, Secret: sec, KEM: kem, Store: st, Logger: base})
			clear(sec)
			if errors.Is(err, module.ErrBadRequest) {
				return badInput("%v", err)
			}
			if err != nil {
				return err
			}
			opts := socket.ServerOptions{Logger: log}
			if journal != "" {
				f, err := os.OpenFile(journal, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o600)
				if err != nil {
					return err
				}
				defer f.Close()
				opts.Journal = f
			}
			l, err := socket.Listen(sock)
			if err != nil {
				return err
			}
			ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			defer svcStartProcess(fmt.Sprintf("module%d", party), prefault)()
			context.AfterFunc(ctx, func() { l.Close() })
			log.Info("module listening", "socket", sock, "state", state, "locked", dev.Locked())
			svcReady(cmd, "socket", sock, "pid", os.Getpid())
			if err := socket.NewServer(dev, opts).Serve(l); err != nil {
				return fmt.Errorf("module: %w", err)
			}
			os.Remove(sock)
			return nil
		},
	}
	f := cmd.Flags()
	f.IntVar(&party, "party", 0, "this module's party: 0 or 1")
	f.StringVar(&sock, "socket", "", "Unix socket path to serve the host on (created mode 0600)")
	f.StringVar(&state, "state", "", "bbolt state file (pairing secret, counters; created mode 0600)")
	f.StringVar(&secret, "secret-file", "", "provisioning secret file (hex or raw, mode 0600)")
	f.StringVar(&secretHex, "secret", "", "provisioning secret in hex (prefer the environment KORD_SECRET or --secret-file)")
	f.StringVar(&kem, "kem", "", "pairing KEM: "+strings.Join(module.KEMs(), ", ")+" (default mlkem768)")
	f.Uint64Var(&window, "window", store.DefaultWindow, "counters reserved per state-file commit (1 = commit every change)")
	f.StringVar(&journal, "journal", "", "testing: append every keystream position (own counter) used to this file")
	svcCommonFlags(cmd)
	svcPrefaultFlag(cmd)
	return cmd
}
