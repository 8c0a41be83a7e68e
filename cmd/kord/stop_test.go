package main

import (
	"context"
	mrand "math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/kord-fss/kord/cmd/kord/internal/cluster"
	"github.com/kord-fss/kord/cmd/kord/internal/loadgen"
	"github.com/kord-fss/kord/fss"
	"github.com/kord-fss/kord/internal/peertls"
	"github.com/kord-fss/kord/module/msg"
)

// stopGrace is what an operator (or a chart's termination grace period)
// gives a daemon between SIGTERM and SIGKILL.
const stopGrace = 10 * time.Second

// TestDaemonsStopOnSIGTERM: on a paired cluster whose parties hold open
// connections to their modules and to each other (a stream of verified
// keys has just run), a second module on a running module's state file is
// refused at once, saying another process holds it; one on its socket is
// refused and leaves no state file; a party given the other site's module
// is refused at start; and then each module and each party exits 0 within
// stopGrace of SIGTERM with its peers still connected.
func TestDaemonsStopOnSIGTERM(t *testing.T) {
	dir := t.TempDir()
	ctx, c := startCluster(t, dir, cluster.Options{Batch: 16})
	k := loadgen.Class{Mode: msg.Bound, Tier: msg.Keystream, Type: fss.DPF, InBits: 16, OutBits: 16}
	rng := mrand.New(mrand.NewPCG(3, 5))
	reqs, truth := loadgen.Requests(k, 1, 64, rng)
	reps, _, err := loadgen.Stream(ctx, c.Apps(), reqs)
	if err != nil {
		t.Fatal(err)
	}
	for i, tr := range truth {
		if ok, _ := loadgen.Verify(k, tr, reps[0][i], reps[1][i], rng); ok != 1 {
			t.Fatalf("request %d did not verify", i)
		}
	}
	secret := filepath.Join(dir, "secret")

	// The same state file, another socket: refused at once.
	t0 := time.Now()
	_, stderr, code := runKord(t, "module", "--party", "0", "--socket", filepath.Join(dir, "other.sock"), "--state", c.StatePath(0),
		"--secret-file", secret, "--allow-same-uid")
	if code == 0 || !strings.Contains(stderr, "locked by another process") {
		t.Errorf("a second module on m0.db: exit %d, %q; want a refusal saying another process holds it", code, stderr)
	}
	if took := time.Since(t0); took > stopGrace {
		t.Errorf("the refusal took %v", took)
	}
	if _, err := os.Lstat(filepath.Join(dir, "other.sock")); err == nil {
		t.Error("the refused module left its socket")
	}
	// The same socket, a fresh state file: refused, and no state file made.
	fresh := filepath.Join(dir, "fresh.db")
	_, stderr, code = runKord(t, "module", "--party", "0", "--socket", c.SocketPath(0), "--state", fresh, "--secret-file", secret, "--allow-same-uid")
	if code != 2 || !strings.Contains(stderr, "in use") {
		t.Errorf("a second module on m0.sock: exit %d, %q", code, stderr)
	}
	if _, err := os.Lstat(fresh); err == nil {
		t.Error("a module refused for its socket left a new state file")
	}
	// Party 1 given site 0's module: refused before it says ready.
	_, stderr, code = runKord(t, "party", "--party", "1", "--module", c.SocketPath(0), "--listen", "127.0.0.1:0",
		"--peer-listen", "127.0.0.1:0", "--peer-plaintext")
	if code != 2 || !strings.Contains(stderr, "is party 0") {
		t.Errorf("party 1 on module 0: exit %d, %q", code, stderr)
	}

	for _, d := range []*cluster.Daemon{c.Module(0), c.Party(0), c.Party(1), c.Module(1)} {
		took, code, ok := d.Terminate(stopGrace)
		if !ok {
			t.Errorf("%s still ran %v after SIGTERM (its log: %s)", d.Name, took, c.Log(d.Name))
			continue
		}
		if code != 0 {
			t.Errorf("%s exited %d after SIGTERM", d.Name, code)
		}
		t.Logf("%s stopped %v after SIGTERM", d.Name, took)
	}
}

