package main

import (
	"context"
	"errors"
	mrand "math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/kord-fss/kord/cmd/kord/internal/cluster"
	"github.com/kord-fss/kord/cmd/kord/internal/loadgen"
	"github.com/kord-fss/kord/fss"
	"github.com/kord-fss/kord/module/msg"
	"github.com/kord-fss/kord/module/provision"
	"github.com/kord-fss/kord/module/socket"
	"github.com/kord-fss/kord/module/store"
)

// TestModuleBadSecret: a missing or malformed provisioning secret, or the
// retired --secret flag, is a one-line error with exit 2 that names the
// problem (and never repeats the secret), and a failed start leaves no
// state file behind (so the next start with a good secret is not met by a
// half-made one).
func TestModuleBadSecret(t *testing.T) {
	dir := t.TempDir()
	hexFile := filepath.Join(dir, "hex")
	if err := os.WriteFile(hexFile, []byte("00112233445566778899aabbccddeeff\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	good := filepath.Join(dir, "good")
	if _, stderr, code := runKord(t, "secret", "new", "--out", good); code != 0 {
		t.Fatalf("kord secret new: exit %d %s", code, stderr)
	}
	text, _ := os.ReadFile(good)
	typo := []byte(strings.TrimSpace(string(text)))
	if typo[20] == 'a' {
		typo[20] = 'b'
	} else {
		typo[20] = 'a'
	}
	state := filepath.Join(dir, "m.db")
	base := []string{"module", "--party", "0", "--socket", filepath.Join(dir, "m.sock"), "--state", state, "--allow-same-uid"}
	for _, c := range []struct {
		extra []string
		env   string
		want  string
	}{
		{nil, "", "needs the provisioning secret"},
		{[]string{"--secret-file", hexFile}, "", "kord secret new"},
		{[]string{"--secret", "00112233445566778899aabbccddeeff"}, "", "--secret is no longer accepted: it is visible in ps"},
		{[]string{"--secret=00112233445566778899aabbccddeeff"}, "", "--secret is no longer accepted"},
		{nil, "00112233445566778899aabbccddeeff", "KORD_SECRET"},
		{nil, string(typo), "checksum mismatch"},
		{[]string{"--secret-file", good}, string(text), "not both"},
		{[]string{"--secret-file", good, "--party-uid", "nosuchuser-kord"}, "", "--party-uid"},
	} {
		args := append(append([]string{}, base...), c.extra...)
		if slices.Contains(c.extra, "--party-uid") {
			args = slices.DeleteFunc(args, func(a string) bool { return a == "--allow-same-uid" })
		}
		stdout, stderr, code := runKordEnv(t, c.env, args...)
		if code != 2 || !strings.Contains(stderr, c.want) || strings.Count(strings.TrimSpace(stderr), "\n") != 0 {
			t.Errorf("%v %q: exit %d, stderr %q; want exit 2 and one line with %q", c.extra, c.env, code, stderr, c.want)
		}
		if strings.Contains(stdout+stderr, "0011223344") || len(typo) > 0 && strings.Contains(stderr, string(typo[9:30])) {
			t.Errorf("%v: the error repeats the secret: %q", c.extra, stderr)
		}
		if _, err := os.Stat(state); !os.IsNotExist(err) {
			t.Fatalf("%v: the failed start left %s behind (%v)", c.extra, state, err)
		}
	}
	// Neither --party-uid nor --allow-same-uid: a module that would
	// refuse every host does not start.
	_, stderr, code := runKord(t, "module", "--party", "0", "--socket", filepath.Join(dir, "m.sock"), "--state", state, "--secret-file", good)
	if code != 2 || !strings.Contains(stderr, "--party-uid") || !strings.Contains(stderr, "--allow-same-uid") {
		t.Errorf("no access rule: exit %d, %q", code, stderr)
	}
}

// runKordEnv is runKord with KORD_SECRET set to env (unset if "").
func runKordEnv(t testing.TB, env string, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	if env == "" {
		return runKord(t, args...)
	}
	t.Setenv("KORD_SECRET", env)
	defer os.Unsetenv("KORD_SECRET")
	return runKord(t, args...)
}

// TestSecretNew: kord secret new writes a fresh secret in the checked
// format, to a new 0600 file that it never overwrites, or to stdout.
func TestSecretNew(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, "s")
	if _, stderr, code := runKord(t, "secret", "new", "--out", out); code != 0 {
		t.Fatalf("exit %d %s", code, stderr)
	}
	st, err := os.Stat(out)
	if err != nil || st.Mode().Perm() != 0o600 {
		t.Fatalf("secret file: %v %v", st, err)
	}
	first, _ := os.ReadFile(out)
	if _, err := provision.Parse(first); err != nil {
		t.Fatalf("kord secret new wrote something kord module would refuse: %v", err)
	}
	if _, stderr, code := runKord(t, "secret", "new", "--out", out); code != 2 || !strings.Contains(stderr, "exists") {
		t.Fatalf("overwrite: exit %d %s", code, stderr)
	}
	if again, _ := os.ReadFile(out); string(again) != string(first) {
		t.Fatal("the refused overwrite changed the file")
	}
	stdout, _, code := runKord(t, "secret", "new")
	if code != 0 || strings.TrimSpace(stdout) == strings.TrimSpace(string(first)) {
		t.Fatalf("stdout: exit %d, %q", code, stdout)
	}
	if _, err := provision.Parse([]byte(stdout)); err != nil {
		t.Fatal(err)
	}
}

// TestModuleRefusesOtherUIDs: a module told to serve only another uid
// refuses this one (the test's, which is also the module's) over its
// socket, and logs the refusal with the peer's uid.
func TestModuleRefusesOtherUIDs(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	dir := t.TempDir()
	secret := filepath.Join(dir, "secret")
	if _, stderr, code := runKord(t, "secret", "new", "--out", secret); code != 0 {
		t.Fatal(stderr)
	}
	sock, logPath := filepath.Join(dir, "m.sock"), filepath.Join(dir, "m.log")
	other := strconv.Itoa(os.Geteuid() + 4242)
	p, err := cluster.StartDaemon(ctx, 0, kordBin, "module0", logPath, "module", "--party", "0", "--socket", sock,
		"--state", filepath.Join(dir, "m.db"), "--secret-file", secret, "--party-uid", other)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Stop()
	c := socket.Dial(sock, 5*time.Second)
	defer c.Close()
	_, err = c.Poll(ctx, nil)
	if !errors.Is(err, socket.ErrRefused) || !strings.Contains(err.Error(), "--allow-same-uid") {
		t.Fatalf("same-uid host against --party-uid %s: %v; want ErrRefused", other, err)
	}
	p.Stop()
	logged, _ := os.ReadFile(logPath)
	if !strings.Contains(string(logged), `"peer_uid":`+strconv.Itoa(os.Geteuid())) || !strings.Contains(string(logged), "refused a connection") {
		t.Fatalf("module log does not record the refusal with the peer uid:\n%s", logged)
	}
	if st, err := os.Stat(filepath.Join(dir, "m.db")); err != nil || st.Mode().Perm() != 0o600 {
		t.Fatalf("state file: %v %v", st, err)
	}
}

// TestModulePairedWithoutSecret: once paired, the modules restart and
// serve with the provisioning secret file deleted (it is never read
// again), and keys still verify.
func TestModulePairedWithoutSecret(t *testing.T) {
	dir := t.TempDir()
	ctx, c := startCluster(t, dir, cluster.Options{Batch: 16})
	rng := mrand.New(mrand.NewPCG(3, 4))
	k := loadgen.Class{Mode: msg.Bound, Tier: msg.MAC, Type: fss.DPF, InBits: 16, OutBits: 16}
	stream := func(base uint64) {
		t.Helper()
		reqs, truth := loadgen.Requests(k, base, 40, rng)
		reps, _, err := loadgen.Stream(ctx, c.Apps(), reqs)
		if err != nil {
			t.Fatal(err)
		}
		for i, tr := range truth {
			if ok, bad := loadgen.Verify(k, tr, reps[0][i], reps[1][i], rng); ok != 1 || bad != 0 {
				t.Fatalf("request %d did not verify", i)
			}
		}
	}
	stream(1)
	if err := os.Remove(filepath.Join(dir, "secret")); err != nil {
		t.Fatal(err)
	}
	for b := 0; b < 2; b++ {
		c.KillModule(b)
		if err := c.StartModule(ctx, b); err != nil {
			t.Fatalf("module %d without its secret file: %v", b, err)
		}
	}
	stream(1000)
}

// TestBadPrefault: --prefault-heap outside 0..16384 MiB (from the flag or
// the environment) stops both daemons before they open anything, with one
// line that names the setting.
func TestBadPrefault(t *testing.T) {
	dir := t.TempDir()
	state := filepath.Join(dir, "m.db")
	mod := []string{"module", "--party", "0", "--socket", filepath.Join(dir, "m.sock"), "--state", state, "--allow-same-uid"}
	party := []string{"party", "--party", "1", "--module", filepath.Join(dir, "m.sock")}
	for _, args := range [][]string{
		append(slices.Clone(mod), "--prefault-heap", "-1"),
		append(slices.Clone(mod), "--prefault-heap", "16385"),
		append(slices.Clone(party), "--prefault-heap", "-5"),
	} {
		_, stderr, code := runKord(t, args...)
		if code != 2 || !strings.Contains(stderr, "--prefault-heap") || strings.Count(strings.TrimSpace(stderr), "\n") != 0 {
			t.Errorf("%v: exit %d, stderr %q; want exit 2 and one line naming --prefault-heap", args, code, stderr)
		}
		if _, err := os.Stat(state); !os.IsNotExist(err) {
			t.Fatalf("%v: the refused start left %s behind (%v)", args, state, err)
		}
	}
	t.Setenv("KORD_PREFAULT_HEAP", "-2")
	_, stderr, code := runKord(t, party...)
	if code != 2 || !strings.Contains(stderr, "--prefault-heap -2") {
		t.Errorf("KORD_PREFAULT_HEAP=-2: exit %d, stderr %q", code, stderr)
	}
}

// TestModuleSealKey: a state file whose pairing is sealed starts only
// with its seal key: without one, or with another, kord module exits 2
// naming --seal-key-file; with it the module serves, paired, and needs no
// provisioning secret. A seal key file others can read is refused.
func TestModuleSealKey(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	dir := t.TempDir()
	key, wrong := filepath.Join(dir, "seal"), filepath.Join(dir, "wrong")
	for _, f := range []string{key, wrong} {
		k := provision.New() // any 32 random bytes
		if err := os.WriteFile(f, k, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	raw, _ := os.ReadFile(key)
	state := filepath.Join(dir, "m.db")
	st, err := store.OpenBoltWith(state, store.BoltOptions{Window: 1, SealKey: raw})
	if err != nil {
		t.Fatal(err)
	}
	if err := st.SavePairing(store.Pairing{Party: 0, KEM: "mlkem768", Secret: provision.New()}); err != nil {
		t.Fatal(err)
	}
	st.Close()
	sock := filepath.Join(dir, "m.sock")
	base := []string{"module", "--party", "0", "--socket", sock, "--state", state, "--allow-same-uid"}
	for _, extra := range [][]string{nil, {"--seal-key-file", wrong}} {
		_, stderr, code := runKord(t, append(slices.Clone(base), extra...)...)
		if code != 2 || !strings.Contains(stderr, "--seal-key-file") {
			t.Errorf("%v: exit %d, %q; want exit 2 naming --seal-key-file", extra, code, stderr)
		}
	}
	os.Chmod(wrong, 0o640)
	if _, stderr, code := runKord(t, append(slices.Clone(base), "--seal-key-file", wrong)...); code != 2 || !strings.Contains(stderr, "chmod 600") {
		t.Errorf("group-readable seal key: exit %d, %q", code, stderr)
	}
	p, err := cluster.StartDaemon(ctx, 0, kordBin, "module0", filepath.Join(dir, "m.log"), append(slices.Clone(base), "--seal-key-file", key)...)
	if err != nil {
		t.Fatalf("with its seal key: %v", err)
	}
	defer p.Stop()
	c := socket.Dial(sock, 5*time.Second)
	defer c.Close()
	if r, err := c.Poll(ctx, nil); err != nil || !r.Paired {
		t.Fatalf("sealed module: %+v %v; want paired", r, err)
	}
}
