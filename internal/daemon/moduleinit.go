package daemon

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/kord-fss/kord/module/provision"
	"github.com/kord-fss/kord/module/store"
)

// ModuleInit is what `kord module-init` prepares for a module that runs
// as another user (a container's init step, run as root): its state
// directory and, optionally, a private copy of its provisioning secret.
type ModuleInit struct {
	// StateDir is created (with its parents) and given to UID:GID, mode
	// 0700: the state file's directory as the module's checks want it
	// (owned by the module's user, not writable by group or others).
	StateDir string
	UID, GID int
	// SecretFrom, when set, is copied to SecretTo, owned by UID:GID, mode
	// 0600: a mounted secret (whose files root owns) as the module's
	// --secret-file check wants it. It must be in the format of kord
	// secret new.
	SecretFrom, SecretTo string
	// SealKeyFrom, when set, is copied to SealKeyTo the same way: a
	// mounted seal key (32 bytes, raw or hex: --seal-key-file) checked
	// before it is written.
	SealKeyFrom, SealKeyTo string
}

// PrepareModule does what m says. It refuses a state directory or secret
// copy that is a symbolic link, and a secret that does not parse, before
// it writes the copy.
func PrepareModule(m ModuleInit) error {
	if m.StateDir == "" {
		return BadInput("--state-dir is required")
	}
	if m.UID < 0 || m.GID < 0 {
		return BadInput("--uid %d and --gid %d must not be negative", m.UID, m.GID)
	}
	if (m.SecretFrom == "") != (m.SecretTo == "") {
		return BadInput("--secret-from and --secret-to go together")
	}
	if (m.SealKeyFrom == "") != (m.SealKeyTo == "") {
		return BadInput("--seal-key-from and --seal-key-to go together")
	}
	if err := ownDir(m.StateDir, m.UID, m.GID); err != nil {
		return err
	}
	if m.SealKeyFrom != "" {
		if err := copySealKey(m); err != nil {
			return err
		}
	}
	if m.SecretFrom == "" {
		return nil
	}
	text, err := os.ReadFile(m.SecretFrom)
	if err != nil {
		return fmt.Errorf("--secret-from: %w", err)
	}
	s, err := provision.Parse(text)
	clear(text)
	if err != nil {
		return BadInput("--secret-from %s: %v", m.SecretFrom, err)
	}
	enc, err := provision.Encode(s)
	clear(s)
	if err != nil {
		return err
	}
	return writePrivate("--secret-to", m.SecretTo, []byte(enc+"\n"), m.UID, m.GID)
}

// copySealKey copies m.SealKeyFrom to m.SealKeyTo once it parses as a
// seal key.
func copySealKey(m ModuleInit) error {
	b, err := os.ReadFile(m.SealKeyFrom)
	if err != nil {
		return fmt.Errorf("--seal-key-from: %w", err)
	}
	defer clear(b)
	k, err := store.ParseSealKey(b)
	if err != nil {
		return BadInput("--seal-key-from %s: %v", m.SealKeyFrom, err)
	}
	clear(k)
	return writePrivate("--seal-key-to", m.SealKeyTo, b, m.UID, m.GID)
}

// writePrivate writes data to path (not a symbolic link), owned by
// uid:gid, mode 0600, through a temporary file renamed into place; flag
// names path in errors.
func writePrivate(flag, path string, data []byte, uid, gid int) error {
	if st, err := os.Lstat(path); err == nil && st.Mode()&fs.ModeSymlink != 0 {
		return BadInput("%s %s is a symbolic link; give the file itself", flag, path)
	}
	tmp := path + ".tmp"
	os.Remove(tmp)
	f, err := os.OpenFile(tmp, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o600)
	if err != nil {
		return fmt.Errorf("%s: %w", flag, err)
	}
	_, werr := f.Write(data)
	if err := errors.Join(werr, f.Chown(uid, gid), f.Chmod(0o600), f.Close()); err != nil {
		os.Remove(tmp)
		return fmt.Errorf("%s %s: %w", flag, path, err)
	}
	if err := os.Rename(tmp, path); err != nil {
		os.Remove(tmp)
		return fmt.Errorf("%s: %w", flag, err)
	}
	return nil
}

// ownDir makes dir (and its parents) and gives it to uid:gid, mode 0700.
func ownDir(dir string, uid, gid int) error {
	dir = filepath.Clean(dir)
	if st, err := os.Lstat(dir); err == nil && st.Mode()&fs.ModeSymlink != 0 {
		return BadInput("--state-dir %s is a symbolic link; give the directory itself", dir)
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("--state-dir: %w", err)
	}
	st, err := os.Lstat(dir)
	if err != nil {
		return fmt.Errorf("--state-dir: %w", err)
	}
	if !st.IsDir() {
		return BadInput("--state-dir %s is not a directory", dir)
	}
	// Mode first, then owner: once the directory is another user's, root
	// needs CAP_FOWNER to change its mode, and an init container keeps
	// only CAP_CHOWN (and CAP_FOWNER for a directory a previous start gave
	// away).
	if err := os.Chmod(dir, 0o700); err != nil {
		return fmt.Errorf("--state-dir %s: %w", dir, err)
	}
	if err := os.Lchown(dir, uid, gid); err != nil {
		return fmt.Errorf("--state-dir %s: %w", dir, err)
	}
	return nil
}
