package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/kord-fss/kord/cmd/kord/internal/chaos"
	"github.com/kord-fss/kord/cmd/kord/internal/cluster"
	"github.com/kord-fss/kord/cmd/kord/internal/demo"
)

func chaosJSON(t *testing.T, args ...string) chaos.Report {
	t.Helper()
	out, errOut, code := runKord(t, append([]string{"chaos"}, append(args, "--json")...)...)
	var rep chaos.Report
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("kord chaos %v: exit %d, %v\nstdout: %s\nstderr: %s", args, code, err, out, errOut)
	}
	if code != 0 || !rep.OK {
		t.Fatalf("kord chaos %v: exit %d, problems %v\n%s", args, code, rep.Problems, errOut)
	}
	return rep
}

// TestChaosCrash kill -9s a module or a party 20 times at random points
// of a stream: no pair mismatched, no share orphaned (the application at a
// killed party's site resends its unanswered ids), and a recovery time is
// reported for every daemon killed (a figure, not a threshold); no
// rollback alarm, since no state file was restored.
func TestChaosCrash(t *testing.T) {
	rep := chaosJSON(t, "crash", "--trials", "20")
	if rep.PairsMismatched != 0 || rep.CounterRollbacks != 0 || rep.PositionsReused != [2]int{} || rep.PairsVerified == 0 ||
		rep.OrphanedShares != 0 || rep.RollbacksDetected != 0 {
		t.Fatalf("crash: %+v", rep)
	}
	for d, n := range rep.Kills {
		if n > 0 && rep.RecoveryMs[d].N == 0 {
			t.Errorf("crash: %s killed %d times, no recovery time reported", d, n)
		}
	}
	if rep.Resyncs < 20 {
		t.Fatalf("crash: %d resyncs for 20 restarts", rep.Resyncs)
	}
}

// TestChaosRollback restores a module's state file from an older copy.
func TestChaosRollback(t *testing.T) {
	rep := chaosJSON(t, "rollback")
	if rep.RollbacksDetected == 0 || rep.PositionsReused != [2]int{} || rep.PairsMismatched != 0 {
		t.Fatalf("rollback: %+v", rep)
	}
}

// TestChaosNetwork runs the stream through the fault proxy.
func TestChaosNetwork(t *testing.T) {
	rep := chaosJSON(t, "network", "--duration", "3s")
	if rep.PairsMismatched != 0 || rep.PositionsReused != [2]int{} {
		t.Fatalf("network: %+v", rep)
	}
}

// TestDemoProcesses runs `kord demo` (multi-process) and checks the report.
func TestDemoProcesses(t *testing.T) {
	out, errOut, code := runKord(t, "demo", "--keys", "1600", "--json")
	if code != 0 {
		t.Fatalf("kord demo: exit %d\n%s", code, errOut)
	}
	var rep demo.ProcessReport
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatal(err)
	}
	if rep.Processes < 4 || rep.PairsFailed != 0 || rep.PairsVerified < 1600 || rep.KeysPerSec <= 0 || rep.InProcessKeysPerSec <= 0 {
		t.Fatalf("demo: %+v", rep)
	}
	if rep.PeerLink != "mutual TLS 1.3" || rep.AppLink != cluster.AppLinkName("unix") {
		t.Errorf("demo: peer link %q, application API %q, want mutual TLS 1.3 and %q by default", rep.PeerLink, rep.AppLink, cluster.AppLinkName("unix"))
	}
	if rep.CPUs != runtime.NumCPU() {
		t.Errorf("demo reports %d CPUs, this machine has %d", rep.CPUs, runtime.NumCPU())
	}
	// ⌈ℓ/8⌉+⌈n/8⌉ for the keystream, +36 per key for mac, +36/M per key for
	// batched mac, 0 for derived; counted from the frames that crossed.
	for k, want := range map[string]float64{"dpf-16-otp": 4, "dpf-16-mac": 40, "dcf-32-otp": 8, "dcf-32-mac": 44, "dpf-32-derived": 0, "dcf-16-derived": 0} {
		if got := rep.WireBytesPerPartyPerKey[k]; got != want {
			t.Errorf("%s: %v bytes per party per key, want %v", k, got, want)
		}
	}
	if got := rep.WireBytesPerPartyPerKey["dpf-16-batchmac"]; got <= 4 || got > 4+36 {
		t.Errorf("dpf-16-batchmac: %v bytes per party per key", got)
	}

	// --peer-plaintext, given explicitly, runs the parties without TLS.
	out, errOut, code = runKord(t, "demo", "--keys", "320", "--json", "--peer-plaintext")
	if code != 0 {
		t.Fatalf("kord demo --peer-plaintext: exit %d\n%s", code, errOut)
	}
	rep = demo.ProcessReport{}
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatal(err)
	}
	if rep.PeerLink != "plaintext" || rep.PairsFailed != 0 || rep.PairsVerified < 320 {
		t.Fatalf("demo --peer-plaintext: peer link %q, %d pairs verified, %d failed", rep.PeerLink, rep.PairsVerified, rep.PairsFailed)
	}
}

func TestServicesHelpAndBadInput(t *testing.T) {
	for _, c := range []string{"module", "party", "pair", "chaos", "demo", "certs"} {
		if _, errOut, code := runKord(t, c, "--help"); code != 0 {
			t.Errorf("kord %s --help: exit %d %s", c, code, errOut)
		}
	}
	dir := t.TempDir()
	state := filepath.Join(dir, "m.db")
	if err := os.WriteFile(state, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	secret := filepath.Join(dir, "secret")
	runKord(t, "secret", "new", "--out", secret)
	_, errOut, code := runKord(t, "module", "--party", "0", "--socket", filepath.Join(dir, "s"), "--state", state, "--secret-file", secret, "--allow-same-uid")
	if code != 2 || !strings.Contains(errOut, "0600") {
		t.Errorf("module with a world-readable state file: exit %d, %s", code, errOut)
	}
	os.Chmod(secret, 0o644)
	_, errOut, code = runKord(t, "module", "--party", "0", "--socket", filepath.Join(dir, "s"), "--state", filepath.Join(dir, "n.db"), "--secret-file", secret, "--allow-same-uid")
	if code != 2 || !strings.Contains(errOut, "chmod 600") {
		t.Errorf("module with a world-readable secret: exit %d, %s", code, errOut)
	}
	for _, args := range [][]string{
		{"module", "--party", "2", "--socket", "x", "--state", "y"},
		{"party", "--party", "0", "--module", "x"},
		{"party", "--party", "1", "--module", "x", "--batch", "0", "--peer-listen", "127.0.0.1:0"},
		{"pair"},
		{"chaos", "nothing"},
		{"certs"},
		{"certs", "--dir", dir, "--valid", "1m"},
		{"demo", "--in-process", "--peer-plaintext"},
	} {
		if _, errOut, code := runKord(t, args...); code != 2 {
			t.Errorf("kord %v: exit %d, want 2 (%s)", args, code, errOut)
		}
	}
}
