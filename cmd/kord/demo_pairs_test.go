package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kord-fss/kord/cmd/kord/internal/cluster"
	"github.com/kord-fss/kord/cmd/kord/internal/demo"
	"github.com/kord-fss/kord/module/socket"
)

// TestDemoPairs runs `kord demo --pairs 1,2 --json`: each run delivers
// every key pair asked for, verified, spread over all its pairs, nothing
// lost or one-sided; on Linux the pools are on the parties' Unix sockets
// and take whole slabs as memfds (the default --app-link unix); the PNG is
// drawn.
func TestDemoPairs(t *testing.T) {
	png := filepath.Join(t.TempDir(), "pairs.png")
	out, errOut, code := runKord(t, "demo", "--pairs", "1,2", "--keys", "3000", "--batch", "128", "--json", "--png", png)
	if code != 0 {
		t.Fatalf("kord demo --pairs: exit %d\n%s", code, errOut)
	}
	var sw demo.PairsSweep
	if err := json.Unmarshal([]byte(out), &sw); err != nil {
		t.Fatal(err)
	}
	if len(sw.Runs) != 2 {
		t.Fatalf("%d runs, want 2", len(sw.Runs))
	}
	for i, r := range sw.Runs {
		if r.Pairs != i+1 || r.PairsVerified != 3000 || r.PairsFailed != 0 || r.Lost != 0 || r.OneSided != 0 || len(r.PerPair) != r.Pairs || r.Processes != 4*r.Pairs {
			t.Fatalf("run %d: %+v", i, r)
		}
		sum := 0
		for _, p := range r.PerPair {
			if p.Keys == 0 || !(p.KeysPerBatch >= 1) {
				t.Fatalf("%d pairs: pair %d delivered %d keys, %v per batch", r.Pairs, p.Pair, p.Keys, p.KeysPerBatch)
			}
			sum += p.Keys
		}
		if sum != r.PairsVerified || !(r.KeysPerSec > 0) {
			t.Fatalf("%d pairs: per-pair keys add to %d of %d, %v keys/s", r.Pairs, sum, r.PairsVerified, r.KeysPerSec)
		}
		if socket.SlabFDSupported && (r.AppLink != cluster.AppLinkName("unix") || r.SlabsHanded == 0) {
			t.Fatalf("%d pairs: application link %q, %d messages handed on as memfds", r.Pairs, r.AppLink, r.SlabsHanded)
		}
	}
	if st, err := os.Stat(png); err != nil || st.Size() == 0 {
		t.Fatalf("png: %v", err)
	}
}

// TestDemoPairsFault: pair 0's module is killed mid-stream (each site's
// in turn); the pool carries on with pair 1 and every key pair asked for
// is delivered and verified, what pair 0 left unanswered asked again with
// a fresh α, nothing delivered at one site only.
func TestDemoPairsFault(t *testing.T) {
	for _, fault := range demo.Faults {
		// --stall is how long a pair may go without a reply before the
		// pool gives up on it: on a loaded machine a healthy pair can
		// take a second over a batch, so the bound leaves it 5 s.
		out, errOut, code := runKord(t, "demo", "--pairs", "2", "--keys", "6000", "--batch", "128", "--fault", fault, "--stall", "5s", "--json")
		if code != 0 {
			t.Fatalf("kord demo --fault %s: exit %d\n%s", fault, code, errOut)
		}
		var sw demo.PairsSweep
		if err := json.Unmarshal([]byte(out), &sw); err != nil {
			t.Fatal(err)
		}
		r := sw.Runs[0]
		if r.Fault != fault || r.PairsVerified != 6000 || r.PairsFailed != 0 || r.Lost != 0 || r.OneSided != 0 || r.FaultAtKeys != 2000 {
			t.Fatalf("fault %s: %+v", fault, r)
		}
		if r.PerPair[1].Keys < r.KeysAfterFault-r.FaultPairAfter || r.PerPair[0].Down == "" {
			t.Fatalf("fault %s: pair 1 carried %d keys, %d came after the kill (%d by pair 0); pair 0 down: %q", fault, r.PerPair[1].Keys, r.KeysAfterFault, r.FaultPairAfter, r.PerPair[0].Down)
		}
	}
}

// TestDemoPairsFlags: the pair-group flags are checked before anything starts.
func TestDemoPairsFlags(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--pairs", "0"}, "--pairs 0 is outside"},
		{[]string{"--pairs", "2", "--in-process"}, "leave out --in-process"},
		{[]string{"--pairs", "1", "--fault", "module0"}, "at least 2"},
		{[]string{"--pairs", "2", "--fault", "party0"}, `--fault "party0"`},
		{[]string{"--fault", "module0"}, "give --pairs K"},
		{[]string{"--pairs", "2", "--stall", "0s"}, "--stall"},
	} {
		_, errOut, code := runKord(t, append([]string{"demo"}, c.args...)...)
		if code != 2 || !strings.Contains(errOut, c.want) {
			t.Errorf("demo %v: exit %d: %s (want %q)", c.args, code, errOut, c.want)
		}
	}
}
