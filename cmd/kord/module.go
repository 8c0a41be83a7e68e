package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/kord-fss/kord/internal/daemon"
	"github.com/kord-fss/kord/module"
	"github.com/kord-fss/kord/module/provision"
	"github.com/kord-fss/kord/module/socket"
	"github.com/kord-fss/kord/module/store"
)

func init() { rootCmd.AddCommand(moduleCmd()) }

// moduleSecret returns the provisioning secret from --secret-file or the
// environment KORD_SECRET (both in the format of `kord secret new`), or nil
// if neither is given.
func moduleSecret(file string) ([]byte, error) {
	env, inEnv := os.LookupEnv("KORD_SECRET")
	os.Unsetenv("KORD_SECRET")
	switch {
	case file != "" && inEnv:
		return nil, badInput("give the provisioning secret once: --secret-file or KORD_SECRET, not both")
	case file != "":
		s, err := provision.ReadSecretFile(file)
		if err != nil {
			return nil, badInput("%v", err)
		}
		return s, nil
	case inEnv:
		s, err := provision.Parse([]byte(env))
		if err != nil {
			return nil, badInput("KORD_SECRET: %v", err)
		}
		return s, nil
	}
	return nil, nil
}

// moduleAccess maps --party-uid, --allow-same-uid and
// --allow-unverified-peer to the socket's access rule.
func moduleAccess(uids []string, same, unverified bool) (socket.Access, error) {
	a := socket.Access{SameUID: same, Unverified: unverified}
	for _, u := range uids {
		id, err := socket.LookupUser(strings.TrimSpace(u))
		if err != nil {
			return a, badInput("--party-uid: %v", err)
		}
		a.UIDs = append(a.UIDs, id)
	}
	if len(a.UIDs) == 0 && !same {
		return a, badInput("the module would refuse every host: give --party-uid UID (the user kord party runs as), or --allow-same-uid for a demo or test on one account (no protection from the host)")
	}
	return a, nil
}

// openModuleState opens the state file and the secret it needs: a paired
// state file never reads the provisioning secret (its file may be gone);
// an unpaired one needs it, and a fresh one is created only once the
// secret has been read and checked, so a failed start leaves nothing.
func openModuleState(state, secretFile string, o store.BoltOptions) (*store.Bolt, []byte, error) {
	open := func() (*store.Bolt, error) {
		st, err := store.OpenBoltWith(state, o)
		if errors.Is(err, store.ErrPermissions) || errors.Is(err, store.ErrSeal) {
			return nil, badInput("%v", err)
		}
		return st, err
	}
	var st *store.Bolt
	if _, err := os.Lstat(state); err == nil {
		if st, err = open(); err != nil {
			return nil, nil, err
		}
		p, err := st.LoadPairing()
		if err != nil {
			st.Close()
			return nil, nil, err
		}
		if p != nil {
			clear(p.Secret)
			os.Unsetenv("KORD_SECRET")
			return st, nil, nil
		}
	}
	sec, err := moduleSecret(secretFile)
	if err == nil && sec == nil {
		err = badInput("an unpaired module needs the provisioning secret: --secret-file FILE or KORD_SECRET (make one with `kord secret new --out FILE`)")
	}
	if err == nil && st == nil {
		st, err = open()
	}
	if err != nil {
		clear(sec)
		if st != nil {
			st.Close()
		}
		return nil, nil, err
	}
	return st, sec, nil
}

// moduleFiles are what a durable software module is opened from: the
// flags of kord module, which kord party --module in-process takes too.
type moduleFiles struct {
	party                               int
	state, secretFile, sealKeyFile, kem string
	window                              uint64
	workers                             int
}

