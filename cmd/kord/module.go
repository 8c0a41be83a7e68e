package main

import (
	"context"
	"strings"

	"github.com/spf13/cobra"

	"github.com/kord-fss/kord/cmd/kord/internal/serve"
	"github.com/kord-fss/kord/internal/daemon"
	"github.com/kord-fss/kord/module"
	"github.com/kord-fss/kord/module/store"
)

func init() { rootCmd.AddCommand(moduleCmd()) }

func moduleCmd() *cobra.Command {
	var (
		party                    int
		sock, state, secret, kem string
		journal                  string
		window                   uint64
		partyUIDs                []string
		sockGroup, sealKeyFile   string
		sameUID, unverified      bool
		rmSecret                 bool
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
pairing, or let the module do it with --remove-secret-after-pairing.
--secret (the secret on the command line, visible in ps) is no
longer accepted.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			common, err := readPartyDaemon(cmd, party)
			if err != nil {
				return err
			}
			if sock == "" || state == "" {
				return badInput("--socket and --state are required")
			}
			if workers < 0 {
				return badInput("--workers %d: want 0 (all cores) or more", workers)
			}
			return serve.Module(context.Background(), serve.ModuleConfig{
				Files: daemon.ModuleFiles{Party: party, State: state, SecretFile: secret,
					SealKeyFile: sealKeyFile, KEM: kem, Window: window, Workers: workers},
				RemoveSecretAfterPairing: rmSecret,
				Socket:                   sock, SocketGroup: sockGroup, PartyUIDs: partyUIDs, AllowSameUID: sameUID, AllowUnverified: unverified,
				Journal: journal, LogLevel: common.LogLevel, PrefaultMiB: common.PrefaultMiB, Out: cmd.OutOrStdout()})
		},
	}
	f := cmd.Flags()
	f.IntVar(&party, "party", 0, "this module's party: 0 or 1 (required)")
	f.StringVar(&sock, "socket", "", "Unix socket path to serve the host on (created mode 0600, or 0660 with --socket-group)")
	f.StringVar(&sockGroup, "socket-group", "", "give the socket this group (NAME or GID) and mode 0660, for a party under another user in that group")
	f.StringSliceVar(&partyUIDs, "party-uid", nil, "user (NAME or UID) the host, kord party, runs as; only these may connect (repeatable or comma-separated; root too must be listed)")
	f.BoolVar(&sameUID, "allow-same-uid", false, "also serve hosts under the module's own uid (demo, CI, tests: no protection from the host)")
	f.BoolVar(&unverified, "allow-unverified-peer", false, "where the OS reports no peer credentials, serve any peer that can open the socket")
	f.StringVar(&state, "state", "", "bbolt state file (pairing secret, counters; created mode 0600, owned by the module's user, in a directory not writable by group or others)")
	f.StringVar(&secret, "secret-file", "", "provisioning secret file as written by kord secret new (mode 0600, owned by the module's user; not read once paired); or the environment KORD_SECRET")
	f.BoolVar(&rmSecret, "remove-secret-after-pairing", false, "delete --secret-file once the module is paired (at once if it already is); for a copy of the secret on a tmpfs")
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
