package daemon

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kord-fss/kord/module/provision"
	"github.com/kord-fss/kord/module/store"
)

// TestPrepareModule: a state directory that was group- and
// world-writable (as a fresh volume or an emptyDir can be) and a secret
// readable by all come out as the module's own checks want them: the bolt
// store opens a state file there, and the secret copy reads as the same
// secret through --secret-file's check.
func TestPrepareModule(t *testing.T) {
	root := t.TempDir()
	vol := filepath.Join(root, "vol")
	if err := os.Mkdir(vol, 0o777); err != nil {
		t.Fatal(err)
	}
	os.Chmod(vol, 0o777)
	stateDir := filepath.Join(vol, "state")
	if err := os.Mkdir(stateDir, 0o777); err != nil {
		t.Fatal(err)
	}
	os.Chmod(stateDir, 0o777)
	if _, err := store.OpenBolt(filepath.Join(stateDir, "m.db"), 0); !errors.Is(err, store.ErrPermissions) {
		t.Fatalf("the store opened in a world-writable directory: %v", err)
	}
	secret := provision.New()
	text, _ := provision.Encode(secret)
	from := filepath.Join(root, "pair-0")
	if err := os.WriteFile(from, []byte(text+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	to := filepath.Join(vol, "secret")
	seal := bytes.Repeat([]byte{7}, store.SealKeySize)
	sealFrom, sealTo := filepath.Join(root, "seal.key"), filepath.Join(vol, "seal.key")
	if err := os.WriteFile(sealFrom, seal, 0o444); err != nil {
		t.Fatal(err)
	}
	if err := PrepareModule(ModuleInit{StateDir: stateDir, UID: os.Geteuid(), GID: os.Getegid(), SecretFrom: from, SecretTo: to,
		SealKeyFrom: sealFrom, SealKeyTo: sealTo}); err != nil {
		t.Fatal(err)
	}
	if k, err := store.ReadSealKeyFile(sealTo); err != nil || !bytes.Equal(k, seal) {
		t.Fatalf("seal key copy: %v (equal %v)", err, bytes.Equal(k, seal))
	}
	st, err := os.Stat(stateDir)
	if err != nil || st.Mode().Perm() != 0o700 {
		t.Fatalf("state dir: %v %v", st.Mode(), err)
	}
	b, err := store.OpenBolt(filepath.Join(stateDir, "m.db"), 0)
	if err != nil {
		t.Fatalf("the store refuses the prepared directory: %v", err)
	}
	b.Close()
	got, err := provision.ReadSecretFile(to)
	if err != nil || !bytes.Equal(got, secret) {
		t.Fatalf("secret copy: %v (equal %v)", err, bytes.Equal(got, secret))
	}
	// Run again (a restarted pod): the same result, the state file kept.
	if err := PrepareModule(ModuleInit{StateDir: stateDir, UID: os.Geteuid(), GID: os.Getegid(), SecretFrom: from, SecretTo: to}); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(stateDir, "m.db")); err != nil {
		t.Fatal(err)
	}
}

// TestPrepareModuleBadInput: each bad input is refused, naming it, before
// anything is written.
func TestPrepareModuleBadInput(t *testing.T) {
	root := t.TempDir()
	link := filepath.Join(root, "link")
	os.Symlink(root, link)
	bad := filepath.Join(root, "bad")
	os.WriteFile(bad, []byte("not a secret\n"), 0o600)
	me, gid := os.Geteuid(), os.Getegid()
	for _, c := range []struct {
		m    ModuleInit
		want string
	}{
		{ModuleInit{UID: me, GID: gid}, "--state-dir is required"},
		{ModuleInit{StateDir: root, UID: -1, GID: gid}, "must not be negative"},
		{ModuleInit{StateDir: root, UID: me, GID: gid, SecretFrom: bad}, "go together"},
		{ModuleInit{StateDir: link, UID: me, GID: gid}, "symbolic link"},
		{ModuleInit{StateDir: filepath.Join(root, "s"), UID: me, GID: gid, SecretFrom: bad, SecretTo: filepath.Join(root, "out")}, "--secret-from " + bad},
		{ModuleInit{StateDir: root, UID: me, GID: gid, SealKeyFrom: bad}, "--seal-key-from and --seal-key-to go together"},
		{ModuleInit{StateDir: filepath.Join(root, "s"), UID: me, GID: gid, SealKeyFrom: bad, SealKeyTo: filepath.Join(root, "out")}, "--seal-key-from " + bad},
	} {
		err := PrepareModule(c.m)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: %v, want %q", c.m, err, c.want)
		}
	}
	if _, err := os.Stat(filepath.Join(root, "out")); err == nil {
		t.Error("a bad secret was copied")
	}
}
