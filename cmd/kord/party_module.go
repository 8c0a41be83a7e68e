package main

import (
	"fmt"
	"log/slog"
	"time"

	"github.com/spf13/cobra"

	"github.com/kord-fss/kord/internal/daemon"
	"github.com/kord-fss/kord/module/provision"
	"github.com/kord-fss/kord/module/socket"
	"github.com/kord-fss/kord/module/store"
)

// moduleInProcess is the value of kord party --module that runs the
// software module inside the party's process instead of dialling a module
// process's socket.
const moduleInProcess = "in-process"

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

// openPartyModule returns the party's module: a client of the module
// process's socket, or, with --module in-process, the durable software
// module opened here from the state file. close releases it.
func openPartyModule(modArg string, party int, m daemon.ModuleFiles, timeout time.Duration, level string, log *slog.Logger) (mod socket.Module, close func(), err error) {
	if modArg != moduleInProcess {
		c := socket.Dial(modArg, timeout)
		return c, func() { c.Close() }, nil
	}
	// The party now holds the module's secrets: no core dumps, no tracing
	// by its own user (as kord module does before reading any secret).
	if ok, err := provision.Undumpable(); err != nil {
		log.Warn("could not mark the party undumpable", "err", err)
	} else if !ok {
		log.Info("this OS cannot mark the party undumpable")
	}
	base, err := daemon.Logger(level, "component", "module")
	if err != nil {
		return nil, nil, err
	}
	m.Party = party
	dev, st, err := daemon.OpenDurableModule(m, base, log)
	if err != nil {
		return nil, nil, fmt.Errorf("--module %s: %w", moduleInProcess, err)
	}
	log.Warn("the module runs inside the party process (--module in-process): whoever compromises the party reads the module's secrets (docs/threat-model.md, \"The module inside the party\")",
		"state", m.State, "locked", dev.Locked())
	return socket.Local(dev), func() { st.Close() }, nil
}
