package main

import (
	mrand "math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/kord-fss/kord/cmd/kord/internal/cluster"
	"github.com/kord-fss/kord/cmd/kord/internal/loadgen"
	"github.com/kord-fss/kord/fss"
	"github.com/kord-fss/kord/module/msg"
	"github.com/kord-fss/kord/service"
)

// TestPartyModuleInProcess starts a party pair whose modules run inside
// the party processes (kord party --module in-process), pairs them through
// the parties and checks keys of every tier and derived mode by evaluation.
func TestPartyModuleInProcess(t *testing.T) {
	dir := t.TempDir()
	ctx, c := startCluster(t, dir, cluster.Options{Batch: 16, InProcessModules: true})
	if c.Started() != 2 || c.Module(0) != nil || c.Module(1) != nil {
		t.Fatalf("%d processes started, modules %v %v: want the two parties only", c.Started(), c.Module(0), c.Module(1))
	}
	rng := mrand.New(mrand.NewPCG(5, 6))
	base := uint64(1)
	for _, k := range []loadgen.Class{
		{Mode: msg.Bound, Tier: msg.Keystream, Type: fss.DPF, InBits: 16, OutBits: 16},
		{Mode: msg.Bound, Tier: msg.MAC, Type: fss.DCF, InBits: 32, OutBits: 32},
		{Mode: msg.Bound, Tier: msg.BatchMAC, Type: fss.DPF, InBits: 32, OutBits: 32},
		{Mode: msg.Derived, Type: fss.DCF, InBits: 16, OutBits: 16},
	} {
		reqs, truth := loadgen.Requests(k, base, 40, rng)
		base += uint64(len(reqs[0]))
		reps, _, err := loadgen.Stream(ctx, c.Apps(), reqs)
		if err != nil {
			t.Fatalf("%s: %v", k.Name(), err)
		}
		verified := 0
		for i, tr := range truth {
			ok, bad := loadgen.Verify(k, tr, reps[0][i], reps[1][i], rng)
			if bad != 0 {
				t.Fatalf("%s: request %d: %d pairs failed", k.Name(), i, bad)
			}
			verified += ok
		}
		if verified != 40 {
			t.Fatalf("%s: %d pairs verified, want 40", k.Name(), verified)
		}
	}
	for b := 0; b < 2; b++ {
		if st, err := os.Stat(c.StatePath(b)); err != nil || st.Mode().Perm() != 0o600 {
			t.Fatalf("party %d's module state file: %v %v", b, st, err)
		}
	}
}

// TestPartyModuleFlags: the module flags go only with --module in-process,
// which needs --state.
func TestPartyModuleFlags(t *testing.T) {
	dir := t.TempDir()
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--module", filepath.Join(dir, "m.sock"), "--state", filepath.Join(dir, "m.db")}, "--state is for --module in-process"},
		{[]string{"--module", filepath.Join(dir, "m.sock"), "--kem", "mlkem768"}, "--kem is for --module in-process"},
		{[]string{"--module", "in-process"}, "needs --state"},
		{[]string{"--module", "in-process", "--state", filepath.Join(dir, "m.db"), "--kem", "nope"}, "--kem"},
	} {
		args := append([]string{"party", "--party", "1", "--peer-listen", "127.0.0.1:0", "--listen", "127.0.0.1:0", "--peer-plaintext"}, c.args...)
		_, errOut, code := runKord(t, args...)
		if code != 2 || !strings.Contains(errOut, c.want) {
			t.Errorf("kord %v: exit %d, want 2 and %q: %s", args, code, c.want, errOut)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "m.db")); err == nil {
		t.Errorf("a refused start left a state file")
	}
}

// TestPartyBatchDefault: kord party without --batch batches up to
// service.DefaultBatchSameHost keys when its application API is a Unix
// socket and service.DefaultBatch otherwise; its readiness record says
// which.
func TestPartyBatchDefault(t *testing.T) {
	for _, unix := range []bool{true, false} {
		_, c := startCluster(t, t.TempDir(), cluster.Options{InProcessModules: true, AppUnix: unix})
		want := strconv.Itoa(service.DefaultBatchFor(unix))
		for b := range 2 {
			if got := c.Party(b).Ready["batch"]; got != want {
				t.Errorf("application API on a Unix socket %v: party %d is ready with batch %q, want %s", unix, b, got, want)
			}
		}
	}
}
