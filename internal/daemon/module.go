package daemon

import (
	"errors"
	"log/slog"
	"os"
	"strings"

	"github.com/kord-fss/kord/module"
	"github.com/kord-fss/kord/module/provision"
	"github.com/kord-fss/kord/module/socket"
	"github.com/kord-fss/kord/module/store"
)

// moduleSecret returns the provisioning secret from --secret-file or the
// environment KORD_SECRET (both in the format of `kord secret new`), or nil
// if neither is given.
func moduleSecret(file string) ([]byte, error) {
	env, inEnv := os.LookupEnv("KORD_SECRET")
	os.Unsetenv("KORD_SECRET")
	switch {
	case file != "" && inEnv:
		return nil, BadInput("give the provisioning secret once: --secret-file or KORD_SECRET, not both")
	case file != "":
		s, err := provision.ReadSecretFile(file)
		if err != nil {
			return nil, BadInput("%v", err)
		}
		return s, nil
	case inEnv:
		s, err := provision.Parse([]byte(env))
		if err != nil {
			return nil, BadInput("KORD_SECRET: %v", err)
		}
		return s, nil
	}
	return nil, nil
}

// ModuleAccess maps --party-uid, --allow-same-uid and
// --allow-unverified-peer to the socket's access rule.
func ModuleAccess(uids []string, same, unverified bool) (socket.Access, error) {
	a := socket.Access{SameUID: same, Unverified: unverified}
	for _, u := range uids {
		id, err := socket.LookupUser(strings.TrimSpace(u))
		if err != nil {
			return a, BadInput("--party-uid: %v", err)
		}
		a.UIDs = append(a.UIDs, id)
	}
	if len(a.UIDs) == 0 && !same {
		return a, BadInput("the module would refuse every host: give --party-uid UID (the user kord party runs as), or --allow-same-uid for a demo or test on one account (no protection from the host)")
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
		if errors.Is(err, store.ErrPermissions) || errors.Is(err, store.ErrSeal) || errors.Is(err, store.ErrInUse) {
			return nil, BadInput("%v", err)
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
		err = BadInput("an unpaired module needs the provisioning secret: --secret-file FILE or KORD_SECRET (make one with `kord secret new --out FILE`)")
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

// ModuleFiles are what a durable software module is opened from: the
// flags of kord module, which kord party --module in-process takes too.
type ModuleFiles struct {
	Party                               int
	State, SecretFile, SealKeyFile, KEM string
	Window                              uint64
	Workers                             int
}

// OpenDurableModule opens the state file (sealed under the seal key file,
// if given) and the durable software module on it; base is the module's
// logger, log this command's. The caller closes the store once done.
func OpenDurableModule(f ModuleFiles, base, log *slog.Logger) (*module.Durable, *store.Bolt, error) {
	bo := store.BoltOptions{Window: f.Window}
	if f.SealKeyFile != "" {
		var err error
		if bo.SealKey, err = store.ReadSealKeyFile(f.SealKeyFile); err != nil {
			return nil, nil, BadInput("%v", err)
		}
	}
	st, sec, err := openModuleState(f.State, f.SecretFile, bo)
	clear(bo.SealKey)
	if err != nil {
		return nil, nil, err
	}
	if sec == nil && f.SecretFile != "" {
		log.Info("module is paired: --secret-file is not read and may be removed", "secret_file", f.SecretFile)
	}
	dev, err := module.OpenDurable(module.Config{Party: f.Party, Secret: sec, KEM: f.KEM, Store: st, Logger: base, Workers: f.Workers})
	clear(sec)
	if err != nil {
		st.Close()
		if errors.Is(err, module.ErrBadRequest) {
			return nil, nil, BadInput("%v", err)
		}
		return nil, nil, err
	}
	return dev, st, nil
}