// TestDaemonStartChecks: mis-wiring that a daemon can see for itself is
// refused before it says ready, with the fix in the message: a module or
// party without --party, a party given the other party's certificate; and
// a party 0 whose module is not paired yet says once, not once a second,
// that it waits for pairing.
func TestDaemonStartChecks(t *testing.T) {
	dir := t.TempDir()
	tdir := filepath.Join(dir, "tls")
	if err := peertls.Init(tdir, 0); err != nil {
		t.Fatal(err)
	}
	secret := filepath.Join(dir, "secret")
	if _, stderr, code := runKord(t, "secret", "new", "--out", secret); code != 0 {
		t.Fatal(stderr)
	}
	modArgs := func(b string) []string {
		return []string{"module", "--party", b, "--socket", filepath.Join(dir, "m"+b+".sock"), "--state", filepath.Join(dir, "m"+b+".db"),
			"--secret-file", secret, "--allow-same-uid"}
	}
	for _, c := range []struct {
		name string
		args []string
		want []string
	}{
		{"module without --party", append([]string{"module"}, modArgs("0")[3:]...), []string{"--party is required"}},
		{"party without --party", []string{"party", "--module", "x", "--peer-listen", "127.0.0.1:0", "--peer-plaintext"}, []string{"--party is required"}},
		{"party 1 with party 0's certificate", append([]string{"party", "--party", "1", "--module", filepath.Join(dir, "none.sock"), "--listen", "127.0.0.1:0",
			"--peer-listen", "127.0.0.1:0"}, tlsArgs(peertls.PartyFiles(tdir, 0))...), []string{"kord-party-1", "party1.crt", "--tls-name"}},
	} {
		_, stderr, code := runKord(t, c.args...)
		if code != 2 {
			t.Errorf("%s: exit %d, want 2 (%s)", c.name, code, stderr)
		}
		for _, w := range c.want {
			if !strings.Contains(stderr, w) {
				t.Errorf("%s: %q does not say %q", c.name, stderr, w)
			}
		}
	}
	if _, err := os.Lstat(filepath.Join(dir, "m0.db")); err == nil {
		t.Error("a refused module made a state file")
	}

	// Unpaired modules and parties, up for a few seconds: party 0 says
	// once that it waits for pairing.
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var ds []*cluster.Daemon
	defer func() {
		for _, d := range ds {
			d.Stop()
		}
	}()
	start := func(site int, name string, args ...string) *cluster.Daemon {
		d, err := cluster.StartDaemon(ctx, site, kordBin, name, filepath.Join(dir, name+".log"), args...)
		if err != nil {
			t.Fatal(err)
		}
		ds = append(ds, d)
		return d
	}
	start(0, "module0", modArgs("0")...)
	start(1, "module1", modArgs("1")...)
	p1 := start(1, "party1", append([]string{"party", "--party", "1", "--module", filepath.Join(dir, "m1.sock"), "--listen", "127.0.0.1:0",
		"--peer-listen", "127.0.0.1:0"}, tlsArgs(peertls.PartyFiles(tdir, 1))...)...)
	start(0, "party0", append([]string{"party", "--party", "0", "--module", filepath.Join(dir, "m0.sock"), "--listen", "127.0.0.1:0",
		"--peer", p1.Ready["peer"]}, tlsArgs(peertls.PartyFiles(tdir, 0))...)...)
	// The first try's message, however slow the machine; then each
	// failed session is retried within a second (backoff up to 1 s), so
	// 3 s more are several tries.
	logPath := filepath.Join(dir, "party0.log")
	for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		if log, _ := os.ReadFile(logPath); strings.Contains(string(log), "waiting for pairing") {
			break
		}
	}
	time.Sleep(3 * time.Second)
	log, _ := os.ReadFile(logPath)
	if n := strings.Count(string(log), "waiting for pairing"); n != 1 {
		t.Errorf("party 0 said %d times that it waits for pairing, want once:\n%s", n, log)
	}
	if strings.Contains(string(log), "resynchronising") {
		t.Errorf("party 0 warns while it waits for pairing:\n%s", log)
	}
}
