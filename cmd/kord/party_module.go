package main

import (
	"github.com/spf13/cobra"

	"github.com/kord-fss/kord/cmd/kord/internal/serve"
	"github.com/kord-fss/kord/internal/daemon"
	"github.com/kord-fss/kord/module/store"
)

// moduleInProcess is the value of kord party --module that runs the
// software module inside the party's process instead of dialling a module
// process's socket.
const moduleInProcess = serve.ModuleInProcess

// partyModuleFlags are the flags of kord module that kord party takes for
// --module in-process, with the same names and meanings.
var partyModuleFlags = []string{"state", "secret-file", "seal-key-file", "kem", "window"}

// addPartyModuleFlags adds partyModuleFlags to the party command.
func addPartyModuleFlags(cmd *cobra.Command, m *daemon.ModuleFiles) {
	f := cmd.Flags()
	f.StringVar(&m.State, "state", "", "--module in-process: the module's bbolt state file, as kord module --state")
	f.StringVar(&m.SecretFile, "secret-file", "", "--module in-process: provisioning secret file, as kord module --secret-file (or the environment KORD_SECRET; not read once paired)")
	f.StringVar(&m.SealKeyFile, "seal-key-file", "", "--module in-process: seal the pairing secret in the state file under this key, as kord module --seal-key-file")
	f.StringVar(&m.KEM, "kem", "", "--module in-process: pairing KEM, as kord module --kem")
	f.Uint64Var(&m.Window, "window", store.DefaultWindow, "--module in-process: counters reserved per state-file commit, as kord module --window")
}

// readPartyDaemon reads the flags every daemon shares (daemon.ReadCommon)
// and checks --party, for the two daemons of a site: kord module and kord
// party.
func readPartyDaemon(cmd *cobra.Command, party int) (daemon.Common, error) {
	common, err := daemon.ReadCommon(cmd.Flags())
	if err != nil {
		return common, err
	}
	if !cmd.Flags().Changed("party") {
		return common, badInput("--party is required: 0 or 1, this site's party (party 0 dials the peer and starts pairing; each site's module and party take the same --party)")
	}
	if party != 0 && party != 1 {
		return common, badInput("--party %d: want 0 or 1", party)
	}
	return common, nil
}

// checkPartyModule checks --module and the module flags that go with it.
func checkPartyModule(cmd *cobra.Command, modArg string, m daemon.ModuleFiles) error {
	if modArg != moduleInProcess {
		for _, name := range partyModuleFlags {
			if cmd.Flags().Changed(name) {
				return badInput("--%s is for --module %s: a module process takes it itself (kord module --%s)", name, moduleInProcess, name)
			}
		}
		return nil
	}
	if m.State == "" {
		return badInput("--module %s needs --state FILE: the module's state file, as kord module takes it", moduleInProcess)
	}
	if m.Window < 1 {
		return badInput("--window %d must be at least 1", m.Window)
	}
	return checkKEM(m.KEM)
}