// openDurableModule opens the state file (sealed under the seal key file,
// if given) and the durable software module on it; base is the module's
// logger, log this command's. The caller closes the store once done.
func openDurableModule(f moduleFiles, base, log *slog.Logger) (*module.Durable, *store.Bolt, error) {
	bo := store.BoltOptions{Window: f.window}
	if f.sealKeyFile != "" {
		var err error
		if bo.SealKey, err = store.ReadSealKeyFile(f.sealKeyFile); err != nil {
			return nil, nil, badInput("%v", err)
		}
	}
	st, sec, err := openModuleState(f.state, f.secretFile, bo)
	clear(bo.SealKey)
	if err != nil {
		return nil, nil, err
	}
	if sec == nil && f.secretFile != "" {
		log.Info("module is paired: --secret-file is not read and may be removed", "secret_file", f.secretFile)
	}
	dev, err := module.OpenDurable(module.Config{Party: f.party, Secret: sec, KEM: f.kem, Store: st, Logger: base, Workers: f.workers})
	clear(sec)
	if err != nil {
		st.Close()
		if errors.Is(err, module.ErrBadRequest) {
			return nil, nil, badInput("%v", err)
		}
		return nil, nil, err
	}
	return dev, st, nil
}

func moduleCmd() *cobra.Command {
	var (
		party                    int
		sock, state, secret, kem string
		journal, logLvl          string
		window                   uint64
		partyUIDs                []string
		sockGroup, sealKeyFile   string
		sameUID, unverified      bool
		workers                  int
	)
	cmd := &cobra.Command{
		Use:   "module --party B --socket PATH --state FILE --secret-file FILE (--party-uid UID | --allow-same-uid)",
		Short: "Run a key-generation module as its own process, serving its host on a local Unix socket",
		Long: `kord module runs one site's sealed key-generation module. It listens only
on a local Unix socket for its host (kord party): mode 0600, or 0660 with
--socket-group, and it serves only the users it is told to, by the uid the
kernel reports for each connection: --party-uid UID (the user kord party
runs as), or its own uid with --allow-same-uid (demo, CI, tests: a host
under the module's user can read everything the module keeps, so this
protects nothing from the host). See docs/operations.md, "Deployment: the
module under its own user".

It keeps its pairing secret, counters and replay high-water marks in a
bbolt state file; it refuses to start if that file is accessible to group
or others or owned by another user, or if its directory is writable by
group or others. With --seal-key-file the pairing secret in the state file
is sealed (AES-256-GCM) under that key. A module restarted from its state
file is paired but locked: it emits nothing until its host has run the
rollback witness with the peer module (automatic on every party session).

The provisioning secret (the same for both modules of a pair) is needed
only until pairing: --secret-file FILE (mode 0600, owned by the module's
user) or the environment KORD_SECRET, in the form written by
` + "`kord secret new`" + `. A paired module never reads it: remove the file after
pairing. --secret (the secret on the command line, visible in ps) is no
longer accepted.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := daemon.Configure(cmd.Flags()); err != nil {
				return err
			}
			prefault, err := daemon.PrefaultMiB(cmd.Flags())
			if err != nil {
				return err
			}
			logLvl, _ = cmd.Flags().GetString("log-level")
			// The module's engine names its party in each of its own log
			// lines; base goes to it, log (with the party) everywhere else,
			// so no line carries "party" twice.
			base, err := daemon.Logger(logLvl, "component", "module")
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
			if workers < 0 {
				return badInput("--workers %d: want 0 (all cores) or more", workers)
			}
			access, err := moduleAccess(partyUIDs, sameUID, unverified)
			if err != nil {
				return err
			}
			if unverified && socket.PeerCredSupported {
				log.Warn("--allow-unverified-peer has no effect here: this OS reports peer credentials, and they are checked")
			}
			gid := -1
			if sockGroup != "" {
				if gid, err = socket.LookupGroup(sockGroup); err != nil {
					return badInput("--socket-group: %v", err)
				}
			}
			// Before any secret is read: no core dumps, no tracing by the
			// module's own user without CAP_SYS_PTRACE.
			if ok, err := provision.Undumpable(); err != nil {
				log.Warn("could not mark the module undumpable", "err", err)
			} else if !ok {
				log.Info("this OS cannot mark the module undumpable: run it under its own user")
			}
			dev, st, err := openDurableModule(moduleFiles{party: party, state: state, secretFile: secret,
				sealKeyFile: sealKeyFile, kem: kem, window: window, workers: workers}, base, log)
			if err != nil {
				return err
			}
			defer st.Close()
			opts := socket.ServerOptions{Logger: log, Access: access}
			if journal != "" {
				f, err := os.OpenFile(journal, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o600)
				if err != nil {
					return err
				}
				defer f.Close()
				opts.Journal = f
			}
			listen := socket.Listen
			if gid >= 0 {
				listen = func(p string) (net.Listener, error) { return socket.ListenGroup(p, gid) }
			}
			l, err := listen(sock)
			if err != nil {
				return err
			}
			ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			defer daemon.StartProcess(fmt.Sprintf("module%d", party), prefault)()
			context.AfterFunc(ctx, func() { l.Close() })
			log.Info("module listening", "socket", sock, "state", state, "locked", dev.Locked())
			daemon.Ready(cmd.OutOrStdout(), "socket", sock, "pid", os.Getpid())
			if err := socket.NewServer(dev, opts).Serve(l); err != nil {
				return fmt.Errorf("module: %w", err)
			}
			os.Remove(sock)
			return nil
		},
	}
	f := cmd.Flags()
	f.IntVar(&party, "party", 0, "this module's party: 0 or 1")
	f.StringVar(&sock, "socket", "", "Unix socket path to serve the host on (created mode 0600, or 0660 with --socket-group)")
	f.StringVar(&sockGroup, "socket-group", "", "give the socket this group (NAME or GID) and mode 0660, for a party under another user in that group")
	f.StringSliceVar(&partyUIDs, "party-uid", nil, "user (NAME or UID) the host, kord party, runs as; only these may connect (repeatable or comma-separated; root too must be listed)")
	f.BoolVar(&sameUID, "allow-same-uid", false, "also serve hosts under the module's own uid (demo, CI, tests: no protection from the host)")
	f.BoolVar(&unverified, "allow-unverified-peer", false, "where the OS reports no peer credentials, serve any peer that can open the socket")
	f.StringVar(&state, "state", "", "bbolt state file (pairing secret, counters; created mode 0600, owned by the module's user, in a directory not writable by group or others)")
	f.StringVar(&secret, "secret-file", "", "provisioning secret file as written by kord secret new (mode 0600, owned by the module's user; not read once paired); or the environment KORD_SECRET")
	f.StringVar(&sealKeyFile, "seal-key-file", "", "seal the pairing secret in the state file under this 32-byte key (raw or hex, mode 0600), e.g. written by a KMS or TPM unseal step")
	f.StringVar(&kem, "kem", "", "pairing KEM: "+strings.Join(module.KEMs(), ", ")+" (default mlkem768)")
	f.Uint64Var(&window, "window", store.DefaultWindow, "counters reserved per state-file commit (1 = commit every change)")
	f.IntVar(&workers, "workers", 0, "goroutines each batch of key generation runs on (0 = all cores, GOMAXPROCS)")
	f.StringVar(&journal, "journal", "", "testing: append every keystream position (own counter) used to this file")
	daemon.CommonFlags(cmd.Flags())
	daemon.PrefaultFlag(cmd.Flags())
	cmd.SetFlagErrorFunc(func(_ *cobra.Command, err error) error {
		if strings.HasPrefix(err.Error(), "unknown flag: --secret") && !strings.HasPrefix(err.Error(), "unknown flag: --secret-") {
			return badInput("--secret is no longer accepted: it is visible in ps; use --secret-file FILE or the environment KORD_SECRET")
		}
		return usageError{Err: err}
	})
	return cmd
}
