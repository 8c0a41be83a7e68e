package main

import (
	"github.com/spf13/cobra"

	"github.com/kord-fss/kord/internal/daemon"
)

func init() { rootCmd.AddCommand(moduleInitCmd()) }

// moduleInitCmd is `kord module-init`: a container's init step for the
// module (deploy/helm/kord runs it as root before kord module starts).
func moduleInitCmd() *cobra.Command {
	var m daemon.ModuleInit
	cmd := &cobra.Command{
		Use:   "module-init --state-dir DIR --uid UID --gid GID [--secret-from FILE --secret-to FILE] [--seal-key-from FILE --seal-key-to FILE]",
		Short: "Prepare a module's state directory (and a private copy of its secret) for the module's own user",
		Long: `kord module-init runs before kord module, as root, where the module's
user cannot prepare its own files (a Kubernetes init container): it creates
--state-dir and gives it to --uid:--gid with mode 0700, as kord module's
checks on its state file's directory want it, and with --secret-from copies
a provisioning secret (a mounted Secret, whose files root owns) to
--secret-to, owned by --uid:--gid, mode 0600, as --secret-file wants it;
--seal-key-from/--seal-key-to copy a seal key (--seal-key-file) alike.
Nothing else is changed; it exits once done.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return daemon.PrepareModule(m)
		},
	}
	f := cmd.Flags()
	f.StringVar(&m.StateDir, "state-dir", "", "the module's state directory (created, owned by --uid:--gid, mode 0700)")
	f.IntVar(&m.UID, "uid", -1, "the module's user id")
	f.IntVar(&m.GID, "gid", -1, "the module's group id")
	f.StringVar(&m.SecretFrom, "secret-from", "", "a provisioning secret file (kord secret new's format) to copy")
	f.StringVar(&m.SecretTo, "secret-to", "", "where the copy goes (owned by --uid:--gid, mode 0600)")
	f.StringVar(&m.SealKeyFrom, "seal-key-from", "", "a seal key file (32 bytes, raw or hex) to copy")
	f.StringVar(&m.SealKeyTo, "seal-key-to", "", "where its copy goes (owned by --uid:--gid, mode 0600)")
	return cmd
}
